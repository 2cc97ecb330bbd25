"""Slots for the partitions of a stream plan: runs of consecutive slots, the slot sets a new
partition could take for a pipeline, and the DDR budget every stream shares
(runtime/sched/board/stream_plan.py places pipelines with them)."""

from __future__ import annotations

from fpgashare.catalogue.fused_fit import match_footprints
from fpgashare.catalogue.passes import match_slots
from fpgashare.catalogue.platform import Platform
from fpgashare.catalogue.workload import PipelineSpec
from fpgashare.sched.analysis.residency import slot_compatibility
from fpgashare.sched.analysis.schedulability import DDR_FABRIC_SHARE, ddr_budget


def ddr_refusal(platform: Platform, bytes_per_s: float) -> str | None:
    """Why frames of every stream moving ``bytes_per_s`` to and from DDR are too many for
    ``platform`` (None if they fit its budget, ``analysis.ddr_budget``)."""
    budget = ddr_budget(platform)
    if bytes_per_s <= budget:
        return None
    return (f"the frames of every stream would move {bytes_per_s / 1e6:.0f} MB/s to and from DDR, more than "
            f"the {budget / 1e6:.0f} MB/s {platform.name} gives the fabric ({DDR_FABRIC_SHARE:.0%} of "
            "platform.ddr_bytes_per_s, the DDR's peak)")


def consecutive_runs(slots: list[int], count: int) -> list[tuple[int, ...]]:
    """``slots`` in ``count`` runs of consecutive ones, as even as they go (the first ones larger)."""
    size, extra = divmod(len(slots), count)
    out, at = [], 0
    for k in range(count):
        n = size + (k < extra)
        out.append(tuple(slots[at:at + n]))
        at += n
    return out


def new_slots(p: PipelineSpec, platform: Platform, free: list[int]) -> list[tuple[int, ...]]:
    """Slot sets for a new partition holding ``p``, best first: every copy its chain uses pinned,
    else each of its passes in turn (the partition then swaps modules)."""
    ok = slot_compatibility(platform)
    copies = [m for m, n in sorted(p.module_counts.items()) for _ in range(n)]
    out = []

    def place(modules: list[str]) -> tuple[int, ...] | None:
        if not platform.fused:
            placed = match_slots(modules, free, ok)
            return None if placed is None else tuple(sorted(placed))
        # a module of a fused region takes every member: the partition holds its whole footprint
        placed = match_footprints(modules, free, ok, platform)
        return None if placed is None else tuple(sorted(i for s, m in placed.items() for i in platform.footprint(s, m)))

    whole = place(copies)
    if whole is not None:
        out.append(whole)
    for stages in sorted(p.pass_modules, key=len, reverse=True):
        placed = place(list(stages))
        if placed is not None and placed not in out:
            out.append(placed)
    return out

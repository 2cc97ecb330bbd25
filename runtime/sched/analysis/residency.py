"""Residency plans: which modules stay pinned in which slots for good, and what each pipeline's
frame must still load beside them (the ``n_i`` of the admission test, schedulability.py). A plan
exists only if the pinned copies fit compatible slots and every pass of every chain fits the
slots left beside them (fused regions: every placement of the pins is tried, up to a bound)."""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from fpgashare.catalogue.fused_fit import match_footprints, placements, slots_left
from fpgashare.catalogue.passes import match_slots
from fpgashare.catalogue.platform import Platform
from fpgashare.catalogue.workload import PipelineSpec


@dataclass(frozen=True)
class ResidencyPlan:
    pinned: dict[int, str]              #: slot -> module
    loads: dict[str, int]               #: pipeline -> loads one frame needs at most (unpinned stages)


def unpinned_stages(p: PipelineSpec, pinned: Counter[str]) -> list[list[str]]:
    """Per pass of ``p`` (runtime/catalogue/passes.py; one pass when the chain fits), the stages' modules the
    pinned copies do not cover (a pass using a module twice needs two copies)."""
    out = []
    for counts in p.pass_module_counts:
        rest = []
        for module, count in counts.items():
            rest += [module] * max(0, count - pinned[module])
        out.append(rest)
    return out


def unpinned_loads(p: PipelineSpec, pinned: Counter[str]) -> int:
    """Loads one frame of ``p`` needs with ``pinned`` (module -> copies) resident for good."""
    return sum(len(rest) for rest in unpinned_stages(p, pinned))


_COMPATIBLE: dict[int, object] = {}


def slot_compatibility(platform: Platform):
    """``ok(slot, module)``: whether the slot's partition has a partial of the module (cached)."""
    key = id(platform)
    if key not in _COMPATIBLE or _COMPATIBLE[key][0] is not platform:
        table = {(s.index, m): s.name in platform.module(m).slots for s in platform.slots for m in platform.modules}
        _COMPATIBLE[key] = (platform, lambda slot, module: table.get((slot, module), False))
    return _COMPATIBLE[key][1]


def residency(pipelines: Sequence[PipelineSpec], platform: Platform, pins: Counter[str],
              fixed: dict[int, str] | None = None) -> ResidencyPlan | str:
    """The plan that pins ``pins`` (module -> copies), or why it cannot work: the pinned copies
    must fit compatible slots (``fixed``: pins already in their slots, kept there), and every
    pipeline's unpinned stages must fit the slots left."""
    fixed = fixed or {}
    slots = [s.index for s in platform.slots if s.index not in fixed]
    ok = slot_compatibility(platform)

    wanted = [m for m, n in sorted((pins - Counter(fixed.values())).items()) for _ in range(n)]
    # A module of a fused region takes every member: placements keep footprints disjoint, and the
    # pool beside the pins is what no pin's footprint covers (runtime/catalogue/fused_fit.py).
    if not platform.fused:
        placed = match_slots(wanted, slots, ok)
        if placed is None:
            return f"{', '.join(wanted)} cannot all stay resident in compatible slots"
        return _plan_beside({**fixed, **placed}, pipelines, platform, pins, wanted, match_slots)
    # With fused regions where a pin sits decides what fits beside it: try the placements in turn.
    fit = lambda mods, pool, ok: match_footprints(mods, pool, ok, platform)  # noqa: E731
    why = f"{', '.join(wanted)} cannot all stay resident in compatible slots"
    for placed in itertools.islice(placements(wanted, slots_left(platform, fixed), ok, platform), MAX_PLACEMENTS):
        plan = _plan_beside({**fixed, **placed}, pipelines, platform, pins, wanted, fit)
        if not isinstance(plan, str):
            return plan
        why = plan
    return why


#: Pin placements a residency plan tries on a platform with fused regions before giving up.
MAX_PLACEMENTS = 64


def _plan_beside(pinned: dict[int, str], pipelines: Sequence[PipelineSpec], platform: Platform, pins: Counter[str],
                 wanted: list[str], fit) -> ResidencyPlan | str:
    """The plan with ``pinned`` in place, or why some chain's other stages do not fit beside it."""
    ok = slot_compatibility(platform)
    pool = slots_left(platform, pinned)
    loads = {}
    for p in pipelines:
        passes = unpinned_stages(p, pins)
        for rest in passes:
            if fit(rest, pool, ok) is None:
                return (f"{p.name}'s stages {', '.join(rest)} do not fit the {len(pool)} slot(s) left "
                        f"beside the pinned {', '.join(wanted) or 'nothing'}")
        loads[p.name] = sum(len(rest) for rest in passes)      # every pass loads what is not pinned
    return ResidencyPlan(pinned, loads)

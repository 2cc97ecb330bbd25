"""Chains longer than the fabric: a frame runs as several passes through memory.

A pass streams the frame (or the previous pass's output, parked in a DDR buffer) through as many
consecutive stages as the slots can hold at once, and writes its output back to memory; the next
pass runs once the port has loaded its stages. The split is fixed per pipeline and platform:

1. the fewest passes (each pass's modules must fit distinct compatible slots);
2. then the fewest modules a pass needs that the pass before it did not use (a module both use
   can stay in its slot, reprogrammed by registers: less port time per frame);
3. then the shortest longest pass (a pass is one non-preemptible job on the stream).

Each pass is timed like any chain (``vision_timing.chain_cycles`` on its input size: the memory
round trip is its DMA read and write, which that model already bounds).
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations, pairwise

from fpgashare.catalogue.fused_fit import match_footprints
from fpgashare.catalogue.modules import Stage
from fpgashare.catalogue.platform import Platform
from fpgashare.catalogue.vision_timing import chain_cycles
from fpgashare.errors import FpgashareError


def match_slots(modules: Sequence[str], slots: Sequence[int], ok) -> dict[int, str] | None:
    """Assign each module a distinct slot with ``ok(slot, module)`` (augmenting paths), or None."""
    owner: dict[int, int] = {}

    def place(i: int, seen: set[int]) -> bool:
        for s in slots:
            if s in seen or not ok(s, modules[i]):
                continue
            seen.add(s)
            if s not in owner or place(owner[s], seen):
                owner[s] = i
                return True
        return False

    for i in range(len(modules)):
        if not place(i, set()):
            return None
    return {s: modules[i] for s, i in owner.items()}


def fits(modules: Sequence[str], platform: Platform) -> bool:
    """Whether ``modules`` can sit in distinct slots at once (each in a slot it has a partial for,
    their footprints disjoint where a module spans a fused region)."""
    slots = {s.index: s.name for s in platform.slots}
    homes = {m: set(platform.module(m).slots) for m in set(modules)}
    if platform.fused:      # a module of a fused region takes every member (runtime/catalogue/fused_fit.py)
        return match_footprints(modules, list(slots), lambda s, m: slots[s] in homes[m], platform) is not None
    return match_slots(modules, list(slots), lambda s, m: slots[s] in homes[m]) is not None


def pass_inputs(stages: Sequence[Stage], counts: Sequence[int], rows: int, cols: int) -> list[tuple[int, int]]:
    """The frame size (rows, cols) each pass reads."""
    sizes, k = [], 0
    for count in counts:
        sizes.append((rows, cols))
        for stage in stages[k:k + count]:
            rows, cols = stage.kind.output_shape(rows, cols)
        k += count
    return sizes


def pass_seconds(stages: Sequence[Stage], counts: Sequence[int], rows: int, cols: int,
                 platform: Platform) -> tuple[float, ...]:
    """Each pass's stream time at the fabric clock."""
    out, k = [], 0
    for count, (h, w) in zip(counts, pass_inputs(stages, counts, rows, cols), strict=True):
        out.append(chain_cycles(stages[k:k + count], h, w, platform.pixels_per_clock) / platform.fabric_clock_hz)
        k += count
    return tuple(out)


def split_chain(stages: Sequence[Stage], rows: int, cols: int, platform: Platform) -> tuple[int, ...]:
    """Stage counts per pass for ``stages`` on ``platform`` (one pass when the chain fits)."""
    modules = [s.kind.name for s in stages]
    n = len(modules)
    if n == 0:
        raise FpgashareError("a chain needs at least one stage")
    if fits(modules, platform):
        return (n,)
    for passes in range(2, n + 1):
        best: tuple | None = None
        for cuts in combinations(range(1, n), passes - 1):
            bounds = (0, *cuts, n)
            parts = [modules[a:b] for a, b in pairwise(bounds)]
            if not all(fits(part, platform) for part in parts):
                continue
            counts = tuple(b - a for a, b in pairwise(bounds))
            new = sum(len(set(part) - set(prev)) for prev, part in pairwise([[], *parts]))
            longest = max(pass_seconds(stages, counts, rows, cols, platform))
            key = (new, longest, counts)
            if best is None or key < best:
                best = key
        if best is not None:
            return best[2]
    missing = next(m for m in modules if not fits([m], platform))
    raise FpgashareError(f"{platform.name} has no slot for {missing}")

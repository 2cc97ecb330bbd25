"""Placing several modules at once when some occupy a fused region (runtime/catalogue/fused_regions.py).

Without fused regions a set of modules fits the fabric at once when each gets a distinct compatible
slot (a bipartite matching, ``passes.match_slots``). A module placed on a region's host occupies
every member, so a placement must keep the modules' *footprints* disjoint; :func:`match_footprints`
searches for one (backtracking over at most 8 slots, the widest footprints first); callers keep the
matching where the platform has no fused region. Every check that asks "can these run at
once" (the passes of a chain, the residency plan and the slots left beside pins) goes through it,
so the analysis counts a fused region as the one resource it is.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

from fpgashare.catalogue.platform import Platform


def match_footprints(modules: Sequence, slots: Sequence[int], ok: Callable, platform: Platform,
                     name: Callable = lambda m: m) -> dict[int, object] | None:
    """Slot -> module with every module on a slot ``ok(slot, module)`` and the footprints (of
    ``name(module)``) disjoint and inside ``slots``, or None when there is none."""
    return next(placements(modules, slots, ok, platform, name), None)


def placements(modules: Sequence, slots: Sequence[int], ok: Callable, platform: Platform,
               name: Callable = lambda m: m) -> Iterator[dict[int, object]]:
    """Every placement ``match_footprints`` accepts (the residency plan tries pins' placements
    until the slots left fit every chain: with fused regions, where a pin sits matters)."""
    free = set(slots)
    homes = []
    # Slots outside every fused region first: a one-slot module placed there leaves a region whole.
    in_region = {i for f in platform.fused for i in f.slots}
    slots = sorted(slots, key=lambda s: (s in in_region, s))
    for m in modules:
        options = [(s, platform.footprint(s, name(m))) for s in slots if ok(s, m)]
        homes.append([(s, set(fp)) for s, fp in options if set(fp) <= free])
    order = sorted(range(len(modules)), key=lambda i: (-max((len(fp) for _, fp in homes[i]), default=0),
                                                       len(homes[i])))
    placed: dict[int, object] = {}

    def place(k: int, used: set[int]) -> Iterator[dict[int, object]]:
        if k == len(order):
            yield dict(placed)
            return
        i = order[k]
        for s, fp in homes[i]:
            if used.isdisjoint(fp):
                placed[s] = modules[i]
                yield from place(k + 1, used | fp)
                del placed[s]

    yield from place(0, set())


def slots_left(platform: Platform, pinned: dict[int, str]) -> list[int]:
    """Slots no pinned module's footprint covers."""
    taken = {i for s, m in pinned.items() for i in platform.footprint(s, m)}
    return [s.index for s in platform.slots if s.index not in taken]

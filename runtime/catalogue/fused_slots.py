"""Which slots a load takes when a platform has fused regions (runtime/catalogue/fused_regions.py).

A module placed on slot ``s`` occupies its footprint (``Platform.footprint``: ``s`` itself, or every
member of the fused region ``s`` hosts). A load of ``module`` into ``s`` therefore evicts whatever
occupies any slot of that footprint: the modules resident there, and a fused module whose own
footprint overlaps it (a one-slot load into a member rewrites part of the fused module's frames).
:func:`load_takes` is that set, the host of every evicted fused module included; the slot manager
refuses a load whose set holds a slot that is busy, loading, failed or pinned for another module,
marks every slot of it as the load's, and keeps the members of a fused module in its host's state.
So two modules never hold overlapping frames, and a load never cuts a running frame short.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from fpgashare.catalogue.platform import Platform


class Occupant(Protocol):
    index: int
    module: str | None
    host: int | None


def load_takes(platform: Platform, slots: Sequence[Occupant], slot: int, module: str) -> tuple[int, ...]:
    """Slots a load of ``module`` into ``slot`` writes or evicts, in index order: its footprint,
    plus every slot of a fused module whose footprint overlaps it (members point at their host)."""
    taken = set(platform.footprint(slot, module))
    for i in list(taken):
        s = slots[i]
        host = s.host if s.host is not None else (i if s.module is not None else None)
        if host is not None and slots[host].module is not None:
            taken.update(platform.footprint(host, slots[host].module))
    return tuple(sorted(taken))


def members(platform: Platform, slot: int, module: str | None) -> tuple[int, ...]:
    """The other slots of ``module``'s footprint on ``slot`` (empty for a one-slot module)."""
    if module is None:
        return ()
    return tuple(i for i in platform.footprint(slot, module) if i != slot)


def unblock(platform: Platform, modules: Sequence[str], chosen: list[int | None],
            missing: list[str]) -> tuple[list[int | None], list[str]]:
    """A frame keeps the slots it chose for its resident stages; a missing fused module whose every
    footprint holds one of them would then wait for a victim for ever. Give up the choices inside
    the footprint that holds fewest of them: those stages are planned again (a copy elsewhere, or
    a wait), and the fused load may take their slots."""
    for module in [m for m in missing if any(platform.fused_region(s.index, m) for s in platform.slots_for(m))]:
        mine = {c for c in chosen if c is not None}
        spans = [set(platform.footprint(s.index, module)) for s in platform.slots_for(module)]
        if not spans or not all(span & mine for span in spans):
            continue
        span = min(spans, key=lambda f: len(f & mine))
        for k, slot in enumerate(chosen):
            if slot in span:
                chosen[k] = None
                missing.append(modules[k])
    return chosen, missing


def widest_first(platform: Platform, modules: Sequence[str]) -> list[int]:
    """Indices of ``modules`` with the modules of fused regions first: a plan that picks their
    victims before the one-slot modules' cannot hand a member to a small module first and leave
    the big one no room."""
    def width(m: str) -> int:
        return max((len(platform.footprint(s.index, m)) for s in platform.slots_for(m)), default=1)
    return sorted(range(len(modules)), key=lambda i: -width(modules[i]))

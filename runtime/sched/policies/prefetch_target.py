"""What edf prefetches next when the port is idle: the first module the next needs will want that
no slot holds, runs or receives, or a second copy a chain using a module twice lacks
(``prefetch_target``; edf.py decides when and where it loads)."""

from __future__ import annotations

from fpgashare.sched.core.jobs import Frame
from fpgashare.sched.core.view import EngineView, NeedOrder


def prefetch_target(engine: EngineView, waiting: list[Frame],
                    played: bool = False) -> tuple[NeedOrder, list[str], str] | None:
    """The module to prefetch next, with the need order: the first of the modules the next
    needs will want (as many as there are slots) that no slot holds, runs or receives, or a
    copy a chain using the module twice lacks, whichever is due first. ``waiting``: the
    pending frames by deadline. ``played``: the next releases in the order the stream would
    start them (``Foresight.played_order``), else by deadline (cheaper: every decision asks)."""
    if not engine.slots.idle():
        return None                              # no slot could take a load
    foresight = engine.foresight
    if not played and not engine.placement.copies_matter() and foresight.wanted_held(waiting):
        return None      # every module the order could name is held, and no chain wants two copies
    future = foresight.played_order(waiting) if played else \
        foresight.need_order(waiting, copies=engine.placement.copies_matter())
    needed = future.head(len(engine.slots.slots))   # each module once, in order of first need
    slots = engine.slots
    module = next((m for m in needed if not slots.holds(m)), None)
    # A chain that uses a module twice needs two copies: one held is not enough. The copy
    # is due when the first chain using it twice is (it may come before a module not held).
    copies = engine.placement.copies_needed()
    second = None
    for m in needed if engine.placement.copies_matter() else ():      # (else no chain wants two)
        want = copies.get(m, 1)
        if want > 1:
            have = len(slots.ready_with(m)) + len(slots.busy_with(m)) + len(slots.coming_with(m))
            if 0 < have < want and (second is None or future.copy_key(m, have) < second[0]):
                second = (future.copy_key(m, have), m)
    if second is not None and (module is None or second[0] < future.key(module)):
        module = second[1]
    return None if module is None else (future, needed, module)

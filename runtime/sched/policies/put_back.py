"""An evictor's put-back (runtime/sched/analysis/evicting_pins.py; docs/guarantee.md, rule 9):
the pinned slots an evictor took, by slot, reloaded with their pins once it no longer holds them,
and nothing else starting meanwhile."""

from __future__ import annotations

from fpgashare.sched.core.view import EngineView, SlotState


def owing(engine: EngineView, restore: dict[int, str]) -> bool:
    """Whether an evictor that took pins streams now: from its start until they are back nothing
    else starts, not even a load that would end before the next release (a DNN lend's, a
    prefetch), which could delay the put-back the analysis counts right after its frame."""
    return bool(restore) and engine.committed is None


def restoring(engine: EngineView, restore: dict[int, str]) -> bool:
    """Put back the pins an evictor took (``restore``: pinned slot -> its pin, emptied as each is
    back) once it no longer holds them, one load at a time; whether some is still away (then no
    frame starts or loads, and no other load runs)."""
    if not restore or engine.committed is not None:
        return False
    slots = engine.slots.slots
    for slot, module in list(restore.items()):
        s = slots[slot]
        if s.state is SlotState.FAILED or (s.module == module and s.state in (SlotState.READY, SlotState.BUSY)):
            del restore[slot]            # back (or quarantined: the pins' own reload handles it)
    if not restore:
        return False
    port = engine.slots.port
    if port.current is None and not port.queue:     # queued like a committed frame's load: on a
        # shared port it waits behind at most one load of each other partition (the analysis's L)
        for slot, module in sorted(restore.items()):
            s = slots[slot]
            if s.state in (SlotState.BLANK, SlotState.READY) and s.module != module \
                    and engine.slots.can_request(slot, module):
                engine.load(slot, module, "pin")
                break
    return True

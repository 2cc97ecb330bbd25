"""Lending pinned slots to the DNN inside an idle gap, every pin back before the next release.

A set whose modules are all pinned leaves the DNN no slot to load a tile into (``backfill`` lends
only swap slots), though between two busy periods the pinned slots sit idle for milliseconds. A
*pin lend* uses them there:

- it starts only when no real-time frame is pending, committed or between passes, no pin is away
  with an evictor's frame (its put-back would take the port first: ``pins_home``), the partition
  has the port to itself (no other partition loads through it), and the earliest instant a frame
  may be released, r, is known (``foresight.earliest_release_s``);
- every load it makes — a tile into a pinned slot, and each pin's reload — and every DNN batch on
  a lent slot ends by r: while pins are away, the pins' reloads start no later than
  ``back_by`` = r - (pins away) x (the longest load) - slack, nothing else loads after that
  instant, and batches end by it.

Why the admission analysis still holds (docs/guarantee.md, rules 3 and 5): at r every pin is in
its slot, the port is free and no DNN batch runs, so any busy period that starts at or after r
finds the board in a state the analysis allows (the swap slots' contents are never assumed);
before r no real-time frame exists to be delayed. Pins lent are reloaded as side loads ending
before the earliest next release, which rule 3 already permits for any load.
"""

from __future__ import annotations

from fpgashare.sched.core.view import EngineView, SlotState

DNN = "dnn_tile"
#: Kept between the last pin's reload and the earliest release, as a fraction of one load.
SLACK_LOADS = 0.1


def lent(engine: EngineView) -> list[int]:
    """Pinned slots that hold (or are receiving) a DNN tile instead of their pin."""
    slots = engine.slots.slots
    return [i for i, pin in engine.contract.pinned.items() if pin != DNN and slots[i].module == DNN]


def back_by(engine: EngineView, extra: int = 0) -> float:
    """When the lent pins' reloads (and ``extra`` more) must start, back to back, so that every pin
    is in place before the earliest next release (inf if no pin is away)."""
    away = len(lent(engine)) + extra
    if not away:
        return float("inf")
    load_s = engine.port.longest_load_s()
    return engine.foresight.earliest_release_s() - (away + SLACK_LOADS) * load_s


def quiet(engine: EngineView) -> bool:
    """Whether nothing real-time is under way: no frame pending, committed or between passes."""
    return not engine.pending and engine.committed is None and not engine.foresight.next_passes()


def pins_home(engine: EngineView) -> bool:
    """Whether every pin is in its slot or lent to the DNN: none taken by an evictor's frame, whose
    put-back takes the port as soon as that frame has streamed (edf's rule 9), before any lent
    pin's reload that ``back_by`` counts."""
    slots = engine.slots.slots
    return all(slots[i].module in (pin, DNN) for i, pin in engine.contract.pinned.items())


def may_lend(engine: EngineView) -> bool:
    """Whether a pinned slot may be lent now (module docstring)."""
    return quiet(engine) and engine.loads_after_t0 and not engine.changing and not engine.port.shared() \
        and not engine.planned_reloads and engine.foresight.earliest_release_s() > engine.now \
        and pins_home(engine)


def candidates(engine: EngineView) -> list[int]:
    """Idle pinned slots holding their pin that a tile may take."""
    slots = engine.slots
    return [i for i, pin in sorted(engine.contract.pinned.items())
            if slots.slots[i].module == pin and slots.slots[i].state is SlotState.READY
            and slots.compatible(i, DNN) and slots.can_take(i, DNN)]


def defer_reload(engine: EngineView, slot: int) -> bool:
    """Whether the reload of the pin lent out of ``slot`` may wait (it then wakes the engine at
    ``back_by``): only while nothing real-time is under way and before ``back_by``, and never
    during a mode change (the switch must find every pin in place)."""
    if engine.slots.slots[slot].module != DNN or not quiet(engine) or engine.port.shared() or engine.changing:
        return False
    due = back_by(engine)
    if engine.now >= due:
        return False
    engine.wake(due)
    return True

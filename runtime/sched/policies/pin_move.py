"""Moving a pin to hide a load: a pinned module gives its slot to the next frame's missing module
under the job on the stream, and goes back into another slot under that frame's own stream.

Why: with more distinct modules than slots, the analysis pins some modules (so each frame needs
at most its unpinned loads) and leaves the rest to swap slots. A frame whose module must go into a
swap slot the job on the stream is using cannot load it hidden; it loads it after, exposed, with
the stream idle. The pinned slots meanwhile hold modules neither job uses. Which slot a pin lives
in does not matter to the analysis, only that the pinned modules are there when a frame needs them.

The move, at time t while job G streams until E, for the pending frame F:

1. F is certainly the next job at E and lacks exactly one module X (``certainly_next``): no
   pending frame, and no frame any pipeline could release by E, comes before F in EDF order; and
   F lacks exactly one module X (one copy). F runs in one pass: a frame in passes comes back
   after its pass for the next, which may need M or take r.
2. X loads into a pinned slot s that holds M (F does not use M, G is not on s), ending by E:
   hidden under G. (F's other modules are resident, or on G's slots, which free at E.)
3. The pin M moves to a slot r that is not pinned, holds none of F's modules (F may start on
   any copy of one), compatible with M; reloading M into r ends before F's stream does
   (L_r <= C_F), so it is hidden under F. ``edf`` issues it first
   when F starts (``EdfPolicy._load_pins``).
4. With M at r instead of s, every pipeline's unpinned stages still fit the slots left (the
   analysis's residency condition, ``analysis.residency`` with the new placement fixed).

Then M is away only during [t, E + L_r], and no frame that needs M can start then: at E the
stream takes F (1), which does not use M, and the next job starts after F ends, when M is back
(3). No frame waits for a load the analysis did not count, nothing else is delayed (both loads
are hidden, the port is free at E because only hidden loads run under G), and the residency
condition holds throughout (4): the admission argument is untouched. A hardware fault on the way
(a failed load) leaves M to ``_load_pins``, like any missing pin.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from fpgashare.sched.analysis.residency import residency
from fpgashare.sched.core.jobs import Frame
from fpgashare.sched.core.view import EngineView, SlotState
from fpgashare.sched.policies.certainly_next import certainly_next, settled


@dataclass(frozen=True)
class PinMove:
    module: str       #: X: the frame's missing module, loaded into ``into``
    into: int         #: s: the pinned slot X takes
    held: str         #: M: the module s held (pinned, or for a lend any module)
    to: int           #: r: where M is pinned from now on (reloaded under F's stream)


def pin_move(engine: EngineView, frame: Frame, chosen: list[int | None], missing: list[str]) -> PinMove | None:
    """A move that hides ``frame``'s one missing load under the job on the stream, or None."""
    nxt = certainly_next(engine, frame, chosen, missing)      # 1
    if nxt is None:
        return None
    pinned = engine.contract.pinned
    slots = engine.slots
    module, uses, end = nxt.module, nxt.uses, nxt.end
    for s in slots.compatible_slots(module):
        held = pinned.get(s)
        slot = slots.slots[s]
        if held is None or held in frame.modules or s in uses or slot.state is not SlotState.READY \
                or engine.now + engine.port.load_seconds(s) > end:
            continue
        for r in slots.compatible_slots(held):
            # Not a slot holding any of F's modules, whichever copy ``uses`` counted: F may start
            # on any copy, and M could then not go back under F's stream.
            if r == s or r in pinned or r in uses or slots.slots[r].module in frame.module_counts \
                    or slots.slots[r].state is SlotState.LOADING \
                    or slots.slots[r].state is SlotState.FAILED or engine.port.load_seconds(r) > frame.exec_s:
                continue
            placed = {k: v for k, v in pinned.items() if k != s} | {r: held}
            if _fits(engine, placed):
                return PinMove(module, s, held, r)
    return None


def _fits(engine: EngineView, placed: dict[int, str]) -> bool:
    """The residency condition with the pins at ``placed``: same loads per frame as before."""
    plan = residency(engine.pipelines, engine.platform, Counter(placed.values()), fixed=placed)
    return not isinstance(plan, str)


def lend_moves(engine: EngineView, module: str) -> list[PinMove]:
    """Moves that let ``module`` (a DNN tile) load hidden into an idle slot s under the job on the
    stream, although s holds M, a module real-time work wants back before the tile would pay:
    M goes into a slot r that the job frees at its end E, whose module is wanted later. If s is
    pinned, the pin moves to r (the residency condition checked as above). Safe whatever the DNN
    then does: no frame waits, and none can arrive before M is back (its reload, started at E
    at the latest, ends by the earliest possible release); with a batch on the tile from E, the
    reload is hidden under it. ``PinMove.to`` is r."""
    end = engine.foresight.stream_job_end()
    pinned = engine.contract.pinned
    if end is None or engine.pending or engine.committed is not None or not engine.port.free() or engine.port.shared() \
            or not settled(engine) or engine.foresight.next_passes() or engine.slots.fused:
        return []                 # (a frame on the stream with passes to go waits again at E)
    slots = engine.slots
    earliest = engine.foresight.earliest_release_s()
    moves = []
    for s in slots.compatible_slots(module):
        held = slots.slots[s].module
        if held is None or held == module or slots.slots[s].state is not SlotState.READY \
                or engine.now + engine.port.load_seconds(s) > end:
            continue
        for r in slots.compatible_slots(held):
            target = slots.slots[r]
            if r in pinned or target.state is not SlotState.BUSY or target.module in (module, held) \
                    or end + engine.port.load_seconds(r) > earliest:
                continue
            if s not in pinned or _fits(engine, {k: v for k, v in pinned.items() if k != s} | {r: held}):
                moves.append(PinMove(module, s, held, r))
    return moves

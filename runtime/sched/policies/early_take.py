"""An evictor takes its pinned slot under the job before it: the load an evictor makes into a pinned
slot when it commits, made instead while the job on the stream still runs, hidden under it.

Why: an evictor (a pipeline whose chain does not fit beside the pins, ``contract.evictors``) may
take a pinned slot only when it commits, and it commits only onto a free stream. So its load
always starts when the job before it ends, with the stream idle: the frame waits for the port
for a whole load, where a schedule that loads it under that job waits for none (the classified
port wait of ``limit_gap``, docs/limits.md, "Where edf's excess port wait comes from").

The take, at time t while job G streams until E, for the pending frame F:

1. F is certainly the next job at E (``certainly_next``: no pending frame, no frame on the
   stream with a pass to come, and no frame any pipeline could release by E, comes before F in
   EDF order); F has arrived, runs in one pass, and lacks exactly one module X (one copy), the
   rest resident or on G's slots (free at E). Nothing of F's is loading.
2. X loads into the pinned slot s that F would take at E (``pinned_victim``: within F's budget of
   pins, a pin F does not use, idle now), ending by E: hidden under G. The port is free (no other
   load runs), not shared with other partitions, no pin is moved or lent, no mode change.
3. Until F starts nothing else starts or loads (``EdfPolicy.dispatch``); F starts at E, and from
   then on the pin goes back exactly as an evictor's put-back does (``put_back``).

Then the pin M is away during [t, E) besides the time the old take had it away, and no frame can
start in [t, E) (G holds the stream) nor at E before F (1), so no frame that needs M waits longer
than it did: from E the run is the one where F commits at E, takes s and loads X, only with F's
load already done and the port free at E (only hidden loads run under G). F's own load counted by
the analysis (its stage in S_F) is now hidden; the put-back after F is the one the analysis
counts. The admission argument is untouched. A failed load leaves F to commit as before, and M to
the put-back or to ``load_pins``, like any missing pin.
"""

from __future__ import annotations

from dataclasses import dataclass

from fpgashare.sched.core.jobs import Frame
from fpgashare.sched.core.view import EngineView, SlotState
from fpgashare.sched.policies import pin_lend
from fpgashare.sched.policies.certainly_next import certainly_next
from fpgashare.sched.policies.edf_loads import pinned_victim


@dataclass(frozen=True)
class EarlyTake:
    frame: Frame      #: F: the evictor whose load is made under the job before it
    module: str       #: X: its missing module
    into: int         #: s: the pinned slot X goes into
    pin: str          #: M: the pin s held (put back after F, as an evictor's)


def early_take(engine: EngineView, frame: Frame, chosen: list[int | None], missing: list[str]) -> EarlyTake | None:
    """A take of a pinned slot for evictor ``frame`` hidden under the job on the stream, or None
    (``chosen``, ``missing``: ``find_slots`` for the frame)."""
    contract = engine.contract
    if not contract.evictors.get(frame.pipeline.name) or pin_lend.lent(engine) \
            or (frame.arrives is not None and frame.arrives > engine.now):
        return None
    nxt = certainly_next(engine, frame, chosen, missing)
    if nxt is None:
        return None
    slots = engine.slots
    busy_now = {s.index for s in slots.slots if s.state is SlotState.BUSY}
    into = pinned_victim(engine, frame, nxt.module, busy_now | nxt.uses)
    if into is None or slots.slots[into].state is not SlotState.READY \
            or engine.now + engine.port.load_seconds(into) > nxt.end or not slots.can_request(into, nxt.module):
        return None
    return EarlyTake(frame, nxt.module, into, contract.pinned[into])


def start_taken(engine: EngineView, take: EarlyTake, restore: dict[int, str]) -> bool:
    """While the evictor that took its pin under the job before it waits, nothing else starts or
    loads; once the stream frees it starts, and its pin goes back as an evictor's put-back
    (``restore``, ``put_back``). Whether the decision is made: False sends the caller back to its
    usual dispatch (a failed load left the frame short of a module, or it ended) and the take is
    over; True with the frame started, too."""
    frame = take.frame
    if frame.start is None and frame.outcome is None:
        if not engine.stream.free():
            return True
        chosen, missing = engine.placement.find_slots(frame, set())
        if not missing:
            engine.start(frame, [s for s in chosen if s is not None])
            restore[take.into] = take.pin
            return True          # its put-back comes next (``put_back.owing``)
        return False             # (the pin is left to ``load_pins``, like any missing pin)
    restore[take.into] = take.pin
    return False

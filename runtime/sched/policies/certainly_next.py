"""Whether the pending frame is certainly the next job, lacking one load: the ground shared by the
moves that hide that load under the job on the stream (``pin_move``, ``early_take``).

What it decides, at time t while job G streams until E, for the pending frame F (``chosen`` and
``missing``: ``find_slots`` for F):

1. Nothing else is on its way: no frame commits, the port is free (a load queued now starts at
   once) and not shared with other partitions, no mode change, no fused regions (a load there
   may take several slots, which the moves' arguments do not count), and the pins are settled
   (``settled``: every pin in its slot, no reload planned).
2. F runs in one pass: a frame in passes comes back after its pass for the next, which may need
   the slot a move takes.
3. F lacks exactly one module X (one copy), not loading: the rest are resident, or on G's slots,
   which free at E (one stream).
4. F comes first in EDF order at E whatever is released until then (``next_at``).

Why acting on it is safe: with 1 the one load a move makes starts at once and ends when the
port's time says; with 4 no frame can start at E before F, since each pipeline's next frame is
released no earlier than its forecast and every later one has a later deadline; with 2 and 3
that one load is all F waits for at E. What a move may then do with the slot it takes is the
caller's argument (``pin_move``, ``early_take``); this check changes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

from fpgashare.sched.core.jobs import Frame
from fpgashare.sched.core.view import EngineView, SlotState


@dataclass(frozen=True)
class NextLoad:
    end: float              #: E: when the job on the stream ends
    module: str             #: X: the one module F lacks
    uses: frozenset[int]    #: the slots F's other modules take at E


def certainly_next(engine: EngineView, frame: Frame, chosen: list[int | None], missing: list[str]) -> NextLoad | None:
    """The job end and the one load ``frame`` waits for when it is certainly the next job and lacks
    one module (the module docstring's 1 to 4), or None."""
    end = engine.foresight.stream_job_end()
    if end is None or not engine.contract.pinned or engine.committed is not None or not engine.port.free() \
            or engine.port.shared() or engine.changing or not settled(engine) or engine.slots.fused:
        return None
    if len(frame.pipeline.pass_stages) > 1:
        return None
    slots = engine.slots
    uses = {s for s in chosen if s is not None}
    absent = []
    for m in missing:              # a module on the stream's job is free at E (one stream)
        busy = next((s for s in slots.busy_with(m) if s not in uses), None)
        if busy is None:
            absent.append(m)
        else:
            uses.add(busy)
    if len(absent) != 1 or frame.module_counts.get(absent[0], 1) != 1 or slots.coming_with(absent[0]):
        return None
    if not next_at(engine, frame, end):
        return None
    return NextLoad(end, absent[0], frozenset(uses))


def settled(engine: EngineView) -> bool:
    """No earlier move is still on its way back: every pin in its slot, no reload planned (so the
    one reload a move needs is the only one, and the port takes it at once)."""
    slots = engine.slots.slots
    return not engine.planned_reloads and all(
        slots[s].module == m and slots[s].state in (SlotState.READY, SlotState.BUSY)
        for s, m in engine.contract.pinned.items())


def next_at(engine: EngineView, frame: Frame, end: float) -> bool:
    """Whether ``frame`` comes first in EDF order at ``end`` whatever is released until then."""
    key = (frame.deadline, frame.seq)
    if any((f.deadline, f.seq) < key for f in engine.pending if f is not frame):
        return False
    if any((f.deadline, f.seq) < key and f.step < len(f.pipeline.pass_stages) - 1 for f in engine.running.values()):
        return False              # a frame on the stream comes back for its next pass at E
    for p in engine.pipelines:
        release = engine.foresight.next_release_s(p)
        if release <= end and release + p.deadline_s <= frame.deadline:
            return False
    return True

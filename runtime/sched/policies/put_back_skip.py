"""Skipping an evictor's put-back when its own next frame certainly comes first: the pins it took
stay out, its module stays in their slots, and its next frame puts them back as its own tail.

Why: after every frame of an evictor (a pipeline whose chain does not fit beside the pins,
``contract.evictors``) edf puts the pins it took back (rule 9, ``put_back``). When the evictor's
next frame comes before any frame that uses those pins, it takes the slots again: two loads a
frame where a cyclic table keeps the evictor's module in the slot.

The skip, when the evictor's frame F has streamed and its pins (module M in slot s, each) would go
back (``skip``):

0. the releases are a workload's (a bench run, the twin, a board replaying a file: evicting plans
   need known phases, and a daemon's apps send when they like), so a frame that has not come by
   its latest arrival never comes;
1. nothing that assumes settled pins runs: no pinned-first rule, no mode change, no fused regions,
   no planned reload, every other pin in its slot, the stream free, no frame committed or between
   passes; the evictor is not early (rule 12), its frames are one pass;
2. F' (the evictor's next frame) is pending now, or will be released by A, its latest arrival
   (the engine's forecast plus its jitter); its latest deadline is Dl;
3. no *pin user* — a pipeline other than the evictor that uses some M, or another evictor that
   finds fewer pins it may take outside the owed slots than its budget — has a frame pending or
   streaming, and each one's next frame is released (the forecast: jitter only delays it, and an
   early frame is pending from it) after A and due after Dl. Any other evictor takes only pins in
   their slots (``pinned_victim``), as many as before, and puts them back as before (rule 9); it
   may find the owed evictor's module in s and use it, one load fewer.

Then the pins are *owed* (``Owed``): s keeps the evictor's module, and until F' takes the pins
over edf loads no M back (``EdfPolicy._load_pins``), never holds or lends the stream to a frame of
the evictor (rule 13, rule 4's borrowing), and nothing that assumes settled pins runs (pin moves,
lends, early takes and prefetches past a release all see a pin away). F' takes the owed slots as
the pins it took when it commits or starts (``claim``; ``pinned_victim`` counts them within its
budget, so it never has more than ``d_e`` away), and from its start on rule 9 holds as for any
evictor: its put-back is its tail (or is owed again by the same test).

If F' does not come by A, or is dropped before it commits, or the evictor leaves, or a mode change
begins, the owed pins are *due* (``update``): they go back as F''s job would, in EDF order by Dl
(or F''s own deadline when it was dropped) — when the stream is free, no frame is committed and no
pending frame is due earlier (``turn``) — with nothing else starting meanwhile (rule 9), and
while they wait, no frame due after them starts on a free stream and no frame is held.

Why every admitted frame still meets its deadline (docs/guarantee.md, "Skipping an evictor's
put-back"): every job is one the analysis charges, no longer. F's job ends at its stream, shorter
than S_e. A frame that starts while pins are owed uses none of them or finds its pin back (3: no
pin user is pending at the skip, each is released after A and due after Dl, and F' or the due
put-back comes first in EDF order; a pin user borrows the stream only with its pin resident, put
back by a hidden side load of its own, rule 3, which F' may undo with one of its charged loads),
and its unpinned stages load into
the swap slots as before: at most its n_i loads (another evictor: its u_e loads, and the pins it
takes in their slots, at most its d_e, which it finds outside the owed slots, 3). F''s job loads
at most u_e stages (its module may be resident already), streams, and puts back at most d_e pins:
at most S_e, with the put-back its tail. A due put-back is F''s job released by A (a legal
arrival) with only its tail, at most S_e, run as non-preemptive EDF runs it. So the run is one of
the runs the admission argument covers, with some jobs shorter.
"""

from __future__ import annotations

from dataclasses import dataclass

from fpgashare.sched.core.jobs import Frame
from fpgashare.sched.core.view import EngineView, SlotState

#: Releases and deadlines compared with this much room on the pessimistic side (float sums).
EPS = 1e-9


@dataclass
class Owed:
    """Pins an evictor took whose put-back waits for its next frame."""

    pipeline: str              #: the evictor
    pins: dict[int, str]       #: pinned slot -> its pin, away with the evictor's module in the slot
    index: int                 #: F''s index among the evictor's frames
    by: float                  #: A: F' has arrived by then, or it does not come
    deadline: float            #: F''s latest deadline: the put-back's place in EDF order once due
    frame: Frame | None = None   #: F', once seen pending
    due: bool = False          #: F' will not take the pins: they go back in its place
    woken: bool = False        #: a wake-up is set for ``by``


def pin_users(engine: EngineView, evictor: str, owed: dict[int, str]) -> list:
    """Pipelines other than ``evictor`` that may want an ``owed`` slot: those using an owed pin
    (in any pass), and every other evictor that finds fewer pins it may take outside the owed
    slots than the contract lets it take (it takes no owed slot: ``pinned_victim``)."""
    contract = engine.contract
    out = []
    for p in engine.pipelines:
        if p.name == evictor:
            continue
        if any(m in p.module_counts for m in owed.values()):
            out.append(p)
        elif p.name in contract.evictors and sum(
                1 for s, m in contract.pinned.items() if s not in owed and m not in p.module_counts) \
                < contract.evictors[p.name]:
            out.append(p)
    return out


def known_releases(engine: EngineView) -> bool:
    """Whether the releases are a workload's, known ahead (the module docstring's 0): not a
    daemon's, whose apps send when they like, so a frame not come by A may still come."""
    return engine.end_s != float("inf")


def skip(engine: EngineView, restore: dict[int, str], taker: Frame | None) -> Owed | None:
    """The pins in ``restore`` (the put-back about to start after ``taker``, the evictor's frame,
    has streamed) owed to its next frame instead, or None (the module docstring's 0-3)."""
    contract = engine.contract
    if not known_releases(engine):
        return None
    if taker is None or not restore or contract.pinned_first or engine.changing or engine.slots.fused \
            or engine.planned_reloads or engine.committed is not None or engine.running \
            or not engine.stream.free() or engine.foresight.next_passes():
        return None
    p = taker.pipeline
    if p.name not in contract.evictors or p.name in contract.early or len(p.pass_stages) > 1 \
            or not any(q is p for q in engine.pipelines):
        return None
    slots = engine.slots.slots
    for slot, pin in contract.pinned.items():
        s = slots[slot]
        if slot in restore:
            if s.state is not SlotState.READY or s.module == pin or s.module is None:
                return None
        elif s.module != pin or s.state not in (SlotState.READY, SlotState.BUSY):
            return None
    mine = [f for f in engine.pending if f.pipeline is p and f.start is None]
    if mine:
        nxt = min(mine, key=lambda f: f.index)
        if nxt.arrives is not None or nxt is engine.committed:
            return None
        index, by, deadline = nxt.index, engine.now, nxt.deadline
    else:
        release = engine.foresight.next_release_s(p)
        if release == float("inf"):
            return None                 # its last frame: nothing to take the pins over
        index = taker.index + 1
        by = max(engine.now, release) + p.jitter_s
        deadline = by + p.deadline_s
    users = pin_users(engine, p.name, restore)
    names = {q.name for q in users}
    if any(f.pipeline.name in names for f in engine.pending) \
            or any(f.pipeline.name in names for f in engine.running.values()):
        return None
    for q in users:
        release = engine.foresight.next_release_s(q)
        if release <= by + EPS or release + q.deadline_s <= deadline + EPS:
            return None
    return Owed(p.name, dict(restore), index, by, deadline)


def owes(owed: Owed | None, frame: Frame) -> bool:
    """Whether ``frame`` is of the pipeline whose pins are owed (it must not be held or borrow)."""
    return owed is not None and frame.pipeline.name == owed.pipeline


def claim(owed: Owed | None, restore: dict[int, str], frame: Frame) -> bool:
    """When the evictor's frame commits or starts, the owed pins become the pins it took (put back
    after it, ``put_back``); whether it did."""
    if not owes(owed, frame) or frame.index < owed.index:
        return False
    restore.update(owed.pins)
    return True


def update(engine: EngineView, owed: Owed) -> None:
    """Note F' once pending, and mark the pins due when it will not take them over."""
    if owed.due:
        return
    slots = engine.slots.slots
    for slot in [s for s in owed.pins if slots[s].state is SlotState.FAILED]:
        del owed.pins[slot]               # quarantined: the pins' own reload handles it
    if owed.frame is None:
        owed.frame = next((f for f in engine.pending if f.pipeline.name == owed.pipeline
                           and f.index >= owed.index), None)
    frame = owed.frame
    gone = not any(p.name == owed.pipeline for p in engine.pipelines)
    if frame is not None and frame.outcome is not None and frame.start is None:
        owed.due, owed.deadline = True, min(owed.deadline, frame.deadline)     # dropped before it ran
    elif gone or engine.changing or not owed.pins or (frame is None and engine.now > owed.by + EPS):
        owed.due = True
    elif frame is None and not owed.woken:
        owed.woken = True
        engine.wake(owed.by + 2 * EPS)    # look again once it should have come


def turn(engine: EngineView, owed: Owed) -> bool:
    """Whether due pins may go back now: their job is the most urgent, as F''s would be (no
    pending frame, nor one between passes, is due before it), the stream is free and no frame
    is committed."""
    if not owed.due or engine.committed is not None or not engine.stream.free():
        return False
    return not any(f.deadline < owed.deadline for f in engine.pending)


class Skips:
    """edf's owed pins (at most one evictor's at a time) and the evictor whose pins ``restore``
    holds: the state the functions above act on."""

    def __init__(self) -> None:
        self.owed: Owed | None = None
        self.taker: Frame | None = None      #: the evictor frame whose pins the put-back holds

    def begin(self, engine: EngineView, restore: dict[int, str]) -> None:
        """Leave the put-back about to start to the evictor's next frame where ``skip`` allows."""
        if restore and self.owed is None and (owed := skip(engine, restore, self.taker)) is not None:
            restore.clear()
            self.owed = owed

    def settle(self, engine: EngineView, restore: dict[int, str]) -> bool:
        """Due pins into ``restore`` once it is their turn (``turn``); whether now."""
        owed = self.owed
        if owed is not None and not owed.pins:
            self.owed = owed = None          # (their slots failed: the pins' own reload handles them)
        if owed is None:
            return False
        update(engine, owed)
        if not turn(engine, owed):
            return False
        restore.update(owed.pins)
        self.owed = self.taker = None        # put back at once, as after any evictor's frame
        return True

    def claim(self, restore: dict[int, str], frame: Frame) -> bool:
        """``frame`` commits or starts: if it is the evictor's next, it takes the owed pins over."""
        if not claim(self.owed, restore, frame):
            return False
        self.owed, self.taker = None, frame
        return True

    def took(self, engine: EngineView) -> None:
        """The committed evictor loads into a pinned slot: its put-back is the one ``restore`` holds."""
        self.taker = engine.committed

    def slots(self) -> dict[int, str]:
        """The owed slots (none to load a pin or prefetch into)."""
        return self.owed.pins if self.owed is not None else {}

    def cut(self) -> float | None:
        """While owed pins are due, the deadline before which a frame may still start first."""
        return self.owed.deadline if self.owed is not None and self.owed.due else None

    def unheld(self, held: list[Frame]) -> list[Frame]:
        """``held`` (hold.py's frames, by deadline) up to the first of the evictor pins are owed to:
        that frame is never held (nor those after it, decided with it held)."""
        k = next((i for i, h in enumerate(held) if owes(self.owed, h)), len(held))
        return held[:k]

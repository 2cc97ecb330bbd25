"""``edf``: earliest deadline first over real-time frames, reconfiguration-aware, under the
contract its admission analysis assumes (runtime/sched/analysis/schedulability.py, runtime/sched/policies/guard.py).

After every event, pending frames are taken in deadline order:

- a frame whose modules are resident in free slots starts once the video stream is free (the
  shell streams one frame at a time); until then it keeps its slots;
- the most urgent pending frame that lacks modules *commits* once the stream is free: it takes
  the configuration port for its loads (one at a time, victims chosen by lookahead over the known
  periodic demand, never a pinned slot), and keeps every slot it counts on until it streams. No
  other frame loads while a frame is committed, and another frame streams meanwhile only if it
  ends before the committed frame's loads do (it borrows time the stream would idle);
- without a committed frame, the first blocked frame may load only what is hidden under the job
  on the stream (``guard.side_load_allowed``), and so may prefetch for the next releases;
- an *evictor* (the contract's ``evictors``: runtime/sched/analysis/evicting_pins.py) may, when it
  commits, load into pinned slots holding modules it does not use (at most as many as the
  contract gives it); from its start on the stream until those pins are back (right after it has
  streamed) nothing else starts, no frame and no other load: the analysis counts the put-back
  in the evictor's job, right after its frame (left to its next frame where that certainly comes
  first: runtime/sched/policies/put_back_skip.py);
- under a *pinned-first* contract (runtime/sched/analysis/pinned_first.py), the most urgent pending
  frame, if every stage of it is in its pinned slot, streams before a committed frame it is more
  urgent than, whether or not it ends before that frame's loads;
- a frame is dropped only when it certainly cannot finish by its deadline (the stream, and its
  loads at their fastest). A frame that could still make it is never dropped for a module the
  port could still load.

Where an early load gains nothing, prefetch waits until just in time (runtime/sched/policies/lookahead.py):
with best-effort DNN work present, so idle slots can run DNN batches meanwhile
(runtime/sched/policies/backfill.py), and in the gap after a period's frames, so the load runs under the
next period's first frame.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from operator import attrgetter

from fpgashare.catalogue.fused_slots import widest_first
from fpgashare.sched.core.jobs import Frame
from fpgashare.sched.core.policy import PriorityPolicy
from fpgashare.sched.core.view import EngineView
from fpgashare.sched.policies import cold_lend, pin_lend, put_back, put_back_skip
from fpgashare.sched.policies.backfill import backfill
from fpgashare.sched.policies.early_take import EarlyTake, early_take, start_taken
from fpgashare.sched.policies.edf_loads import (
    LoadPlan,
    borrow_last,
    load_pins,
    overtaken,
    pinned_victim,
    short_of_loads,
    warm_up,
)
from fpgashare.sched.policies.edf_prefetch import Prefetcher
from fpgashare.sched.policies.guard import side_load_allowed
from fpgashare.sched.policies.hold import Holds
from fpgashare.sched.policies.pin_move import pin_move
from fpgashare.sched.policies.pinned_first import start_pinned_first
from fpgashare.sched.policies.prefetch_target import prefetch_target


class EdfPolicy(PriorityPolicy):
    name = "edf"
    admission = True
    borrow = True        #: a less urgent frame may stream while a committed frame loads (if it ends first)
    holds = True         #: hold a frame back within the contract's budgets (runtime/sched/policies/hold.py)
    early_takes = True   #: an evictor certainly next loads into its pinned slot under the job before it
    skip_put_backs = True   #: an evictor's pins stay out for its next frame when it certainly comes first

    priority = attrgetter("deadline", "seq")      # a C-level key: sorted() calls it for every pending frame

    def __init__(self) -> None:
        # Set here too: planned.py's fallback dispatches without setup, and every decision reads both.
        self._restore: dict[int, str] = {}      #: pinned slot -> its pin, taken by an evictor
        self._cold: cold_lend.ColdLend | None = None    #: a registration-window lend whose pins are away
        self._early: EarlyTake | None = None    #: an evictor's pin taken under the job before it
        self.skips = put_back_skip.Skips()      #: pins left out for an evictor's next frame
        self.held = Holds()
        self.prefetcher = Prefetcher(self._prefetch_target, self.priority)   #: loads when no frame owns the port

    def setup(self, engine: EngineView) -> None:
        """Pins first, each into its slot; then the usual warm-up for what the first frames need.
        With DNN work, the DNN's tiles first where the registration window has room for them
        (cold_lend.py): a pinned slot's pin then comes back by the first release."""
        self._restore = {}
        self._early = None
        self.skips = put_back_skip.Skips()
        self.held = Holds()
        lend = cold_lend.plan(engine)
        if lend is not None:
            cold_lend.begin(engine, lend)
        self._cold = lend if lend is not None and lend.pins_away else None
        self._load_pins(engine, warm_up=True)
        warm_up(engine)

    # ---- dispatch --------------------------------------------------------------------------
    def dispatch(self, engine: EngineView) -> None:
        cold = self._cold
        if cold is not None:
            if not cold_lend.over(engine, cold):
                backfill(engine, until=cold.setup_at)    # DNN batches only, over before the pins
                return
            self._cold = None
            self._load_pins(engine, warm_up=True)        # the lent pins, back to back
        if self._early is not None:
            self.skips.taker = self._early.frame
            waits = start_taken(engine, self._early, self._restore)
            self._early = None if self._early.frame.start is not None or not waits else self._early
            if waits:
                return               # the evictor that took its pin early comes first (early_take.py)
        self.skips.settle(engine, self._restore)
        if self.skip_put_backs:
            self.skips.begin(engine, self._restore)    # its next frame comes first (put_back_skip.py)
        if put_back.restoring(engine, self._restore):
            return                   # the evictor's job puts its pins back: nothing else meanwhile
        self._dispatch(engine)
        if self.skips.settle(engine, self._restore) and put_back.restoring(engine, self._restore):
            return                   # owed pins due, their turn in EDF order (put_back_skip.turn)
        if put_back.owing(engine, self._restore):
            return                   # an evictor has just started with pins away (``_dispatch``)
        backfill(engine)

    def _dispatch(self, engine: EngineView) -> None:
        now = engine.now
        committed = engine.committed
        reserved: set[int] = set()
        borrowable: set[int] = set()
        ready_at = float("inf")
        late: dict[int, float] = {}
        if committed is not None and self.hopeless(engine, committed, (), engine.stream.free_at()):
            engine.drop(committed, "cannot finish by its deadline: the stream is taken until then")
            committed = None
        if committed is not None and engine.contract.pinned_first and engine.stream.free():
            start_pinned_first(engine, committed, self.priority)
        if committed is not None:
            self.skips.claim(self._restore, committed)
            plan = self._plan(engine, committed, set(), take_pins=True)
            come = committed.arrives is None or committed.arrives <= now
            if not come:
                engine.wake(committed.arrives)       # committed before it came: it streams from then
            if come and not plan.loads and plan.complete and all(s is not None for s in plan.chosen) \
                    and engine.stream.free():
                engine.start(committed, plan.chosen)
                committed = None
                if put_back.owing(engine, self._restore):
                    return                           # its put-back comes next (``_restoring``)
                self._load_pins(engine)              # a moved pin goes back first, under this job
            else:
                self._issue(engine, plan)
                reserved = plan.used
                borrowable = {s for s in plan.chosen if s is not None}
                ready_at = plan.ready_at
                late = plan.late
        stream_at = engine.stream.free_at()
        head_seen = False            # a frame earlier in deadline order is still pending
        port_given = committed is not None
        order = sorted(engine.pending, key=self.priority)
        owed, cut = self.skips.owed, self.skips.cut()    # due pins go back first (put_back_skip.turn)
        if self.holds and engine.contract.holds and cut is None:     # (never the frame pins are owed to)
            held = self.held.held(engine, order, lambda f: [v for _, v in self._plan(engine, f, set()).loads])
            held = self.skips.unheld(held)
            if held:             # decided as if not released yet (hold.py)
                order = [f for f in order if not any(f is h for h in held)]
        shortest = engine.port.shortest_load_s()
        stream_free = engine.stream.free()     # asked again after a start: nothing else below changes it
        for frame in order:
            if frame is committed:
                head_seen = True
                continue
            if cut is not None and committed is None and frame.deadline >= cut:
                continue                     # the due put-back comes before it (put_back_skip.turn)
            exec_s = frame.exec_s             # this pass; the drop rule counts the passes after it too
            if stream_at + frame.remaining_s > frame.deadline:
                engine.drop(frame, "cannot finish by its deadline: the stream is taken until then")
                continue
            # While a frame is committed, any other frame streams only in the time its loads
            # leave the stream idle (and then also on the slots it waits with): the committed
            # frame is the one job a more urgent frame may wait behind (the analysis's blocking).
            later = committed is not None
            borrows = self.borrow and later and now + exec_s <= ready_at and not put_back_skip.owes(owed, frame)
            if later and not (borrows and stream_free):
                continue                     # it can neither start nor load now: judged next time
            if borrows:
                # The committed frame's slots, and a victim whose load starts after this frame ends
                # (its loads are queued so: the victims pending frames use go last).
                free = borrowable | {v for v, t in late.items() if now + exec_s <= t}
                chosen, missing = engine.placement.find_slots(frame, reserved - free)
            else:
                chosen, missing = engine.placement.find_slots(frame, reserved)
            # ``hopeless``, less its stream test (the one above, with the same stream_at), and its
            # cheap test first: even a load for every stage would leave the frame in time
            reason = None if not missing or engine.now + len(frame.modules) * shortest + frame.remaining_s \
                <= frame.deadline else short_of_loads(engine, frame, missing)
            if reason:
                engine.drop(frame, reason)
                continue
            if not missing and frame.arrives is not None and frame.arrives > now:
                # Pending before it comes (runtime/sched/analysis/early_commit.py): it never borrows
                # the stream; as the most urgent frame on a free stream it commits with nothing to
                # load, and holds the stream and the port until it has come and streamed.
                if not later and stream_free and not port_given:
                    engine.commit(frame)
                    self.skips.claim(self._restore, frame)
                    committed, port_given = frame, True
                    engine.wake(frame.arrives)
                    reserved = borrowable = {s for s in chosen if s is not None}
                    ready_at = now
                head_seen = True
                continue
            if not missing:
                if stream_free and (not later or borrows):
                    engine.start(frame, [s for s in chosen if s is not None])
                    if self.skips.claim(self._restore, frame):
                        return               # it streams with pins away: nothing beside it (rule 9)
                    stream_at = engine.stream.free_at()
                    stream_free = engine.stream.free()
                    if engine.committed is None:
                        self._load_pins(engine)      # a moved pin goes back first, under this job
                    continue
                reserved |= {s for s in chosen if s is not None}
                head_seen = True
                continue
            is_head = not head_seen
            head_seen = True
            if port_given:
                continue                     # the port is taken this round
            port_given = True
            plan = self._plan(engine, frame, reserved, take_pins=is_head and stream_free, chosen=chosen)
            if is_head and stream_free:
                # Commit only onto a free stream: then at most one job (this one, or the one on
                # the stream) stands before a more urgent frame that comes next (the analysis's
                # one blocking term).
                engine.commit(frame)
                self.skips.claim(self._restore, frame)
                committed = frame     # it owns the port until it streams
                self._issue(engine, plan)
                reserved = reserved | plan.used
                borrowable = {s for s in plan.chosen if s is not None}
                ready_at = plan.ready_at
                late = plan.late
            else:
                if plan.loads and side_load_allowed(engine, plan.loads[0][1]) \
                        and not overtaken(engine, frame, plan.loads[0][0]):   # (made twice)
                    engine.load(plan.loads[0][1], plan.loads[0][0], "demand")
                elif is_head and (frame.arrives is None or frame.arrives <= now) \
                        and (move := pin_move(engine, frame, chosen, missing)) is not None:
                    engine.move_pin(move.into, move.to)          # the load below is hidden; M goes back
                    engine.load(move.into, move.module, "demand")   # under this frame's stream
                    plan.used = {s for s in chosen if s is not None} | {move.into}
                elif is_head and self.early_takes \
                        and (take := early_take(engine, frame, chosen, missing)) is not None:
                    engine.load(take.into, take.module, "demand")   # hidden under the stream's job
                    self._early = take
                    plan.used = {s for s in chosen if s is not None} | {take.into}
                reserved |= plan.used
        if engine.committed is None:
            self._port_idle(engine, reserved, order)

    def _plan(self, engine: EngineView, frame: Frame, keep: set[int], take_pins: bool = False,
              chosen: list[int | None] | None = None) -> LoadPlan:
        """Sources for ``frame``'s stages: a free resident slot, a slot being loaded with the
        module, a busy slot holding it (free when its job ends: with one stream, sooner than a
        new copy could be), or a victim slot to load. ``take_pins``: the frame commits now, and
        if it is an evictor it may take pinned slots when no other victim is left. ``chosen``:
        ``find_slots(frame, keep)``, if the caller has it (nothing changed since)."""
        slots = engine.slots
        if chosen is None:
            chosen, _ = engine.placement.find_slots(frame, keep)
        used = {s for s in chosen if s is not None}
        plan = LoadPlan(chosen, used)
        future = None
        waits = engine.now + engine.port.backlog_s()
        order = range(len(chosen)) if not slots.fused else widest_first(slots.platform, frame.modules)
        for i in order:                          # fused modules' victims first
            if chosen[i] is not None:
                continue
            module = frame.modules[i]
            for coming in slots.coming_with(module):
                if coming not in used:
                    used.add(coming)
                    break
            else:
                for busy in slots.busy_with(module):
                    if busy not in used and busy not in keep:
                        used.add(busy)
                        waits = max(waits, engine.placement.free_at(busy) or engine.now)
                        break
                else:
                    if future is None:
                        future = engine.foresight.need_order([frame], copies=engine.placement.copies_matter())
                    planned = {t for m, v in plan.loads for t in slots.taken_by(v, m)} if plan.loads else set()
                    victim = slots.victim(module, future, keep=keep | used, planned=planned)
                    if victim is None and take_pins:
                        victim = pinned_victim(engine, frame, module, keep | used, self.skips.slots(),
                                               put_back_skip.owes(self.skips.owed, frame),
                                               self.skip_put_backs and put_back_skip.known_releases(engine))
                    if victim is None:
                        plan.complete = False
                        continue
                    used.update(slots.taken_by(victim, module))
                    plan.loads.append((module, victim))
        plan.ready_at = max(waits, engine.now + engine.port.backlog_s()
                            + sum(engine.port.load_seconds(v) for _, v in plan.loads))
        if len(plan.loads) > 1 and take_pins and len(engine.pending) > 1 and not slots.fused:
            borrow_last(engine, frame, plan)
        return plan

    def _issue(self, engine: EngineView, plan: LoadPlan) -> None:
        """The committed frame's next load, when the port is free (one at a time: a frame that
        commits later never waits behind loads queued for another)."""
        port = engine.slots.port
        if plan.loads and port.current is None and not port.queue:
            module, victim = plan.loads[0]
            pin = engine.contract.pinned.get(victim)
            if pin is not None and pin != module:
                self._restore[victim] = pin          # an evictor takes it: it goes back after
                self.skips.took(engine)
            engine.load(victim, module, "demand")

    # ---- drops -----------------------------------------------------------------------------
    def hopeless(self, engine: EngineView, frame: Frame, missing: Sequence[str], stream_at: float) -> str | None:
        """A reason to drop ``frame`` when it certainly misses: even if the stream took it as soon
        as it frees, or its missing modules loaded back to back at the port's fastest."""
        if stream_at + frame.remaining_s > frame.deadline:      # this pass and the ones after it
            return "cannot finish by its deadline: the stream is taken until then"
        return short_of_loads(engine, frame, missing) if missing else None

    # ---- the port when no frame owns it ----------------------------------------------------
    def _port_idle(self, engine: EngineView, reserved: set[int], order: list[Frame]) -> None:
        """``order``: the frames pending when the decision began, by deadline."""
        if not engine.port.free():
            return          # (on a shared port the engine is asked again when the port frees)
        if self._load_pins(engine) or (engine.dnn_pipelines and pin_lend.lent(engine)):
            return          # (while pins are lent the port keeps to tiles and their reloads)
        if engine.changing:
            return          # no prefetch during a mode change: the partition must reach its idle instant
        # The frames waiting to start, by deadline: the decision started or dropped some of
        # ``order`` (a frame leaves pending so, and ends or starts) and added none.
        waiting = [f for f in order if f.start is None and f.outcome is None]
        work = self.port_idle_work(engine, waiting)
        if work is not None:          # (no prefetch into a slot owed to an evictor's next frame)
            work(reserved | set(self.skips.slots()) if self.skips.owed else reserved)

    def _load_pins(self, engine: EngineView, warm_up: bool = False) -> bool:
        return load_pins(engine, warm_up, self.skips.slots())

    def port_idle_work(self, engine: EngineView, waiting: list[Frame]) -> Callable[[set[int]], None] | None:
        return self.prefetcher.work(engine, waiting)

    #: The module to prefetch next (prefetch_target.py); a method, so a variant of edf may change it.
    _prefetch_target = staticmethod(prefetch_target)

"""The engine on the daemon's loop: every request that changes it is followed by taking every
event due by the clock's now; a timer on the loop wakes it for the next event (none on a virtual
clock: the test moves time with ``run_until``). Items that end are handed to ``on_ended``
(sessions.py answers them) between the engine's events, never from inside one: after the event
in which they ended and before the policy decides on it (``Engine.on_event_taken``; a frame's
answer then does not wait for the decision its end prompts, which cannot change its outcome),
and those that end inside a decision once the engine call returns. Answering touches no engine
state: the ring, the session's books and the client's socket only."""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
from collections import deque
from collections.abc import Callable

from fpgashare.daemon.host_overrun import HostOverruns, reach_s
from fpgashare.daemon.loop_latency import LoopLatency
from fpgashare.errors import FpgashareError
from fpgashare.sched.core.clock import WallClock
from fpgashare.sched.core.engine import DnnRequest, Frame

log = logging.getLogger("fpgashare.daemon")

RUN_UNTIL_POLL_S = 0.05     #: how often run_until checks that the loop still runs
RUN_UNTIL_TIMEOUT_S = 30.0  #: a loop that runs but never takes the call: a bug, raised
#: A step this much wall time after its timer's due time is the timer's own resolution (a VM's
#: timer, the loop's last poll: eventloop.py), not the host falling behind.
TIMER_TOLERANCE_WALL_S = 100e-6


class Driver:
    """Drives ``engine`` on ``clock``; ``on_ended(item)`` answers an item that ended,
    ``on_failure(exc)`` is told of an exception out of the engine (a bug: the daemon stops)."""

    def __init__(self, engine, clock, loop_latency: LoopLatency, on_ended: Callable[[Frame | DnnRequest], None],
                 on_failure: Callable[[BaseException], None]) -> None:
        self.engine, self.clock, self.loop_latency = engine, clock, loop_latency
        self.on_ended, self.on_failure = on_ended, on_failure
        self.virtual = not isinstance(clock, WallClock)
        self.dilation = getattr(clock, "dilation", 1.0)
        self.halted = False               #: once the daemon stopped on a failure: the engine is not touched again
        self.failure: BaseException | None = None     #: the first exception out of the engine
        self._ended: deque[Frame | DnnRequest] = deque()
        engine.on_finish = self._ended.append
        engine.on_event_taken = self._answer_between_events
        self._answer_failure: BaseException | None = None   # from answering inside the engine call
        self._timer: asyncio.TimerHandle | None = None   # wakes the engine for its next event
        self._timer_due: float | None = None
        self._simulated_mark = 0.0        # the clock's ``simulated_s`` when the step began
        #: The event whose decision is under way: (its due time, the clock's ``simulated_s`` when it
        #: was taken, how late it was found then: -inf if not checked).
        self._deciding: tuple[float, float, float] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        #: Steps later than the admission allows, and the misses they explain (host_overrun.py).
        self.overruns = HostOverruns(self.dilation)

    def attach(self, loop: asyncio.AbstractEventLoop) -> None:
        """The loop whose timers wake the engine (the daemon's, once it starts)."""
        self._loop = loop

    def step(self, fn, *args):
        """``fn(*args)`` on the engine, then every event now due (see ``advance``)."""
        try:
            return fn(*args)
        finally:
            self.advance()

    def overdue(self) -> bool:
        """Whether the engine's next event is already due (a request then takes it first)."""
        return self._timer_due is not None and self._timer_due <= self.clock.now()

    def advance(self) -> None:
        """Take every event due by the clock's now, answer what ended, then set the timer for
        the next event. An exception here is a bug: ``on_failure`` hears of it."""
        if self.halted:
            return
        now = self.clock.now()
        if self._timer_due is not None:
            self._observe(self._timer_due, now)     # the event the timer was set for: owed a step then
        self._simulated_mark = getattr(self.clock, "simulated_s", 0.0)
        try:
            self.engine.advance_to(now)
            self._decided()
        except Exception as exc:
            self._deciding = None
            log.critical("engine step failed; stopping the daemon", exc_info=True)
            self.failure = self.failure or exc
            self.on_failure(exc)
            return
        failure, self._answer_failure = self._answer_failure, None
        try:
            if failure is not None:
                raise failure            # as if answered here: the items after it wait, as before
            self._answer_ended()
        finally:                         # the engine is sound (answering failed, not it): without a
            self._arm()                  # timer for its next event every tenant's frames would wait

    def _arm(self) -> None:
        """Set the timer for the engine's next event (a virtual clock has none: the caller moves it)."""
        due = self.engine.next_event_s()
        if due == self._timer_due:
            return
        if self._timer is not None:
            self._timer.cancel()
        self._timer, self._timer_due = None, due
        if due is not None and not self.virtual and self._loop is not None:
            wall_due = self._loop.time() + max(0.0, (due - self.clock.now()) * self.dilation)
            self._timer = self._loop.call_at(wall_due, self._timer_fired, wall_due)

    def _answer_ended(self) -> None:
        ended, on_ended = self._ended, self.on_ended
        while ended:
            item = ended.popleft()
            if self.overruns.recent and isinstance(item, Frame):
                self._explain(item)
            on_ended(item)

    def _observe(self, due_s: float, now: float) -> None:
        """An engine event due at ``due_s`` is taken at ``now``: an overrun if later than the
        admission allows (host_overrun.py). On a wall clock only: a virtual one is never late."""
        if self.virtual:
            return
        allowed = self._allowed()
        if now - due_s > allowed or self.overruns.recent:    # (the usual event: neither)
            self.overruns.observe(due_s, now, allowed, self._reach())

    def _allowed(self) -> float:
        """How late the admission lets the loop take an event (board seconds)."""
        return getattr(self.engine, "op_delay_s", 0.0) + TIMER_TOLERANCE_WALL_S / self.dilation

    def _answer_between_events(self, due_s: float) -> None:
        """The engine took an event (due at ``due_s``): answer what ended in it before its
        decision, and check it was taken in time if a simulated operation earlier in this step held
        the loop longer than the admission allows (runtime/sched/core/clock.py, ``simulated_s``):
        the host computing a pass takes no event meanwhile, so an event due then is taken as late
        as one its timer woke late, though the step began in time. (Only then: the step's own
        bookkeeping before an event is the host's per-event cost, within the timer's tolerance.)
        A failure to answer is not the engine's: it is raised once the engine call returns
        (``advance``)."""
        self._decided()
        simulated, taken_late = getattr(self.clock, "simulated_s", 0.0), float("-inf")
        if simulated - self._simulated_mark > self._allowed():
            now = self.clock.now()
            self._observe(due_s, now)
            taken_late = now - due_s
        self._deciding = (due_s, simulated, taken_late)
        if self._answer_failure is not None or not self._ended:
            return
        try:
            self._answer_ended()
        except Exception as exc:
            self._answer_failure = exc

    def _decided(self) -> None:
        """The decision on the event taken last is over (the next event is taken, or the step
        ends): every operation it started began by now, so the clock since the event was due, less
        what simulated operations held it meanwhile (their board time, not the host's lateness),
        bounds how late the host started them, and is an overrun beyond what the admission allows.
        A step no timer was owed is checked too: a submit's, whose frame is due from its arrival
        while the loop may be descheduled before the engine decides on it, starting its pass late
        or dropping it."""
        if self._deciding is None:
            return
        due_s, mark, taken_late = self._deciding
        self._deciding = None
        until = self.clock.now() - (getattr(self.clock, "simulated_s", 0.0) - mark)
        if until - due_s > taken_late:         # (an event found late when taken: only if later still)
            self._observe(due_s, until)

    def _reach(self) -> float:
        return reach_s((p.period_s, p.deadline_s + p.jitter_s) for p in getattr(self.engine, "order", ()))

    def _explain(self, frame: Frame) -> None:
        """A frame that missed after the host overran: its reason says so. A frame dropped once
        its pipeline has left ``home`` was dropped by the removal (not a miss); one that ends late
        then was on the fabric when its pipeline left, admitted, and says so like any other."""
        if frame.outcome not in ("late", "dropped"):
            return
        if frame.outcome == "dropped" and frame.pipeline.name not in getattr(self.engine, "home", ()):
            return
        came = frame.origin if frame.origin is not None else frame.release
        why = self.overruns.explain(came - self._reach(), self.clock.now())
        if why is not None:
            frame.reason = f"{frame.reason}; {why}" if frame.reason else why
            log.warning("frame %s %s: %s", frame.key, frame.outcome, frame.reason)

    def run_until(self, t: float) -> None:
        """A virtual clock's daemon: move time to ``t`` (on the loop) and take every event due."""
        if not self.virtual:
            raise FpgashareError("run_until drives a daemon on a virtual clock only")

        def go():
            # Event by event: each is taken at its own time, not at t.
            self.advance_events(t)
            self.clock.wait_until(max(t, self.clock.now()))
            self.advance()

        if self._loop is not None and self._loop.is_running():
            done = asyncio.run_coroutine_threadsafe(_call(go), self._loop)
            # The loop may stop (the daemon's stop ends) before it runs ``go``: then nothing is left
            # to move, and the call must not wait for a loop that will never take it.
            waited = 0.0
            while True:
                try:
                    return done.result(RUN_UNTIL_POLL_S)
                except concurrent.futures.TimeoutError:
                    waited += RUN_UNTIL_POLL_S
                    if not self._loop.is_running():
                        done.cancel()
                        return
                    if waited >= RUN_UNTIL_TIMEOUT_S:
                        raise
        else:
            go()

    def advance_events(self, limit: float, until: Callable[[], bool] = lambda: False) -> None:
        """A virtual clock: take the engine's events one at a time, each at its own time, up to
        ``limit`` (or until ``until()`` holds, or the engine fails: its events are then stuck)."""
        while self.failure is None and not until() and (due := self.engine.next_event_s()) is not None \
                and due <= limit:
            self.clock.wait_until(max(due, self.clock.now()))
            self.advance()

    def _timer_fired(self, wall_due: float) -> None:
        self.loop_latency.record(self._loop.time() - wall_due)
        self._timer, self._timer_due = None, None
        self.advance()

    def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None


async def _call(fn) -> None:
    fn()

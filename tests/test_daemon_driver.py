"""The daemon's driver (runtime/daemon/driver.py), a part handed its engine and clock: every item
the engine finishes is answered exactly once, in the order it ended, at its own time, never in the
middle of an event's handling or of a decision: an item that ends in an event is answered between
that event and the decision it prompts (the engine's ``on_event_taken``), one that ends in a
decision once the engine call returns or at the next event. A failure to answer surfaces after the
engine call, not as the engine's. An exception out of the engine is reported once and the engine
is left alone after the daemon halts. A fake engine on a virtual clock, fresh generated end times
each run."""

from __future__ import annotations

import pytest
from fpgashare.daemon.driver import Driver
from fpgashare.daemon.loop_latency import LoopLatency
from fpgashare.errors import FpgashareError
from fpgashare.sched.core.clock import VirtualClock
from hypothesis import given, settings
from hypothesis import strategies as st


class FakeEngine:
    """Items end at their times, each end an event handled through ``on_finish``; after each event
    the engine calls ``on_event_taken`` with its time (if set), then decides. The decision after the end of
    item ``i`` in ``drops`` ends ``("dropped", i)`` through ``on_finish`` too."""

    def __init__(self, ends: list[float], fail_at: float | None = None, drops: frozenset[int] = frozenset()) -> None:
        self.pending = sorted((t, i) for i, t in enumerate(ends))
        self.fail_at, self.drops = fail_at, drops
        self.on_finish = None
        self.on_event_taken = None
        self.inside = None           # "event" or "decision" while in the middle of one
        self.decided: list = []      # the events whose decision has run
        self.calls = 0

    def advance_to(self, now: float) -> None:
        self.calls += 1
        if self.fail_at is not None and now >= self.fail_at:
            raise RuntimeError("engine bug")
        while self.pending and self.pending[0][0] <= now:
            item = self.pending.pop(0)
            self.inside = "event"
            self.on_finish(item)
            self.inside = None
            if self.on_event_taken is not None:
                self.on_event_taken(item[0])
            self.inside = "decision"
            if item[1] in self.drops:
                self.on_finish(("dropped", item[1]))
            self.decided.append(item)
            self.inside = None

    def next_event_s(self) -> float | None:
        return self.pending[0][0] if self.pending else None


def _driver(engine: FakeEngine, clock: VirtualClock):
    answered, failures = [], []

    def answer(item):
        assert engine.inside is None, f"answered in the middle of an {engine.inside}"
        if item[0] != "dropped":
            assert item not in engine.decided, "answered after the decision its end prompted"
        answered.append((clock.now(), item))

    return Driver(engine, clock, LoopLatency(), answer, failures.append), answered, failures


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(min_value=0.0, max_value=10.0, allow_nan=False), max_size=30),
       st.floats(min_value=0.0, max_value=12.0))
def test_every_item_is_answered_once_at_its_time_between_events(ends, horizon):
    clock = VirtualClock()
    drops = frozenset(range(0, len(ends), 3))
    engine = FakeEngine(ends, drops=drops)
    driver, answered, failures = _driver(engine, clock)
    driver.run_until(horizon)
    due = []
    for t, i in sorted((t, i) for i, t in enumerate(ends) if t <= horizon):
        due += [(t, (t, i))] + ([(t, ("dropped", i))] if i in drops else [])
    assert answered == due        # once each, in the order they ended, each at its own time
    assert clock.now() == max(horizon, 0.0) and not failures
    assert engine.next_event_s() == (min((t for t in ends if t > horizon), default=None))


def test_a_failure_to_answer_between_events_surfaces_after_the_engine_call():
    clock = VirtualClock()
    engine = FakeEngine([1.0, 1.0, 1.0])
    answered = []

    def answer(item):
        if item[1] == 0:
            raise ValueError("answer failed")
        answered.append(item)

    driver = Driver(engine, clock, LoopLatency(), answer, lambda exc: pytest.fail("not the engine's failure"))
    clock.wait_until(1.0)
    with pytest.raises(ValueError, match="answer failed"):
        driver.advance()
    assert engine.decided == [(1.0, 0), (1.0, 1), (1.0, 2)] and answered == []   # the engine call ran whole
    driver.advance()
    assert answered == [(1.0, 1), (1.0, 2)]         # the items after it answered next, as before



def test_a_failure_to_answer_still_sets_the_timer_for_the_engines_next_event():
    """On a wall clock a timer wakes the engine for its next event. When answering an item
    failed (a reply that could not be encoded), the step raised before setting it, and every
    tenant's next event waited for some other request to step the engine."""

    class Loop:                      # the daemon's loop, as the driver uses it: its time and timers
        def __init__(self) -> None:
            self.timers = []

        def time(self) -> float:
            return 0.0

        def call_at(self, when, callback, *args):
            self.timers.append(when)
            return type("Handle", (), {"cancel": lambda self: None})()

    clock = VirtualClock()
    engine = FakeEngine([1.0, 1.0, 2.5])

    def answer(item):
        if item[1] == 0:
            raise ValueError("answer failed")

    driver = Driver(engine, clock, LoopLatency(), answer, lambda exc: pytest.fail("not the engine's failure"))
    driver.virtual, loop = False, Loop()             # timers as on a wall clock
    driver.attach(loop)
    clock.wait_until(1.0)
    with pytest.raises(ValueError, match="answer failed"):
        driver.advance()
    assert loop.timers == [1.5] and engine.next_event_s() == 2.5      # woken for 2.5, 1.5 s from now


@given(st.lists(st.floats(min_value=0.0, max_value=10.0, allow_nan=False), min_size=1, max_size=10),
       st.floats(min_value=0.0, max_value=10.0))
def test_an_engine_exception_is_reported_and_the_halted_engine_left_alone(ends, fail_at):
    clock = VirtualClock()
    engine = FakeEngine(ends, fail_at=fail_at)
    driver, answered, failures = _driver(engine, clock)
    driver.run_until(10.0)
    assert len(failures) >= 1 and all(isinstance(f, RuntimeError) for f in failures)
    assert all(at < fail_at for at, _ in answered)                # nothing ended past the failure
    driver.halted = True
    calls = engine.calls
    driver.step(lambda: None)
    driver.advance()
    assert engine.calls == calls


def test_run_until_drives_a_virtual_clock_only():
    from fpgashare.sched.core.clock import WallClock

    driver = Driver(FakeEngine([]), WallClock(), LoopLatency(), lambda item: None, lambda exc: None)
    with pytest.raises(FpgashareError, match="virtual clock only"):
        driver.run_until(1.0)

"""The daemon's driver (runtime/daemon/driver.py), a part handed its engine and clock: every item
the engine finishes is answered exactly once, in the order it ended, at its own time and never from
inside an engine call; an exception out of the engine is reported once and the engine is left alone
after the daemon halts. A fake engine on a virtual clock, fresh generated end times each run."""

from __future__ import annotations

import pytest
from fpgashare.daemon.driver import Driver
from fpgashare.daemon.loop_latency import LoopLatency
from fpgashare.errors import FpgashareError
from fpgashare.sched.core.clock import VirtualClock
from hypothesis import given, settings
from hypothesis import strategies as st


class FakeEngine:
    """Items end at their times; ``advance_to`` ends every item due, through ``on_finish``."""

    def __init__(self, ends: list[float], fail_at: float | None = None) -> None:
        self.pending = sorted((t, i) for i, t in enumerate(ends))
        self.fail_at = fail_at
        self.on_finish = None
        self.inside = False
        self.calls = 0

    def advance_to(self, now: float) -> None:
        self.inside = True
        self.calls += 1
        try:
            if self.fail_at is not None and now >= self.fail_at:
                raise RuntimeError("engine bug")
            while self.pending and self.pending[0][0] <= now:
                self.on_finish(self.pending.pop(0))
        finally:
            self.inside = False

    def next_event_s(self) -> float | None:
        return self.pending[0][0] if self.pending else None


def _driver(engine: FakeEngine, clock: VirtualClock):
    answered, failures = [], []

    def answer(item):
        assert not engine.inside, "answered from inside an engine call"
        answered.append((clock.now(), item))

    return Driver(engine, clock, LoopLatency(), answer, failures.append), answered, failures


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(min_value=0.0, max_value=10.0, allow_nan=False), max_size=30),
       st.floats(min_value=0.0, max_value=12.0))
def test_every_item_is_answered_once_at_its_time_outside_the_engine(ends, horizon):
    clock = VirtualClock()
    engine = FakeEngine(ends)
    driver, answered, failures = _driver(engine, clock)
    driver.run_until(horizon)
    due = sorted((t, i) for i, t in enumerate(ends) if t <= horizon)
    assert [item for _, item in answered] == due                  # once each, in the order they ended
    assert all(at == item[0] for at, item in answered)            # each at its own time, not at the horizon
    assert clock.now() == max(horizon, 0.0) and not failures
    assert engine.next_event_s() == (min((t for t in ends if t > horizon), default=None))


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

"""A host that steps outside the admission's assumption is named: the daemon's loop taking an
engine event later than ``Board.op_delay_s`` allows (runtime/daemon/host_overrun.py) is counted,
and a frame of an admitted pipeline that then misses says so in its reason; with every event
taken on time nothing is counted and nothing is labelled.

The daemon's wall clock is driven by a fake time source (``WallClock(monotonic=...)``): the loop
is exactly as late as the test makes it."""

from __future__ import annotations

import numpy as np
import pytest
from fpgashare.backends.model import ModelBackend
from fpgashare.catalogue.platform import load_platform
from fpgashare.catalogue.workload import realtime_spec
from fpgashare.daemon.driver import Driver
from fpgashare.daemon.host_overrun import HOST_LATE, HostOverruns
from fpgashare.daemon.loop_latency import LoopLatency
from fpgashare.sched.board.board import Board
from fpgashare.sched.core.clock import WallClock
from fpgashare.sched.policies.registry import make_policy
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from tests.fake_time import FakeTime


def test_an_overrun_is_kept_coalesced_and_found_only_within_reach():
    overruns = HostOverruns(dilation=10.0)
    overruns.observe(1.000, 1.0005, allowed_s=1e-3, horizon_s=0.1)          # within what is allowed
    assert overruns.count == 0 and overruns.explain(0.0, 2.0) is None
    overruns.observe(1.010, 1.015, allowed_s=1e-3, horizon_s=0.1)           # 5 ms late: an overrun
    overruns.observe(1.0105, 1.015, allowed_s=1e-3, horizon_s=0.1)          # the same stall
    assert overruns.count == 1 and overruns.summary() == {"count": 1, "worst_ms": 5.0, "allowed_ms": 1.0}
    why = overruns.explain(1.0, 1.02)
    assert why is not None and why.startswith(HOST_LATE) and "5.000 ms late" in why and "50.0 ms of wall" in why
    assert overruns.explain(1.011, 1.02) is None                           # it was before this frame's reach
    overruns.observe(2.0, 2.0, allowed_s=1e-3, horizon_s=0.1)               # the horizon forgets it
    assert not overruns.recent and overruns.count == 1


def _daemon_board(dilation: float = 20.0):
    platform = load_platform("zcu104")
    fake = FakeTime()
    clock = WallClock(dilation, monotonic=fake)
    board = Board.whole(platform, ModelBackend(platform), lambda: make_policy("edf"), clock)
    board.parts[0].want_output = False
    ended: list = []

    def failed(exc: BaseException) -> None:
        raise exc

    driver = Driver(board, clock, LoopLatency(), ended.append, failed)
    board.begin()
    return platform, fake, clock, board, driver, ended


def _run(fake: FakeTime, clock: WallClock, board: Board, driver: Driver, until_s: float,
         releases: list[tuple[float, str]], pixels: np.ndarray, stall: tuple[float, float] | None = None) -> None:
    """Steps the driver at every event's time (a punctual loop) and submits each release at its
    time; ``stall`` (from, board seconds): the first step due after ``from`` is taken that late."""
    releases = sorted(releases)
    while True:
        due = board.next_event_s()
        nxt = releases[0][0] if releases else None
        t = min(x for x in (due, nxt, until_s) if x is not None)
        if t >= until_s:
            break
        if stall is not None and t >= stall[0]:
            t, stall = t + stall[1], None
        fake.t = max(fake.t, 1000.0 + t * clock.dilation)
        while clock.now() < t:                  # the float sum may land a hair before t
            fake.t = float(np.nextafter(fake.t, np.inf))
        if releases and releases[0][0] <= clock.now():
            _, name = releases.pop(0)
            driver.step(board.submit, name, pixels)
        else:
            driver.advance()


@pytest.mark.parametrize("stalled", [False, True])
def test_a_miss_after_the_host_overran_says_so_and_none_without(stalled):
    platform, fake, clock, board, driver, ended = _daemon_board()
    spec = realtime_spec("tight", ["gauss3x3", "sobel_mag"], 0.010, 0.0045, [480, 640], platform)
    ready: list[float] = []
    assert board.admit(spec) is None
    board.add_pipeline(spec, admitted=True, on_ready=lambda: ready.append(clock.now()))
    _run(fake, clock, board, driver, 0.5, [], np.zeros((480, 640), np.uint8))
    assert ready and board.op_delay_s == 0.0            # a host taken as free: nothing may be late
    start = ready[0] + 1e-3
    releases = [(start + k * spec.period_s, "tight") for k in range(20)]
    stall = (start + 5 * spec.period_s + 1e-4, 6e-3) if stalled else None
    _run(fake, clock, board, driver, start + 21 * spec.period_s, releases, np.zeros((480, 640), np.uint8), stall)
    frames = [f for f in ended if getattr(f, "pipeline", None) is spec or getattr(f.pipeline, "name", "") == "tight"]
    assert len(frames) == 20                            # every frame ended, once
    missed = [f for f in frames if f.outcome != "on_time"]
    if not stalled:
        assert not missed and driver.overruns.count == 0
        return
    assert missed, "a 6 ms stall of a 4.5 ms deadline must make a frame miss"
    assert all(HOST_LATE in f.reason for f in missed), [(f.key, f.outcome, f.reason) for f in missed]
    assert driver.overruns.count == 1 and driver.overruns.worst_s == pytest.approx(6e-3, abs=2e-3)
    on_time = [f for f in frames if f.outcome == "on_time"]
    assert all(HOST_LATE not in f.reason for f in on_time)



class HoldingEngine:
    """Two events due at ``t0``; the first's decision runs a simulated operation that holds the
    clock for ``wall_s`` of host time (``hardware_s`` of board time)."""

    def __init__(self, clock: WallClock, fake: FakeTime, t0: float, wall_s: float, hardware_s: float) -> None:
        self.clock, self.fake = clock, fake
        self.events = [t0, t0]
        self.wall_s, self.hardware_s = wall_s, hardware_s
        self.on_finish = self.on_event_taken = None

    def advance_to(self, horizon: float) -> None:
        while self.events and self.events[0] <= horizon:
            t = self.events.pop(0)
            self.on_event_taken(t)
            if not self.events:
                continue
            self.clock.hold()                    # the decision starts a simulated pass
            self.fake.t += self.wall_s
            self.clock.release(self.wall_s, self.hardware_s)

    def next_event_s(self) -> float | None:
        return self.events[0] if self.events else None


@settings(max_examples=200, deadline=None)
@given(st.floats(1.0, 100.0), st.floats(0.0, 0.2), st.floats(1e-5, 5e-3))
def test_an_event_a_simulated_operation_made_late_within_a_step_is_counted(dilation, wall_s, hardware_s):
    """A step that begins in time may still take an event late: a simulated operation the step
    ran before it held the loop (the host computing a pass: its host time below the hardware's,
    or the hardware's beyond it). The driver counts it exactly when the operation moved the clock
    by more than the admission allows, and by as much."""
    fake = FakeTime()
    clock = WallClock(dilation, monotonic=fake)
    fake.t += 1.0 * dilation                     # board time 1.0: both events due, the timer punctual
    while clock.now() < 1.0:                     # (the float sum may land a hair before)
        fake.t = float(np.nextafter(fake.t, np.inf))
    engine = HoldingEngine(clock, fake, 1.0, wall_s, hardware_s)
    driver = Driver(engine, clock, LoopLatency(), lambda item: None, lambda exc: None)
    driver._timer_due = 1.0
    late = clock.now() - 1.0 + min(wall_s / dilation, hardware_s)   # the second event, taken after it
    allowed = 100e-6 / dilation                  # a host taken as free: the timer's tolerance only
    assume(abs(late - allowed) > 1e-9)           # (not on a float's edge)
    driver.advance()
    assert driver.overruns.count == int(late > allowed), (late, allowed)
    if late > allowed:
        assert driver.overruns.worst_s == pytest.approx(late, abs=1e-9)


@pytest.mark.parametrize("stall_s", [0.0, 6e-3])
@pytest.mark.parametrize("where", ["before the decision", "while the pass starts"])
def test_a_stall_between_a_frames_arrival_and_its_pass_is_named(stall_s, where):
    """The loop takes a submit in time (no timer is owed: the board is idle) and is descheduled
    before the engine decides on the frame (it can no longer start in time: dropped) or while the
    decision starts its pass (it starts that late: late), though no event was taken late by a
    timer. Its deadline counts from when it came, so a stall that makes it miss must be counted
    and named like any other; no stall, nothing counted and the frame on time."""
    platform, fake, clock, board, driver, ended = _daemon_board()
    spec = realtime_spec("tight", ["gauss3x3", "sobel_mag"], 0.010, 0.0045, [480, 640], platform)
    assert board.admit(spec) is None
    board.add_pipeline(spec, admitted=True)
    pixels = np.zeros((480, 640), np.uint8)
    _run(fake, clock, board, driver, 0.5, [], pixels)

    def stall() -> None:
        fake.t += stall_s * clock.dilation      # the host runs another process meanwhile

    def submit(name: str, frame_pixels: np.ndarray):
        frame = board.submit(name, frame_pixels)
        if where == "before the decision":
            stall()
        return frame

    backend = board.parts[0].backend
    start_frame = backend.start_frame

    def starting(*args, **kwargs):
        if where == "while the pass starts":
            stall()
        return start_frame(*args, **kwargs)

    backend.start_frame = starting
    assert board.next_event_s() is None         # idle: the submit's step is owed no timer
    frame = driver.step(submit, "tight", pixels)
    _run(fake, clock, board, driver, clock.now() + 0.1, [], pixels)
    assert frame.outcome is not None and [item for item in ended if item is frame] == [frame]
    if not stall_s:
        assert frame.outcome == "on_time" and driver.overruns.count == 0
        return
    assert frame.outcome == ("dropped" if where == "before the decision" else "late"), frame.reason
    assert HOST_LATE in frame.reason, frame.reason
    assert driver.overruns.count == 1 and driver.overruns.worst_s == pytest.approx(stall_s, abs=1e-3)

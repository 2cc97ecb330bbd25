"""A simulated board's host time is not board time. A daemon on the model (or sim) backend computes
each operation on the host while its wall clock is held (``WallClock.hold`` / ``release``,
runtime/sched/core/clock.py): the operation lasts its hardware time on the clock from the instant
it started, however long the host took to compute it, so the pass a decision starts begins on the
board then, not once the host has computed its pixels (which the admission counts nowhere).

Generated episodes (the daemon path's apps, benchmarks/daemon_path_soundness.py) run through the
daemon's driver on a wall clock whose time source the test moves (a virtual clock), the backend
taking host time for every load, pass and batch: below its hardware time (the model at a large
dilation, as in the fleet tests) or beyond it (the RTL simulation). Every frame of an admitted
pipeline that misses must name the host (runtime/daemon/host_overrun.py): the host may run the loop
late, but its computing must never pass for the board's time unnamed."""

from __future__ import annotations

import heapq
import random
from collections import Counter

import numpy as np
from fpgashare.backends.model import ModelBackend
from fpgashare.catalogue.workload import PipelineSpec
from fpgashare.daemon.driver import Driver
from fpgashare.daemon.host_overrun import HOST_LATE
from fpgashare.daemon.loop_latency import LoopLatency
from fpgashare.dnn.planning import network
from fpgashare.sched.board.board import Board
from fpgashare.sched.board.board_admission import split_slots
from fpgashare.sched.core.clock import WallClock
from fpgashare.sched.policies.registry import make_policy
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from benchmarks.daemon_path_soundness import LEFT, episode
from tests.fake_time import FakeTime


class ComputingModel(ModelBackend):
    """The model backend whose every operation takes host time on ``fake``: ``factor`` x its
    hardware time x the clock's dilation (below 1: faster than the hardware; above: slower).
    Its hold of the clock measures that host time on ``fake`` too."""

    def __init__(self, platform, fake: FakeTime, rng: random.Random, factors: tuple[float, float],
                 dilation: float) -> None:
        super().__init__(platform)
        self.fake, self.rng, self.factors, self.dilation = fake, rng, factors, dilation

    def _compute(self, hardware_s: float) -> None:
        self.fake.t += self.rng.uniform(*self.factors) * hardware_s * self.dilation

    def _load(self, slot, module):
        report = super()._load(slot, module)
        self._compute(report.seconds)
        return report

    def _run_frame(self, slots, stages, frame, want_output):
        report = super()._run_frame(slots, stages, frame, want_output)
        self._compute(report.seconds)
        return report

    def _run_dnn(self, slots, model, plan, images):
        report = super()._run_dnn(slots, model, plan, images)
        self._compute(report.seconds)
        return report

    def _hold(self) -> float:
        super()._hold()
        return self.fake.t

    def _release(self, started: float, hardware_s: float) -> None:
        self.held_clock.release(self.fake.t - started, hardware_s)


def replay(seed: int, factors: tuple[float, float], dilation: float) -> dict:
    """Episode ``seed`` of the daemon path through the daemon's driver, every operation taking
    host time; its frames, the daemon's ended items and the driver."""
    platform, streams, apps, bursts, duration = episode(seed)
    rng = random.Random(seed ^ 0x5EED)
    fake = FakeTime()
    clock = WallClock(dilation, monotonic=fake)
    backend = ComputingModel(platform, fake, random.Random(seed ^ 0xC0DE), factors, dilation)
    backend.held_clock = clock                   # as the daemon sets it for a simulated board
    if streams == 1 or rng.random() < 0.5:
        board = Board.whole(platform, backend, lambda: make_policy("edf"), clock, cap=streams)
    else:
        board = Board(platform, backend, lambda: make_policy("edf"), clock, split_slots(platform, streams))
    for _, part in board.every():
        part.want_output = False
    ended: list = []

    def failed(exc: BaseException) -> None:
        raise exc

    driver = Driver(board, clock, LoopLatency(), ended.append, failed)
    board.begin()

    def at(t: float) -> None:                    # the host's time moves on to board time t (never back)
        fake.t += max(0.0, t - clock.now()) * dilation
        while clock.now() < t:                   # the float sum may land a hair before t
            fake.t = float(np.nextafter(fake.t, np.inf))

    queue: list = []
    order = iter(range(1 << 62))

    def push(t: float, rank: int, kind: str, item) -> None:
        heapq.heappush(queue, (t, rank, next(order), kind, item))

    for app in apps:
        push(app.register_s, 0, "register", app)
        if app.leave_s is not None:
            push(app.leave_s, 2, "leave", app)
    dnn = PipelineSpec("dnn", "besteffort", model="digits_cnn") \
        if bursts and "dnn_tile" in platform.modules else None
    if dnn is not None:
        push(0.0, 0, "register-dnn", dnn)
        for t, n, _ in bursts:
            push(t, 1, "burst", n)
    admitted, left, frames = set(), set(), []

    def ready(app) -> None:                      # the camera starts once the registration returns
        start = clock.now() + rng.uniform(0.0, app.spec.period_s)
        k = 0
        while (t := start + k * app.spec.period_s) < duration:
            push(t + rng.uniform(0.0, app.spec.jitter_s), 1, "frame", app)
            k += 1

    pixels = {a.spec.name: np.zeros(a.spec.stages[0].kind.input_shape(*a.spec.frame), np.uint8) for a in apps}
    while queue or ((due := board.next_event_s()) is not None and due <= duration + 2.0):
        due = board.next_event_s()
        if queue and (due is None or queue[0][0] <= due):     # an app's action first, at a tie
            t, _, _, kind, item = heapq.heappop(queue)
            at(t)
        else:
            at(due)
            driver.advance()
            continue
        if kind == "register":
            if board.busy:                       # a re-layout waits: register again a little later
                push(clock.now() + 1e-3, 0, "register", item)
                continue
            if driver.step(board.admit, item.spec):
                continue
            admitted.add(item.spec.name)
            driver.step(board.add_pipeline, item.spec, True, lambda a=item: ready(a),
                        lambda _why, name=item.spec.name: admitted.discard(name))
        elif kind == "register-dnn":
            driver.step(board.add_pipeline, item)
        elif kind == "leave" and item.spec.name in admitted:
            left.add(item.spec.name)
            driver.step(board.remove_pipeline, item.spec.name, LEFT)
        elif kind == "frame" and item.spec.name in admitted and item.spec.name not in left:
            frames.append(driver.step(board.submit, item.spec.name, pixels[item.spec.name]))
        elif kind == "burst":
            shape = network(dnn.model).input_shape
            for _ in range(item):
                driver.step(board.submit_dnn, "dnn", np.zeros(shape, np.uint8))
        else:
            driver.advance()
    for name in sorted(admitted - left):
        driver.step(board.remove_pipeline, name, LEFT)
    if dnn is not None:
        driver.step(board.remove_pipeline, "dnn", LEFT)
    while (due := board.next_event_s()) is not None:
        at(due)
        driver.advance()
    return {"frames": frames, "ended": ended, "driver": driver}


def _misses(frames: list) -> list:
    """Frames that did not end on time as the app sees it (those its app withdrew apart)."""
    return [f for f in frames if not (f.outcome == "dropped" and f.reason == LEFT)
            and not (f.outcome == "on_time" and f.end is not None and f.end <= f.origin + f.pipeline.due_s + 1e-9)]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(st.integers(0, 2**31 - 1), st.sampled_from([(0.0, 0.3), (0.3, 1.0), (1.0, 4.0)]),
       st.sampled_from([1.0, 20.0, 50.0]))
def test_a_pass_starts_when_the_engine_starts_it_however_long_the_host_computes(seed, factors, dilation):
    """Every frame's first pass began on the board at the instant the engine started the frame:
    the host's computing of it, faster or slower than the hardware, is not board time."""
    run = replay(seed, factors, dilation)
    started = [f for f in run["frames"] if f.start is not None and f.streamed]
    assume(started)                              # (an episode whose apps were all refused: nothing to see)
    for frame in started:
        assert frame.streamed[0][0] == frame.start, (frame.key, frame.start, frame.streamed[0])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 2**31 - 1), st.sampled_from([(0.0, 0.3), (0.3, 1.0), (1.0, 4.0)]),
       st.sampled_from([20.0, 50.0]))
def test_admitted_frames_miss_only_where_the_daemon_names_its_host(seed, factors, dilation):
    """The daemon path's episodes with a computing host: every frame ends exactly once, and an
    admitted frame that misses says the host ran the loop late (no miss passes for the schedule's)."""
    run = replay(seed, factors, dilation)
    frames = run["frames"]
    told = Counter(id(item) for item in run["ended"])
    assert all(told[id(f)] == 1 for f in frames)
    unnamed = [(f.key, f.outcome, f.reason) for f in _misses(frames) if HOST_LATE not in f.reason]
    assert not unnamed, unnamed

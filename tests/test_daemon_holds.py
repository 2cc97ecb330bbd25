"""edf's holds on the daemon's path (runtime/sched/analysis/mode_change.py, "Holds"): every mode
change brings the new set's hold budgets, no frame is held while a change is under way, and with
every frame held for its whole budget outside changes no admitted frame misses."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from fpgashare.backends.model import ModelBackend
from fpgashare.catalogue.platform import load_platform
from fpgashare.catalogue.workload import realtime_spec
from fpgashare.sched.analysis.holds import room
from fpgashare.sched.board.board import Board
from fpgashare.sched.core.clock import VirtualClock
from fpgashare.sched.policies import hold
from fpgashare.sched.policies.registry import make_policy
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchmarks.daemon_path_soundness import replay as daemon_episode
from benchmarks.online_streams_soundness import replay as streams_run
from tests.hold_everything import hold_everything as hold_everything_rule


@pytest.fixture
def hold_everything(monkeypatch):
    monkeypatch.setattr(hold.Holds, "held", hold_everything_rule)


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(st.integers(0, 2**32 - 1))
def test_apps_that_come_and_go_miss_nothing_with_frames_held_for_their_whole_budget(hold_everything, seed):
    r = daemon_episode(seed)
    assert r["missed"] == 0 and r["ended_twice"] == 0 and r["unended"] == 0, r


@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                HealthCheck.function_scoped_fixture])
@given(st.integers(0, 2**32 - 1), st.integers(1, 4))
def test_a_daemons_board_misses_nothing_with_frames_held_for_their_whole_budget(hold_everything, seed, streams):
    r = streams_run(seed, streams, max_s=0.5)
    assert r["missed"] == 0, r


def test_a_mode_change_brings_the_new_sets_budgets(hold_everything):
    platform = load_platform("pynq-z2")
    board = Board.whole(platform, ModelBackend(platform), lambda: make_policy("edf"), VirtualClock())
    board.parts[0].want_output = False
    board.begin()
    a = realtime_spec("a", ["conv3x3"], 0.020, 0.018, [240, 320], platform)
    b = realtime_spec("b", ["median3x3", "erode3x3"], 0.040, 0.036, [240, 320], platform)
    part = board.parts[0]
    ready = []
    board.add_pipeline(a, on_ready=lambda: ready.append("a"))
    board.add_pipeline(b, on_ready=lambda: ready.append("b"))
    while len(ready) < 2 and (due := board.next_event_s()) is not None and due <= 1.0:
        board.clock.wait_until(max(due, board.clock.now()))
        board.advance_to(due)
    assert ready == ["a", "b"] and not part.members.changes.active
    rooms = {p.name: room(p) for p in (a, b)}
    assert part.contract.holds and all(0.0 < h <= rooms[name] for name, h in part.contract.holds.items())
    frames = []
    for _ in range(4):
        frames += [board.submit("a", np.zeros((240, 320), np.uint8)), board.submit("b", np.zeros((240, 320), np.uint8))]
        while (due := board.next_event_s()) is not None and due <= board.clock.now() + 0.04:
            board.clock.wait_until(max(due, board.clock.now()))
            board.advance_to(due)
    assert all(f.outcome == "on_time" for f in frames)
    assert part.policy.held.record


def test_edf_holds_no_frame_while_a_change_is_under_way():
    """The rule the mode-change argument rests on (hold.py): whatever the budgets and frames."""
    frame = SimpleNamespace(release=0.0, pipeline=SimpleNamespace(name="p", deadline_s=1.0), deadline=1.0,
                            start=None, step=0, arrives=None, key="p/0")
    engine = SimpleNamespace(contract=SimpleNamespace(holds={"p": 0.5}), changing=True, now=0.0, committed=None)
    assert hold.Holds().held(engine, [frame], lambda f: [0]) == []


def test_hold_budgets_come_with_the_registrations_trial_never_on_the_daemons_loop(tmp_path, monkeypatch, fresh_seed):
    """Each hold budget re-runs the admission test (several times a pipeline): computed in a mode
    change on the daemon's loop, a tenant's registrations and closes froze every other tenant's
    frames for as long (seconds with a few dozen pipelines). They come with the registration's trial
    on a worker; a departure's change brings none."""
    import asyncio
    import random
    import threading

    from fpgashare.client import DaemonError, connect
    from fpgashare.daemon import Daemon, DaemonThread
    from fpgashare.sched.analysis import holds
    from fpgashare.sched.host.host_cost import HostCost

    where = []
    budgets = holds.hold_budgets

    def recorded(*args, **kw):
        where.append("loop" if asyncio._get_running_loop() is not None else threading.current_thread().name)
        return budgets(*args, **kw)

    monkeypatch.setattr(holds, "hold_budgets", recorded)
    rng = random.Random(fresh_seed)
    sock = tmp_path / "d.sock"
    daemon = Daemon(ModelBackend(load_platform("pynq-z2")), sock, clock=VirtualClock(), host_cost=HostCost())
    stages = ["gauss3x3", "median3x3", "erode3x3", "dilate3x3", "sobel_mag", "threshold", "box3x3"]
    with DaemonThread(daemon), connect(sock) as app, connect(sock) as tenant:
        app.pipeline("a", ["conv3x3"], period_ms=20.0, deadline_ms=18.0, frame_shape=(240, 320))
        tenant.pipeline("b", ["median3x3", "erode3x3"], period_ms=40.0, deadline_ms=36.0, frame_shape=(240, 320))
        assert daemon.engine.parts[0].contract.holds          # a registration still brings its budgets
        for n in range(6):                                    # a tenant's registrations and closes
            period = rng.choice([20.0, 40.0, 100.0])
            try:
                tenant.pipeline(f"x{n}", rng.sample(stages, rng.randint(1, 2)), period_ms=period,
                                frame_shape=(240, 320)).close()
            except DaemonError as exc:
                assert exc.kind == "admission", (fresh_seed, exc)
        tenant.pipelines["b"].close()
        app.clock()
    assert where and "loop" not in where, (fresh_seed, where)

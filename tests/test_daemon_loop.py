"""Nothing slow runs on the daemon's loop: a registration whose placement measures host stages
(``fallback="cpu"``) waits on a worker while other apps' frames and requests go on, and past its
time limit it is refused, typed; the loop's own dispatch delay is in status and the metrics."""

from __future__ import annotations

import threading
import urllib.request

import numpy as np
import pytest
from fpgashare.backends import make_backend
from fpgashare.backends.simrun import resolve_chain
from fpgashare.catalogue.platform import load_platform
from fpgashare.catalogue.vision_ref import chain_reference
from fpgashare.client import AdmissionRejected, connect
from fpgashare.daemon import Daemon, DaemonThread
from fpgashare.sched.core.clock import VirtualClock
from fpgashare.sched.host.cpu_work import ModelledCpuCost
from fpgashare.sched.host.host_cost import HostCost

from tests.test_cpu_fallback import EDGES, without_modules

SHAPE = (48, 64)


class StuckCost(ModelledCpuCost):
    """A host measurement that takes as long as the test says (``release``): a 1080p chain measured
    candidate after candidate on a slow board, made to last exactly as long as needed."""

    def __init__(self) -> None:
        super().__init__()
        self.started, self.release = threading.Event(), threading.Event()

    def measure(self, stages, rows, cols) -> float:
        self.started.set()
        self.release.wait(60)
        return super().measure(stages, rows, cols)


@pytest.mark.parametrize("limit_s", [60.0, 0.3])
def test_a_slow_placement_waits_on_a_worker_while_frames_go_on(tmp_path, limit_s, fresh_seed):
    cost = StuckCost()
    platform = load_platform(without_modules(tmp_path, "pynq-z2", {"sobel_mag"}))
    sock = tmp_path / "d.sock"
    daemon = Daemon(make_backend("model", platform), sock, clock=VirtualClock(), cpu_cost=cost)
    daemon.off_loop.limit_s = limit_s
    frame = np.random.default_rng(fresh_seed).integers(0, 256, SHAPE, dtype=np.uint8)
    want = chain_reference(resolve_chain(["threshold"], {}), frame)
    with DaemonThread(daemon), connect(sock, timeout=30) as app, connect(sock, timeout=30) as slow:
        pipe = app.pipeline("app", ["threshold"], period_ms=10.0, frame_shape=SHAPE)
        outcome: dict = {}

        def register() -> None:
            try:
                outcome["pipe"] = slow.pipeline("edges", EDGES, period_ms=33.3, frame_shape=SHAPE, fallback="cpu")
            except AdmissionRejected as exc:
                outcome["refused"] = str(exc)

        registering = threading.Thread(target=register)
        registering.start()
        assert cost.started.wait(30), fresh_seed
        if limit_s < 1:
            registering.join(30)              # refused at the limit, the measurement still stuck
            assert "took longer than the time limit of 0.3 s" in outcome["refused"], fresh_seed
        for k in range(20):                   # the measurement is stuck meanwhile: the loop is not
            daemon.run_until(0.05 + k * 0.010)
            future = pipe.submit(frame)
            assert app.clock() >= 0 and app.status()["loop"]["samples"] >= 0, fresh_seed
            daemon.run_until(0.05 + (k + 1) * 0.010)
            assert np.array_equal(future.result(timeout=10), want), fresh_seed
        cost.release.set()
        registering.join(30)
        if limit_s > 1:
            on_cpu = [stage for stage, where in outcome["pipe"].placement if where == "cpu"]
            assert on_cpu == ["sobel_mag", "threshold"], (fresh_seed, on_cpu)
    assert daemon.per_pipeline["app"]["outcomes"] == {"on_time": 20}, fresh_seed


def test_the_loops_dispatch_delay_is_exported(tmp_path):
    sock = tmp_path / "d.sock"
    # A host taken as free: at dilation 1 the host's reserve measured here may leave a 10 ms
    # deadline no time (tests/test_host_cost.py), and this test is about the metrics.
    daemon = Daemon(make_backend("model", load_platform("zcu104")), sock, metrics_port=0, host_cost=HostCost())
    with DaemonThread(daemon), connect(sock) as fpga:
        pipe = fpga.pipeline("p", ["threshold"], period_ms=10.0, frame_shape=SHAPE)
        for _ in range(5):
            pipe.submit(np.zeros(SHAPE, np.uint8)).result(timeout=30)
        loop = fpga.status()["loop"]
        text = urllib.request.urlopen(f"http://127.0.0.1:{daemon.metrics_port}/metrics", timeout=5).read().decode()
    assert loop["samples"] > 0 and 0 <= loop["p50_ms"] <= loop["p99_ms"] <= loop["max_ms"]
    assert "fpgashare_loop_dispatch_delay_seconds_count" in text


def test_a_trial_past_its_time_limit_never_becomes_another_registrations_choice(tmp_path, monkeypatch, fresh_seed):
    """A tenant's admission trial overruns its time limit (refused) and finishes on its worker
    after another client registered the same name with other stages: the late trial's choice (its
    spec, its partition) must not be what the newcomer's registration takes, nor be left behind."""
    from fpgashare.sched.board.board import Board

    from tests.test_daemon_validation import trials_left

    late_stages, now_stages = ["threshold"], ["gauss3x3"]
    go_late, late_done = threading.Event(), threading.Event()
    original = Board.admission_test

    def gated(self, spec, *args, **kw):
        test = original(self, spec, *args, **kw)
        if spec.period_s == 0.050:                     # the overrunning trial: done once the other's is
            def late():
                go_late.wait(60)
                try:
                    return test()
                finally:
                    late_done.set()
            return late
        if spec.period_s == 0.040:                     # the current one: the late trial lands after it
            def current():
                why = test()
                go_late.set()
                late_done.wait(60)
                return why
            return current
        return test

    monkeypatch.setattr(Board, "admission_test", gated)
    sock = tmp_path / "d.sock"
    daemon = Daemon(make_backend("model", load_platform("zcu104")), sock, clock=VirtualClock(), host_cost=HostCost())
    daemon.off_loop.limit_s = 0.3
    frame = np.random.default_rng(fresh_seed).integers(0, 256, SHAPE, dtype=np.uint8)
    with DaemonThread(daemon), connect(sock, timeout=30) as attacker, connect(sock, timeout=30) as app:
        with pytest.raises(AdmissionRejected, match="took longer than the time limit"):
            attacker.pipeline("cam", late_stages, period_ms=50.0, frame_shape=SHAPE)
        daemon.off_loop.limit_s = 60.0                 # the app's own trial: all the time it needs
        pipe = app.pipeline("cam", now_stages, period_ms=40.0, frame_shape=SHAPE)
        assert late_done.is_set(), fresh_seed
        assert [p.period_s for p in daemon.engine.pipelines] == [0.040], fresh_seed
        future = pipe.submit(frame)
        app.clock()                                    # the submit was taken (requests go in order)
        daemon.run_until(daemon.clock.now() + 0.05)
        want = chain_reference(resolve_chain(now_stages, {}), frame)
        assert np.array_equal(future.result(timeout=10), want), fresh_seed
        assert trials_left(daemon) == {}, fresh_seed


def test_a_departure_during_a_registrations_trial_has_it_tried_again_on_a_worker(tmp_path, monkeypatch, fresh_seed):
    """A tenant closes a pipeline while another registration's trial runs (its own, on another
    connection): the trial's verdict is for a set that changed, and the engine would analyse the
    newcomer again on the daemon's loop, holding up every frame. It is tried again on a worker."""
    import asyncio

    from fpgashare.sched.board import registrations
    from fpgashare.sched.board.board import Board

    where, verdict = [], registrations.join_verdict

    def recorded(before, loads, spec, *args, **kw):
        if spec.name == "late":
            where.append("loop" if asyncio._get_running_loop() is not None else "worker")
        return verdict(before, loads, spec, *args, **kw)

    monkeypatch.setattr(registrations, "join_verdict", recorded)
    started, closed = threading.Event(), threading.Event()
    original = Board.admission_test

    def gated(self, spec, *args, **kw):
        test = original(self, spec, *args, **kw)
        if not spec.name.startswith("late") or started.is_set():
            return test

        def after_a_close():
            started.set()
            closed.wait(60)
            return test()
        return after_a_close

    monkeypatch.setattr(Board, "admission_test", gated)
    rng = np.random.default_rng(fresh_seed)
    sock = tmp_path / "d.sock"
    daemon = Daemon(make_backend("model", load_platform("zcu104")), sock, clock=VirtualClock(), host_cost=HostCost(),
                    streams=1)                        # one partition: a newcomer joins it (no re-layout)
    with DaemonThread(daemon), connect(sock, timeout=30) as closer, connect(sock, timeout=30) as registrar:
        own = ["threshold", "erode3x3", "dilate3x3", "median3x3"]     # each its own module: pinned for it alone
        pipes = [closer.pipeline(f"p{k}", [stage], period_ms=float(rng.choice([20.0, 50.0])), frame_shape=SHAPE)
                 for k, stage in enumerate(own[:int(rng.integers(1, 5))])]
        changes = daemon.engine.parts[0].members.changes
        version = changes.version
        outcome: dict = {}
        registering = threading.Thread(target=lambda: outcome.update(pipe=registrar.pipeline(
            "late", ["gauss3x3"], period_ms=40.0, frame_shape=SHAPE)))
        registering.start()
        assert started.wait(30), fresh_seed
        pipes[int(rng.integers(len(pipes)))].close()       # a departure: a mode change asked meanwhile
        assert changes.version > version, fresh_seed       # (its pins given back)
        closed.set()
        registering.join(30)
        assert "pipe" in outcome and "late" in daemon.states, fresh_seed
    assert where == ["worker", "worker"], (fresh_seed, where)    # its trial, then once more for the set left


def test_a_clients_network_is_read_on_a_worker_never_on_the_daemons_loop(tmp_path, monkeypatch, fresh_seed):
    """Reading a network file of a few hundred members took milliseconds of the loop (tens on a
    board's CPU) per ``dnn`` registration, refused or not: many times what the request is charged
    of its user's rate, every tenant's frames waiting meanwhile. It is read on a worker; a bad one
    is still refused by name and a good one still runs."""
    import asyncio

    from fpgashare.client import DaemonError
    from fpgashare.client.pipeline import DnnPipeline
    from fpgashare.dnn import network_wire

    from tests.hostile_networks import hostile_network, small_network

    where = []
    read = network_wire.network_from_wire

    def recorded(*args, **kw):
        where.append("loop" if asyncio._get_running_loop() is not None else threading.current_thread().name)
        return read(*args, **kw)

    monkeypatch.setattr(network_wire, "network_from_wire", recorded)
    rng = np.random.default_rng(fresh_seed)
    sock = tmp_path / "d.sock"
    daemon = Daemon(make_backend("model", load_platform("zcu104")), sock, dilation=20.0, host_cost=HostCost())
    with DaemonThread(daemon), connect(sock) as tenant:
        _, bad = hostile_network(rng)
        with pytest.raises(DaemonError, match="network for 'm'") as err:
            tenant.request("dnn", name="bad", model="m", network=bad)
        assert err.value.kind == "bad_request", fresh_seed
        fields = {"name": "good", "model": "m", "network": network_wire.network_bytes(small_network(rng))}
        answer = tenant.request("dnn", **fields)
        pipe = DnnPipeline(tenant, "good", tenant._attach(answer), answer, fields)
        image = rng.integers(0, 256, pipe.ring.spec.in_shape, dtype=np.uint8)
        assert pipe.submit(image).result(timeout=20).dtype == np.int8, fresh_seed
    assert len(where) == 2 and "loop" not in where, (fresh_seed, where)


def test_other_tenants_networks_never_make_a_models_batches_rebuild_it_on_the_loop(tmp_path, monkeypatch, fresh_seed):
    """A batch's setup reads its model's network and load stream on the daemon's loop. Kept in
    caches of a few entries, they were evicted by another tenant's networks in use (8 were
    enough), and each of the model's batches rebuilt its network there (digits_cnn: ~7 ms of the
    loop, every tenant's frames waiting). Whatever the networks beside it, a model in use is
    built once."""
    import asyncio

    from fpgashare.client.pipeline import DnnPipeline
    from fpgashare.dnn import planning
    from fpgashare.dnn.network_wire import network_bytes

    from tests.hostile_networks import small_network

    built = []
    get_model = planning.get_model

    def recorded(name):
        built.append((name, asyncio._get_running_loop() is not None))
        return get_model(name)

    monkeypatch.setattr(planning, "get_model", recorded)
    rng = np.random.default_rng(fresh_seed)
    sock = tmp_path / "d.sock"
    daemon = Daemon(make_backend("model", load_platform("zcu104")), sock, dilation=20.0, host_cost=HostCost())
    with DaemonThread(daemon), connect(sock) as app, connect(sock) as a, connect(sock) as b:
        mine = app.dnn("digits", model="digits_cnn")
        image = np.zeros(mine.ring.spec.in_shape, np.uint8)
        mine.submit(image).result(timeout=30)                 # built by now, wherever
        others = []
        for i in range(8):                                    # as many as two connections may hold
            tenant = (a, b)[i % 2]
            fields = {"name": f"n{i}", "model": "m", "network": network_bytes(small_network(rng))}
            answer = tenant.request("dnn", **fields)
            others.append(DnnPipeline(tenant, f"n{i}", tenant._attach(answer), answer, fields))
        built.clear()
        for _ in range(6):
            futures = [p.submit(rng.integers(0, 256, p.ring.spec.in_shape, dtype=np.uint8)) for p in others]
            mine.submit(image).result(timeout=30)
            for future in futures:
                future.result(timeout=30)
    assert ("digits_cnn", True) not in built, (fresh_seed, built)
    # Kept until the registry drops a network (network_wire.Registry makes room): then it goes.
    gone = next(name for name in planning._NETWORKS if name.startswith("m-"))
    planning.forget(gone)
    assert gone not in planning._NETWORKS and not any(k[0] == gone for k in planning._WORDS), fresh_seed
    assert "digits_cnn" in planning._NETWORKS, fresh_seed

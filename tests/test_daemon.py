"""The daemon and the client API, in one process (the daemon on its own thread and event loop) and
with client processes: frames through shared memory equal OpenCV's, bad requests get named errors
while others carry on, a killed client leaves nothing behind."""

from __future__ import annotations

import asyncio
import multiprocessing as mp
import os
import re
import signal
import socket
import struct
import threading
import time

import msgpack
import numpy as np
import pytest
from fpgashare.backends import make_backend
from fpgashare.backends.simrun import resolve_chain
from fpgashare.catalogue.platform import load_platform
from fpgashare.catalogue.vision_ref import chain_reference
from fpgashare.client import AdmissionRejected, DaemonError, connect
from fpgashare.daemon import Daemon, DaemonThread
from fpgashare.errors import FrameError
from fpgashare.wire.protocol import VERSION, encode

from tests.fork_child import in_fork_child, told_forked

SHAPE = (60, 80)
CHAIN = ["gauss3x3", "sobel_mag", "threshold"]


class RunningDaemon(DaemonThread):
    """A daemon on the model backend (or ``backend``) on its own thread. The host is taken as
    free (a reserve of 0): what these tests check is the daemon's behaviour, and a calibration on a
    busy machine could refuse their pipelines for the host's sake (test_host_cost.py checks that,
    on a virtual clock)."""

    def __init__(self, path, dilation=20.0, platform="zcu104", backend=None):
        backend = backend or make_backend("model", load_platform(platform))
        super().__init__(Daemon(backend, path, dilation=dilation, host_reserve_s=0.0))


@pytest.fixture
def sock(tmp_path):
    return tmp_path / "fpgashare.sock"


def frames(n, seed=0, shape=SHAPE):
    rng = np.random.default_rng(seed)
    return [rng.integers(0, 256, shape, dtype=np.uint8) for _ in range(n)]


def test_frames_round_trip_and_equal_opencv(sock):
    with RunningDaemon(sock) as daemon, connect(sock) as fpga:
        assert oct(os.stat(sock).st_mode & 0o777) == "0o660"
        assert fpga.platform == "zcu104" and fpga.dilation == 20.0
        edges = fpga.pipeline("edges", CHAIN, period_ms=20.0, frame_shape=SHAPE)
        stages = resolve_chain(CHAIN, {})
        for frame in frames(6):
            assert np.array_equal(edges.submit(frame).result(timeout=10), chain_reference(stages, frame))
        # The daemon's clock is dilated: it moves at most 1/20 of the wall time around the two
        # readings (it only ever stands still beyond that), and at least about 1/20 of the sleep
        # between them. A fixed upper bound would ride on how long the host took to answer.
        w0 = time.monotonic()
        t0 = fpga.clock()
        time.sleep(0.1)                                                  # real waiting: the wall clock
        t1 = fpga.clock()
        w1 = time.monotonic()
        assert 0.1 / 20 * 0.5 < t1 - t0 <= (w1 - w0) / 20 + 1e-9, (t1 - t0, w1 - w0)
        status = fpga.status()
        assert status["outcomes"]["on_time"] == 6
        assert {"slot", "state", "module", "utilization"} <= set(status["slots"][0])
        assert status["pipelines"]["edges"]["outcomes"] == {"on_time": 6}
        assert status["pipelines"]["edges"]["miss_rate"] == 0.0
        assert status["clients"][0]["pipelines"] == ["edges"]
        # The ring is private: nothing in /dev/shm names it, the daemon holds it while registered.
        assert not [n for n in os.listdir("/dev/shm") if edges.ring.spec.name in n]
        assert list(daemon.states) == ["edges"]
        edges.close()
        assert daemon.states == {}
    assert not sock.exists()


def test_four_clients_share_the_fabric(sock):
    chains = [CHAIN, ["downscale2x", "box3x3"], ["sharpen3x3"], ["threshold"]]
    results = {}

    def app(i):
        try:
            # Registrations are taken one at a time, each with its mode change at dilation 100:
            # the later ones wait for the earlier, longer than the default 5 s on a loaded host.
            with connect(sock, timeout=60.0) as fpga:
                pipe = fpga.pipeline(f"app{i}", chains[i], period_ms=20.0, frame_shape=SHAPE)
                stages = resolve_chain(chains[i], {})
                futures = [(f, pipe.submit(f)) for f in frames(4, seed=i)]
                results[i] = all(np.array_equal(fut.result(timeout=60), chain_reference(stages, f))
                                 for f, fut in futures)
        except Exception as exc:        # reported by the assert below
            results[i] = repr(exc)

    # A slow dilation: the test shares two cores with RTL simulations when run with -n 2.
    with RunningDaemon(sock, dilation=100.0) as daemon:
        threads = [threading.Thread(target=app, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        assert results == {0: True, 1: True, 2: True, 3: True}
        assert daemon.outcomes["on_time"] == 16


def test_threads_share_one_connection(sock):
    """Several threads wait on one connection at once: whichever reads the socket hands the
    others their replies, and each gets its own frame's output."""
    stages = resolve_chain(["threshold"], {})
    outputs, errors = {}, []

    with RunningDaemon(sock), connect(sock) as fpga:
        pipe = fpga.pipeline("shared", ["threshold"], period_ms=5.0, frame_shape=SHAPE)

        def worker(i):
            try:
                for k, frame in enumerate(frames(5, seed=10 + i)):
                    outputs[i, k] = (frame, pipe.submit(frame).result(timeout=30))
                    fpga.clock()                      # control requests interleave with frames
            except Exception as exc:                  # reported by the assert below
                errors.append(repr(exc))

        threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
    assert errors == []
    assert len(outputs) == 20
    assert all(np.array_equal(out, chain_reference(stages, frame)) for frame, out in outputs.values())



def test_a_fork_child_is_told_the_connection_is_its_parents_and_cannot_cut_it(sock):
    """A child forked after ``connect`` shares the parent's socket and ring mappings: its calls
    read parts of the parent's replies (both then hang, or get "slot not free"), its writes go
    into slots the parent's frames are in, and its ``close`` shut the parent's connection down,
    ending the parent's pipelines. The child is told to connect again (``forked``) before it
    writes or sends anything, closing there drops only its copy, and the parent streams on."""
    stages = resolve_chain(["threshold"], {})
    with RunningDaemon(sock), connect(sock) as fpga:
        pipe = fpga.pipeline("p", ["threshold"], period_ms=5.0, frame_shape=SHAPE)
        before = pipe.ring.input(0).copy()
        def child() -> int:
            code = 1
            try:
                pipe.submit(np.full(SHAPE, 9, np.uint8))
            except DaemonError as exc:
                code = 0 if told_forked(exc) else 2
            try:
                fpga.clock()
                code = 3
            except DaemonError as exc:
                code = code if exc.kind == "forked" else 4
            fpga.close()
            return code

        code = in_fork_child(child)
        assert code == b"\x00", code
        assert np.array_equal(pipe.ring.input(0), before)          # the child wrote nothing
        for frame in frames(3, seed=4):
            assert np.array_equal(pipe.submit(frame).result(timeout=30), chain_reference(stages, frame))


def raw(sock_path, data):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(str(sock_path))
    s.sendall(data)
    s.settimeout(5)
    header = s.recv(4)
    (n,) = struct.unpack(">I", header)
    body = b""
    while len(body) < n:
        body += s.recv(n - len(body))
    return s, msgpack.unpackb(body)


def test_bad_requests_get_named_errors_and_others_carry_on(sock):
    with RunningDaemon(sock), connect(sock) as fpga:
        good = fpga.pipeline("good", ["threshold"], period_ms=5.0, frame_shape=SHAPE)
        s, answer = raw(sock, struct.pack(">I", 3) + b"\xc1\xc1\xc1")
        assert answer["error"]["kind"] == "malformed"
        s.sendall(encode({"op": "clock", "id": 5}))                    # the same connection still works
        assert s.recv(4096)
        s.close()
        s, answer = raw(sock, struct.pack(">I", 1 << 30))
        assert answer["error"]["kind"] == "oversized"
        assert s.recv(10) == b""                                        # and that connection is closed
        s.close()
        body = msgpack.packb({"v": VERSION + 1, "id": 1, "op": "hello"})
        _, answer = raw(sock, struct.pack(">I", len(body)) + body)
        assert answer["error"]["kind"] == "version" and "not supported" in answer["error"]["message"]
        body = msgpack.packb({"v": VERSION, "id": 2, "op": "teleport"})
        _, answer = raw(sock, struct.pack(">I", len(body)) + body)
        assert answer["error"] == {"kind": "unknown_op", "message": "unknown op 'teleport'"}
        with pytest.raises(DaemonError, match="unknown module") as err:
            fpga.pipeline("bad", ["gauss3x3", "blur9"], period_ms=5.0, frame_shape=SHAPE)
        assert err.value.kind == "bad_request"
        with pytest.raises(DaemonError, match="frame 5000x80 is outside"):
            fpga.pipeline("huge", ["threshold"], period_ms=5.0, frame_shape=(5000, 80))
        with pytest.raises(DaemonError, match="already registered"):
            fpga.pipeline("good", ["threshold"], period_ms=5.0, frame_shape=SHAPE)
        with pytest.raises(FrameError, match="frame shape"):
            good.submit(np.zeros((10, 10), np.uint8))
        with pytest.raises(FrameError, match="dtype"):
            good.submit(np.zeros(SHAPE, np.float32))
        with pytest.raises(DaemonError, match="not free"):
            fpga.request("submit", pipeline="good", slot=99, shape=list(SHAPE), dtype="uint8")
        # A client that wrote a frame of another layout is refused by the daemon too (a raw
        # client, or one whose idea of the ring is stale), and the ring slot stays free.
        with pytest.raises(DaemonError, match=r"frame shape is \(10, 10\), the pipeline takes \(60, 80\)") as err:
            fpga.request("submit", pipeline="good", slot=0, shape=[10, 10], dtype="uint8")
        assert err.value.kind == "frame"
        with pytest.raises(DaemonError, match="frame dtype is float32, the pipeline takes uint8") as err:
            fpga.request("submit", pipeline="good", slot=0, shape=list(SHAPE), dtype="float32")
        assert err.value.kind == "frame"
        with pytest.raises(DaemonError, match="dtype 'no-such-type' is not a numpy dtype; the pipeline takes uint8"):
            fpga.request("submit", pipeline="good", slot=0, shape=list(SHAPE), dtype="no-such-type")
        with pytest.raises(DaemonError, match="shape must be a list") as err:
            fpga.request("submit", pipeline="good", slot=0)
        assert err.value.kind == "bad_request"
        frame = frames(1)[0]
        out = good.submit(frame).result(timeout=10)                     # the daemon is still fine
        assert np.array_equal(out, chain_reference(resolve_chain(["threshold"], {}), frame))


def test_admission_rejects_with_the_reason(sock):
    big = (1080, 1920)
    with RunningDaemon(sock, platform="pynq-z2") as daemon, connect(sock) as fpga:
        fpga.pipeline("edges", ["gauss3x3", "sobel_mag"], period_ms=33.33, frame_shape=big)
        with pytest.raises(AdmissionRejected, match=r"not admitted: .*frames and their loads would keep the stream"):
            fpga.pipeline("thumb", ["downscale2x", "threshold"], period_ms=33.33, frame_shape=big)
        assert [p.name for p in daemon.engine.pipelines] == ["edges"]


def _doomed_client(path, ready):
    with connect(path) as fpga:
        pipe = fpga.pipeline("doomed", CHAIN, period_ms=50.0, frame_shape=(480, 640))
        for frame in frames(4, shape=(480, 640)):
            pipe.submit(frame)
        fpga.clock()        # answered after the submits before it on this socket: the frames are in
        ready.set()
        time.sleep(60)


def rings_of(daemon):
    return {state.ring.spec.name for c in daemon.clients.values() for state in c.pipelines.values()}


def test_a_killed_client_leaves_nothing_behind(sock):
    with RunningDaemon(sock, dilation=200.0) as daemon, connect(sock) as fpga:
        other = fpga.pipeline("other", ["threshold"], period_ms=5.0, frame_shape=SHAPE)
        ctx = mp.get_context("spawn")
        ready = ctx.Event()
        proc = ctx.Process(target=_doomed_client, args=(str(sock), ready))
        proc.start()
        assert ready.wait(30)
        rings = rings_of(daemon)
        assert len(rings) == 2
        mine = other.ring.spec.name
        os.kill(proc.pid, signal.SIGKILL)                               # mid-frame
        proc.join(10)
        deadline = time.monotonic() + 20
        # The drops are answered on the daemon's loop after the client's pipeline ends: wait for
        # them too, not only for the ring and the client to go.
        while time.monotonic() < deadline and (rings_of(daemon) != {mine} or len(daemon.clients) != 1
                                               or daemon.outcomes.get("dropped", 0) < 1):
            time.sleep(0.05)
        assert rings_of(daemon) == {mine}                                # only "other"'s ring is left
        assert [p.name for p in daemon.engine.pipelines] == ["other"]
        assert daemon.outcomes["dropped"] >= 1                          # frames that never ran: client gone
        frame = frames(1)[0]
        assert np.array_equal(other.submit(frame).result(timeout=10),
                              chain_reference(resolve_chain(["threshold"], {}), frame))
    assert daemon.states == {} and daemon.shm_bytes == 0


def test_status_command_and_daemon_arguments(sock, capsys):
    import json

    from fpgashare.cli.main import main

    with RunningDaemon(sock), connect(sock) as fpga:
        fpga.pipeline("edges", CHAIN, period_ms=20.0, frame_shape=SHAPE)
        assert main(["status", "--socket", str(sock), "--json"]) == 0
        status = json.loads(capsys.readouterr().out)
        assert list(status["pipelines"]) == ["edges"] and len(status["slots"]) == 4
        assert main(["status", "--socket", str(sock)]) == 0
        assert "pipeline edges: conv3x3/sobel_mag/threshold, 0 ended, miss rate 0.0%" in capsys.readouterr().out
    assert main(["status", "--socket", str(sock)]) == 2
    assert "cannot reach the fpgashare daemon" in capsys.readouterr().err
    assert main(["daemon", "--board", "model", "--socket", str(sock), "--dilation", "fast"]) == 2
    assert "--dilation must be a number or auto" in capsys.readouterr().err
    assert main(["daemon", "--board", "pynq", "--socket", str(sock)]) == 2
    assert "needs --bitstreams" in capsys.readouterr().err


def test_a_status_too_big_for_one_message_is_cut_to_fit(sock, monkeypatch, fresh_seed):
    """Tenants choose how many pipelines they hold and how long their names are: the admin's view
    of them all is cut to what one message holds (``truncated`` says how many there were), and the
    admin's connection carries on."""
    import fpgashare.daemon.stats
    from fpgashare.sched.core.clock import VirtualClock

    monkeypatch.setattr(fpgashare.daemon.stats, "STATUS_BYTES", 3000)
    rng = np.random.default_rng(fresh_seed)
    daemon = Daemon(make_backend("model", load_platform("zcu104")), sock, clock=VirtualClock())
    with DaemonThread(daemon), connect(sock) as admin:
        tenants = [connect(sock) for _ in range(3)]
        held = 0
        for tenant in tenants:
            for i in range(int(rng.integers(4, 9))):
                tenant.pipeline(f"{'n' * 58}{i:04d}", ["threshold"], period_ms=60_000.0, frame_shape=(8, 8))
                held += 1
        status = admin.status()
        assert len(msgpack.packb(status)) <= 3000, fresh_seed
        assert status["truncated"] == {"pipelines": held, "clients": 4}, (fresh_seed, status["truncated"])
        assert 0 < len(status["pipelines"]) < held and set(status["pipelines"]) <= set(daemon.states), fresh_seed
        own = tenants[0].status(own=True)
        assert "truncated" not in own and len(own["pipelines"]) == len(tenants[0].pipelines), fresh_seed
        assert admin.clock() >= 0.0
        for tenant in tenants:
            tenant.close()


def test_fitting_keeps_a_prefix_of_each_list_within_the_limit(fresh_seed):
    """On generated answers: within the limit whenever the rest of the answer is, unchanged when
    it fits, else a prefix of the pipelines and of the clients with their counts in ``truncated``."""
    from fpgashare.daemon.stats import fitted

    rng = np.random.default_rng(fresh_seed)
    for _ in range(300):
        n = int(rng.integers(0, 400))
        pipes = {"p" * int(rng.integers(1, 65)) + str(i): {"modules": ["m" * int(rng.integers(1, 20))] *
                                                          int(rng.integers(1, 17)), "miss_rate": float(rng.random())}
                 for i in range(n)}
        clients = [{"id": i, "pipelines": list(pipes)[:int(rng.integers(0, 17))]}
                   for i in range(int(rng.integers(0, 80)))]
        answer = {"now": float(rng.random()), "slots": [{"slot": s} for s in range(4)], "pipelines": pipes,
                  "clients": clients}
        limit = int(rng.choice([1000, 8000, 64_000]))
        out = fitted(answer, limit)
        assert len(msgpack.packb(out)) <= limit, (fresh_seed, limit)
        if len(msgpack.packb(answer)) <= limit:
            assert out is answer, fresh_seed
            continue
        assert out["truncated"] == {"pipelines": n, "clients": len(clients)}, (fresh_seed, out["truncated"])
        assert list(out["pipelines"]) == list(pipes)[:len(out["pipelines"])], fresh_seed
        assert out["clients"] == clients[:len(out["clients"])], fresh_seed


def test_a_reply_too_big_for_a_message_is_an_error_reply_and_the_connection_lives(sock, monkeypatch):
    import fpgashare.daemon.stats
    import fpgashare.wire.protocol

    monkeypatch.setattr(fpgashare.daemon.stats, "STATUS_BYTES", 1 << 30)     # no cutting: the reply is too big
    with RunningDaemon(sock) as daemon, connect(sock) as fpga:
        fpga.pipeline("edges", CHAIN, period_ms=20.0, frame_shape=SHAPE)
        monkeypatch.setattr(fpgashare.wire.protocol, "MAX_MESSAGE", 600)
        with pytest.raises(DaemonError, match="exceeds 600") as err:
            fpga.status()
        assert err.value.kind == "oversized"
        assert fpga.clock() >= 0.0 and daemon.failure is None


def test_prometheus_metrics(sock):
    import urllib.request

    running = RunningDaemon(sock)
    running.daemon.metrics_port = 0
    with running as daemon, connect(sock) as fpga:
        pipe = fpga.pipeline("edges", CHAIN, period_ms=20.0, frame_shape=SHAPE)
        for frame in frames(3):
            pipe.submit(frame).result(timeout=10)
        text = urllib.request.urlopen(f"http://127.0.0.1:{daemon.metrics_port}/metrics", timeout=5).read().decode()
    assert 'fpgashare_frames_total{outcome="on_time",pipeline="edges"} 3.0' in text
    assert 'fpgashare_frame_latency_seconds_count{pipeline="edges"} 3.0' in text
    assert "fpgashare_reconfigurations 3.0" in text                  # three modules loaded once
    assert "fpgashare_port_busy_seconds" in text and "fpgashare_slot_utilization" in text


def test_dnn_images_run_in_idle_slot_time_next_to_a_stream(sock):
    from fpgashare.dnn.models import digits_cnn
    from fpgashare.dnn.reference import logits
    from fpgashare.dnn.train_digits import digits_split

    _, _, images, _ = digits_split()
    net = digits_cnn()
    with RunningDaemon(sock, dilation=20.0) as daemon, connect(sock) as fpga:
        edges = fpga.pipeline("edges", CHAIN, period_ms=20.0, frame_shape=SHAPE)
        digits = fpga.dnn("digits", model="digits_cnn")
        futures = [digits.submit(img) for img in images[:4]]
        stream = [edges.submit(f) for f in frames(3)]
        outputs = np.stack([f.result(timeout=20) for f in futures])
        assert all(f.result(timeout=20) is not None for f in stream)   # the stream kept its deadlines
        assert np.array_equal(outputs, logits(net, images[:4]))         # the int8 reference's answer
        assert fpga.status()["pipelines"]["digits"]["images"] == 4
        assert daemon.outcomes["done"] == 4
        # Named with every kind the client takes, as `fpgashare dnn eval` names them.
        with pytest.raises(DaemonError, match=r"unknown model 'resnet'; known: .*digits_qdq.*\(\.onnx\)"):
            fpga.dnn("big", model="resnet")
    with RunningDaemon(sock, platform="pynq-z2"), connect(sock) as fpga:
        # The PYNQ-Z2's 4x4 tile cannot hold edge_cnn's 128x128 input: refused, naming why.
        with pytest.raises(AdmissionRejected, match="edge_cnn does not fit pynq-z2's dnn_tile"):
            fpga.dnn("edges", model="edge_cnn")


def test_asyncio_clients_await_their_frames(sock):
    stages = resolve_chain(["threshold"], {})

    async def app(pipe, batch):
        return await asyncio.gather(*(pipe.asubmit(f) for f in batch))

    with RunningDaemon(sock), connect(sock) as fpga:
        pipe = fpga.pipeline("mask", ["threshold"], period_ms=20.0, frame_shape=SHAPE)
        batch = frames(3, seed=4)
        outs = asyncio.run(app(pipe, batch))
    assert all(np.array_equal(o, chain_reference(stages, f)) for o, f in zip(outs, batch, strict=True))


def test_sigterm_ends_pipelines_and_removes_the_socket(sock):
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-m", "fpgashare.cli", "daemon", "--board", "model",
                             "--host-reserve-ms", "0", "--socket", str(sock)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not sock.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        fpga = connect(sock)
        pipe = fpga.pipeline("edges", CHAIN, period_ms=20.0, frame_shape=SHAPE)
        assert pipe.ring.spec.name.startswith("fpgashare-c1-")
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
        assert not sock.exists()
        assert "client 1 gone (daemon shutting down)" in proc.stderr.read()
        fpga.close()
    finally:
        if proc.poll() is None:
            proc.kill()


def test_latency_window_is_bounded_and_counts_are_not(sock, monkeypatch):
    """A daemon runs for days: it keeps the newest latencies per pipeline, while the outcome
    counts cover every frame."""
    import fpgashare.daemon.stats

    monkeypatch.setattr(fpgashare.daemon.stats, "LATENCY_WINDOW", 3)
    with RunningDaemon(sock) as daemon, connect(sock) as fpga:
        pipe = fpga.pipeline("short", ["threshold"], period_ms=5.0, frame_shape=SHAPE)
        for frame in frames(5):
            pipe.submit(frame).result(timeout=10)
        stats = daemon.per_pipeline["short"]
        assert stats["outcomes"] == {"on_time": 5}
        assert len(stats["latencies_ms"]) == 3


def test_statistics_of_ended_pipelines_are_bounded(sock, monkeypatch):
    """Apps that register a fresh pipeline name each run leave statistics behind: the newest
    ENDED_KEPT ended pipelines keep theirs, older ones are forgotten, live ones never."""
    import fpgashare.daemon.stats

    monkeypatch.setattr(fpgashare.daemon.stats, "ENDED_KEPT", 2)
    with RunningDaemon(sock) as daemon, connect(sock) as fpga:
        live = fpga.pipeline("live", ["threshold"], period_ms=5.0, frame_shape=SHAPE)
        live.submit(frames(1)[0]).result(timeout=10)
        for i in range(4):
            pipe = fpga.pipeline(f"run{i}", ["threshold"], period_ms=5.0, frame_shape=SHAPE)
            pipe.submit(frames(1)[0]).result(timeout=10)
            pipe.close()
        deadline = time.monotonic() + 10
        while set(daemon.per_pipeline) != {"live", "run2", "run3"} and time.monotonic() < deadline:
            time.sleep(0.01)
        assert set(daemon.per_pipeline) == {"live", "run2", "run3"}
        assert daemon.per_pipeline["run3"]["outcomes"] == {"on_time": 1}


def test_metrics_of_ended_pipelines_are_bounded_like_their_statistics(sock, monkeypatch, fresh_seed):
    """Apps (or an abuser) registering a fresh name each time cannot grow the metrics: an ended
    pipeline's series go when its statistics do, and a name given again starts from zero."""
    import urllib.request

    import fpgashare.daemon.stats

    monkeypatch.setattr(fpgashare.daemon.stats, "ENDED_KEPT", 2)
    running = RunningDaemon(sock)
    running.daemon.metrics_port = 0
    runs = int(np.random.default_rng(fresh_seed).integers(4, 9))
    with running as daemon, connect(sock) as fpga:
        live = fpga.pipeline("live", ["threshold"], period_ms=5.0, frame_shape=SHAPE)
        live.submit(frames(1)[0]).result(timeout=10)
        for i in range(runs):
            pipe = fpga.pipeline(f"run{i}", ["threshold"], period_ms=5.0, frame_shape=SHAPE)
            pipe.submit(frames(1)[0]).result(timeout=10)
            pipe.close()
        again = fpga.pipeline(f"run{runs - 1}", ["threshold"], period_ms=5.0, frame_shape=SHAPE)
        deadline = time.monotonic() + 10
        while len(daemon.per_pipeline) > 3 and time.monotonic() < deadline:
            time.sleep(0.01)
        text = urllib.request.urlopen(f"http://127.0.0.1:{daemon.metrics_port}/metrics", timeout=5).read().decode()
        again.close()
    named = set(re.findall(r'pipeline="([^"]+)"', text))
    assert named == {"live", f"run{runs - 2}"}, (fresh_seed, runs, named)
    assert 'fpgashare_frames_total{outcome="on_time",pipeline="live"} 1.0' in text, fresh_seed


def test_dnn_images_run_while_a_real_time_app_is_silent(sock):
    """A real-time pipeline promises a period, not frames: once its app stops sending, its overdue
    next frame is not waited for and DNN images still run in the time it leaves."""
    from fpgashare.dnn.planning import network
    from fpgashare.dnn.reference import logits

    with RunningDaemon(sock, dilation=1.0) as daemon, connect(sock) as fpga:
        # A period with room for the chain's three loads (3.9 ms) and the host's delays, which a
        # daemon at dilation 1 counts as board time: at 5 ms the first frame missed now and then.
        edges = fpga.pipeline("edges", CHAIN, period_ms=20.0, frame_shape=SHAPE)
        edges.submit(frames(1)[0]).result(timeout=10)      # one frame, then silence
        digits = fpga.dnn("digits", model="digits_cnn")
        images = [np.random.default_rng(i).integers(0, 256, (8, 8), dtype=np.uint8) for i in range(3)]
        time.sleep(0.06)                                     # real waiting: the app's promised frame is overdue
        outs = [digits.submit(image).result(timeout=5) for image in images]
        assert all(np.array_equal(out, logits(network("digits_cnn"), image[None])[0])
                   for out, image in zip(outs, images, strict=True))
        assert daemon.per_pipeline["digits"]["outcomes"] == {"done": 3}

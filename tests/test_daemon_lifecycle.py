"""A daemon's life: one per board (a second refuses, naming the first's pid), rings a dead daemon
left are swept, the client raises DaemonError (never a raw OSError) when the daemon goes and can
reconnect, and a frame whose pipeline closes under it is never answered as a result."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from multiprocessing import resource_tracker, shared_memory

import numpy as np
import pytest
from fpgashare.backends import make_backend
from fpgashare.backends.simrun import resolve_chain
from fpgashare.catalogue.platform import load_platform
from fpgashare.catalogue.vision_ref import chain_reference
from fpgashare.client import DaemonError, DeadlineMissed, FrameDropped, connect
from fpgashare.daemon import Daemon, DaemonRunningError, DaemonThread
from fpgashare.sched.core.clock import VirtualClock
from fpgashare.sched.host.host_cost import HostCost

from tests.stale_ring import PLANTED_STALE_RING

SHAPE = (60, 80)
SENTINEL = 77
STAGES = ["gauss3x3", "threshold"]
ROUNDS = 30       #: close rounds of the sentinel test (benchmarks/close_sentinel.py runs 1,000)
STOP_ROUNDS = 10  #: daemon-stop rounds
STEP_S = 10e-6    #: how much later in virtual time the end comes, round after round


@pytest.fixture
def sock(tmp_path):
    return tmp_path / "fpgashare.sock"


def daemon_on(sock, dilation=20.0):
    """A wall-clock daemon with the host taken as free: its cost measured at start would make the
    5 ms pipelines' admission depend on how loaded this machine is (the lifecycle is tested here)."""
    return DaemonThread(Daemon(make_backend("model", load_platform("zcu104")), sock, dilation=dilation,
                               host_cost=HostCost()))


def test_a_second_daemon_is_refused_naming_the_first(sock):
    first = subprocess.Popen([sys.executable, "-m", "fpgashare.cli", "daemon", "--board", "model", "--socket",
                              str(sock)], stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not sock.exists() and time.monotonic() < deadline:
            time.sleep(0.05)                     # waiting for another process to start
        with pytest.raises(DaemonRunningError, match=f"another fpgashare daemon \\(pid {first.pid}\\)") as err:
            with daemon_on(sock):
                pass
        assert err.value.pid == first.pid
        connect(sock).close()                    # the first still serves: its socket was not taken
        second = subprocess.run([sys.executable, "-m", "fpgashare.cli", "daemon", "--board", "model", "--socket",
                                 str(sock)], capture_output=True, text=True, timeout=60)
        assert second.returncode == 2 and f"(pid {first.pid})" in second.stderr
    finally:
        first.terminate()
        first.wait(30)
    with daemon_on(sock):                        # once it is gone, the board is free
        connect(sock).close()


def test_rings_a_dead_daemon_left_are_swept(sock):
    stale = shared_memory.SharedMemory(name=PLANTED_STALE_RING, create=True, size=4096)
    resource_tracker.unregister(stale._name, "shared_memory")     # as if its process had died
    stale.close()
    with daemon_on(sock):
        assert not (sock.parent / "x").exists()
        with pytest.raises(FileNotFoundError):
            shared_memory.SharedMemory(name=PLANTED_STALE_RING)


def test_the_client_raises_daemon_error_when_the_daemon_goes(sock):
    with daemon_on(sock):
        fpga = connect(sock)
        pipe = fpga.pipeline("p", ["threshold"], period_ms=5.0, frame_shape=SHAPE)
    frame = np.zeros(SHAPE, np.uint8)
    for call in (lambda: pipe.submit(frame).result(timeout=5), fpga.clock, fpga.status,
                 lambda: fpga.pipeline("q", ["threshold"], period_ms=5.0, frame_shape=SHAPE)):
        with pytest.raises(DaemonError) as err:
            call()
        assert err.value.kind == "gone"
    pipe.close()                                  # the daemon ended it already: nothing to raise
    fpga.close()


def test_reconnect_registers_the_pipelines_with_a_new_daemon(sock):
    stages = resolve_chain(["threshold"], {})
    frame = np.random.default_rng(2).integers(0, 256, SHAPE, dtype=np.uint8)
    with daemon_on(sock):
        fpga = connect(sock, timeout=10, reconnect=True)
        pipe = fpga.pipeline("p", ["threshold"], period_ms=5.0, frame_shape=SHAPE)
        assert np.array_equal(pipe.submit(frame).result(timeout=10), chain_reference(stages, frame))
        lost = pipe.submit(frame)
    with pytest.raises((FrameDropped, DaemonError), match=r"daemon shutting down|went away"):
        lost.result(timeout=10)     # in flight when the daemon went: dropped (or never read), not a result
    with daemon_on(sock) as second:
        assert np.array_equal(pipe.submit(frame).result(timeout=10), chain_reference(stages, frame))
        assert fpga.reconnects == 1 and list(second.states) == ["p"]
        fpga.close()


def _sentinel_round(daemon: Daemon, fpga, name: str, after_s: float, end) -> list[str]:
    """One pipeline (modules loaded by a first frame), its output slots filled with the sentinel,
    four frames in, then ``end()`` ``after_s`` of virtual time later; runs every frame out. Each
    frame ends dropped, or as a result whose output was written (never the sentinel)."""
    stages = resolve_chain(STAGES, {})
    frame = np.full(SHAPE, 200, np.uint8)           # its output is 255s, never the sentinel
    # A period shorter than the frames' fabric time: they are released back to back.
    pipe = fpga.pipeline(name, STAGES, period_ms=0.05, deadline_ms=50.0, frame_shape=SHAPE)
    warm = pipe.submit(frame)
    fpga.clock()                                    # the frame is in
    daemon.run_until(daemon.clock.now() + 0.020)
    warm.result(timeout=20)
    for slot in range(4):
        pipe.ring.output(slot)[...] = SENTINEL
    start = daemon.clock.now()
    futures = [pipe.submit(frame) for _ in range(4)]
    fpga.clock()
    daemon.run_until(start + after_s)
    end()
    daemon.run_until(start + 0.020)
    outcomes = []
    for future in futures:
        try:
            out = future.result(timeout=20)
        except DeadlineMissed as late:              # late is a result too: its output must be there
            out = late.output
        except FrameDropped as exc:
            outcomes.append(exc.reason)
            continue
        assert np.array_equal(out, chain_reference(stages, frame)), "a result without its output written"
        outcomes.append("result")
    return outcomes


def test_frames_of_a_closing_pipeline_are_never_answered_as_results(sock):
    """The sentinel test, on a virtual clock: ``close`` lands at a different point of the frames'
    fabric time each round (before, during, between and after them). benchmarks/close_sentinel.py
    runs 1,000 rounds of close and of a real SIGTERM on the wall clock."""
    seen: dict[str, int] = {}
    with DaemonThread(Daemon(make_backend("model", load_platform("zcu104")), sock, clock=VirtualClock())) as daemon:
        with connect(sock) as fpga:
            for i in range(ROUNDS):
                name = f"r{i}"
                for outcome in _sentinel_round(daemon, fpga, name, i * STEP_S,
                                               lambda name=name: fpga.request("close", pipeline=name)):
                    seen[outcome] = seen.get(outcome, 0) + 1
                fpga.pipelines.pop(name).ring.close()
            assert daemon.states == {}
    assert sum(seen.values()) == 4 * ROUNDS
    assert seen.get("pipeline closed while the frame was on the fabric", 0) > 0, seen
    assert seen.get("result", 0) > 0 and seen.get("pipeline closed", 0) > 0, seen


def test_frames_on_the_fabric_when_the_daemon_stops_are_never_answered_as_results(sock):
    """The same with the daemon stopping (what its SIGTERM handler runs) instead of ``close``: the
    stop waits for the frames on the fabric (virtual time moved by the test meanwhile) and answers
    them dropped before the socket closes."""
    seen: dict[str, int] = {}
    for i in range(STOP_ROUNDS):
        runner = DaemonThread(Daemon(make_backend("model", load_platform("zcu104")), sock, clock=VirtualClock()))
        with runner as daemon, connect(sock) as fpga:
            stopping = []

            def stop(daemon=daemon, loop=runner.loop, stopping=stopping):
                stopping.append(asyncio.run_coroutine_threadsafe(daemon.stop(), loop))

            for outcome in _sentinel_round(daemon, fpga, "s", i * 3 * STEP_S, stop):
                seen[outcome] = seen.get(outcome, 0) + 1
            stopping[0].result(timeout=20)
            assert daemon.states == {}
    assert sum(seen.values()) == 4 * STOP_ROUNDS
    assert seen.get("daemon shutting down while the frame was on the fabric", 0) > 0, seen
    assert seen.get("result", 0) > 0 and seen.get("daemon shutting down", 0) > 0, seen


def test_a_client_that_only_stops_sending_gets_one_answer_for_each_frame(sock, fresh_seed):
    """A half-close ends the client's pipelines (its frames waiting are dropped at once), yet it
    still reads: the frame on the fabric then is answered too, dropped, before the daemon closes
    the socket. Every submit gets exactly one answer, and nothing of the client is left."""
    import os
    import socket

    import msgpack
    from fpgashare.wire.protocol import HEADER, encode

    daemon = Daemon(make_backend("model", load_platform("zcu104")), sock, clock=VirtualClock())
    rng = np.random.default_rng(fresh_seed)
    with DaemonThread(daemon):
        for _ in range(3):
            raw = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            raw.connect(str(sock))
            raw.sendall(encode({"op": "pipeline", "id": 1, "name": "p", "stages": ["threshold"],
                                "period_ms": 10.0, "frame_shape": list(SHAPE)}))
            _, fds, _, _ = socket.recv_fds(raw, 1 << 16, 4)
            for fd in fds:
                os.close(fd)
            sent = list(range(10, 10 + int(rng.integers(1, 5))))        # the first on the fabric, the rest held
            for rid in sent:
                raw.sendall(encode({"op": "submit", "id": rid, "pipeline": "p", "slot": rid - 10,
                                    "shape": list(SHAPE), "dtype": "uint8"}))
            start = daemon.clock.now()
            daemon.run_until(start + 1e-6)                  # the first frame starts; its end is later
            raw.shutdown(socket.SHUT_WR)
            deadline = time.monotonic() + 10
            while daemon.clients and time.monotonic() < deadline:      # the daemon has seen the end
                time.sleep(0.01)
            daemon.run_until(start + 0.010)                 # the frame on the fabric ends
            raw.settimeout(10)
            data = b""
            while chunk := raw.recv(1 << 16):
                data += chunk
            raw.close()
            answers = []
            while data:
                (n,) = HEADER.unpack_from(data)
                answers.append(msgpack.unpackb(data[HEADER.size:HEADER.size + n]))
                data = data[HEADER.size + n:]
            assert sorted(a["id"] for a in answers) == sent, fresh_seed
            assert all(a["outcome"] == "dropped" and a["reason"].startswith("client gone") for a in answers), fresh_seed
            assert daemon.states == {} and daemon.shm_bytes == 0, fresh_seed


def test_a_client_gone_during_its_registration_leaves_nothing_and_blocks_no_one(sock, fresh_seed):
    """A client sends registrations (several, pipelined) and closes its socket at once, while the
    daemon does their admission work and mode changes: each registration completes or is refused,
    its pipeline then ends with the connection, and another client registers and streams at once
    after (the registration turn is not held by a client that is gone)."""
    import socket

    from fpgashare.wire.protocol import encode

    rng = np.random.default_rng(fresh_seed)
    daemon = Daemon(make_backend("model", load_platform("zcu104")), sock, clock=VirtualClock())
    with DaemonThread(daemon):
        for round_ in range(3):
            raw = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            raw.connect(str(sock))
            count = int(rng.integers(1, 4))
            raw.sendall(b"".join(encode({"op": "pipeline", "id": k, "name": f"gone{k}", "stages": STAGES,
                                         "period_ms": float(rng.choice([10.0, 40.0])), "frame_shape": list(SHAPE),
                                         "params": {}}) for k in range(count)))
            raw.close()
            with connect(sock, timeout=30) as fpga:
                pipe = fpga.pipeline(f"after{round_}", STAGES, period_ms=20.0, frame_shape=SHAPE)
                frame = rng.integers(0, 256, SHAPE, dtype=np.uint8)
                future = pipe.submit(frame)
                fpga.clock()
                daemon.run_until(daemon.clock.now() + 0.05)
                want = chain_reference(resolve_chain(STAGES, {}), frame)
                assert np.array_equal(future.result(timeout=10), want), fresh_seed
        deadline = time.monotonic() + 10
        while daemon.states and time.monotonic() < deadline:
            time.sleep(0.01)                  # the loop takes the closed connections in its own time
        assert daemon.states == {} and daemon.failure is None, fresh_seed


def test_a_close_answers_after_its_frames_and_the_name_is_free_at_once(sock, fresh_seed):
    """``close`` with frames on the fabric and waiting, then the same name registered again at
    once (pipelined behind the close): every frame is answered exactly once and before the close's
    reply, and the registration succeeds. The close used to be answered at once while a frame on
    the fabric still held the name, and the registration was refused "already registered"."""
    import os
    import socket

    import msgpack
    from fpgashare.wire.protocol import HEADER, encode

    def replies(raw, want: set[int]) -> list[dict]:
        got, data = [], b""
        while not want <= {m["id"] for m in got}:
            chunk, fds, _, _ = socket.recv_fds(raw, 1 << 16, 4)
            assert chunk, (fresh_seed, f"the daemon closed the connection; got {got}")
            for fd in fds:
                os.close(fd)
            data += chunk
            while len(data) >= HEADER.size and len(data) >= HEADER.size + HEADER.unpack_from(data)[0]:
                (n,) = HEADER.unpack_from(data)
                got.append(msgpack.unpackb(data[HEADER.size:HEADER.size + n]))
                data = data[HEADER.size + n:]
        return got

    register = {"op": "pipeline", "name": "p", "stages": STAGES, "period_ms": 10.0, "frame_shape": list(SHAPE)}
    daemon = Daemon(make_backend("model", load_platform("zcu104")), sock, clock=VirtualClock())
    rng = np.random.default_rng(fresh_seed)
    with DaemonThread(daemon):
        for _ in range(4):
            raw = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            raw.connect(str(sock))
            raw.settimeout(20)
            raw.sendall(encode({**register, "id": 1}))
            assert replies(raw, {1})[0]["ok"], fresh_seed
            sent = list(range(10, 10 + int(rng.integers(1, 5))))        # the first on the fabric, the rest held
            for rid in sent:
                raw.sendall(encode({"op": "submit", "id": rid, "pipeline": "p", "slot": rid - 10,
                                    "shape": list(SHAPE), "dtype": "uint8"}))
            raw.sendall(encode({"op": "clock", "id": 2}))
            got = replies(raw, {2})                                     # the submits are in
            daemon.run_until(daemon.clock.now() + 1e-6)                 # the first frame starts
            raw.sendall(encode({"op": "close", "id": 3, "pipeline": "p"}) + encode({**register, "id": 4}))
            got += replies(raw, {3, 4})
            ids = [m["id"] for m in got]
            assert sorted(i for i in ids if i >= 10) == sent, (fresh_seed, got)        # each frame once
            assert max(ids.index(i) for i in sent) < ids.index(3), (fresh_seed, got)    # all before the close
            again = next(m for m in got if m["id"] == 4)
            assert again["ok"], (fresh_seed, again)
            raw.close()
        deadline = time.monotonic() + 10
        while daemon.clients and time.monotonic() < deadline:        # the daemon has seen the ends
            time.sleep(0.01)
        assert daemon.states == {} and daemon.shm_bytes == 0, fresh_seed


def test_frames_answered_before_a_close_keep_their_outputs_and_a_closed_pipeline_says_so(sock, fresh_seed):
    """Frames that ended before their pipeline's close, read only after it (``result()`` called
    late): their outputs were read from the unmapped ring, an IndexError. Each now keeps its
    outcome (the output, or dropped if the close came first), and a submit after the close is
    refused naming the closed pipeline rather than an IndexError."""
    stages = resolve_chain(STAGES, {})
    rng = np.random.default_rng(fresh_seed)
    with DaemonThread(Daemon(make_backend("model", load_platform("zcu104")), sock, clock=VirtualClock())) as daemon:
        with connect(sock) as fpga:
            for i in range(6):
                pipe = fpga.pipeline(f"p{i}", STAGES, period_ms=0.05, deadline_ms=50.0, frame_shape=SHAPE)
                frames = [rng.integers(0, 256, SHAPE, dtype=np.uint8) for _ in range(int(rng.integers(1, 5)))]
                futures = [pipe.submit(frame) for frame in frames]
                fpga.clock()                                        # the frames are in
                daemon.run_until(daemon.clock.now() + float(rng.uniform(0, 0.004)))
                pipe.close()
                for frame, future in zip(frames, futures, strict=True):
                    try:
                        out = future.result(timeout=20)
                    except DeadlineMissed as late:
                        out = late.output
                    except FrameDropped:
                        continue
                    assert np.array_equal(out, chain_reference(stages, frame)), fresh_seed
                with pytest.raises(DaemonError, match=f"pipeline 'p{i}' is closed"):
                    pipe.submit(frames[0])


def test_a_frames_slot_comes_back_once_when_its_reply_cannot_be_read_and_close_races_result():
    """A reply the client cannot read (here: no outcome) is the frame's outcome, raised by every
    ``result()``; its ring slot comes back once, not once a call (a slot given back twice is
    handed to two frames). A close settling answered frames while other threads wait in
    ``result()`` settles each once too."""
    import threading
    from types import SimpleNamespace

    from fpgashare.client.connection import Reply
    from fpgashare.client.pipeline import FrameFuture, Pipeline

    given_back: list[int] = []
    pipe = SimpleNamespace(fpga=SimpleNamespace(wait=lambda reply, timeout: reply.result()),
                           _release=lambda slot, generation, future=None: given_back.append(slot))
    unreadable = Reply()
    unreadable.set_result({"ok": True})
    future = FrameFuture(pipe, 3, unreadable, 0, ring=None)
    for _ in range(3):
        with pytest.raises(KeyError):
            future.result()
    assert given_back == [3]

    # Many frames answered (dropped), each settled by a waiting thread and by the close at once.
    ring = SimpleNamespace(spec=SimpleNamespace(slots=64), close=lambda: None)
    owner = SimpleNamespace(wait=lambda reply, timeout: reply.result())
    real = Pipeline(owner, "p", ring, {}, {})
    futures = []
    for _ in range(64):
        reply = Reply()
        reply.set_result({"ok": True, "outcome": "dropped", "reason": "closed"})
        with real._lock:
            slot = real._slots.pop()
        futures.append(real.future(slot, reply, real.generation, ring))
    outcomes: list[str] = []

    def wait(f: FrameFuture) -> None:
        try:
            f.result()
        except FrameDropped:
            outcomes.append("dropped")

    waiters = [threading.Thread(target=wait, args=(f,)) for f in futures]
    for t in waiters:
        t.start()
    real._drop()
    for t in waiters:
        t.join()
    assert outcomes == ["dropped"] * 64
    assert sorted(real._slots) == list(range(64)) and not real._futures and real.closed

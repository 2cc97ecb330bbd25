"""A daemon's life: one per board (a second refuses, naming the first's pid), rings a dead daemon
left are swept, the client raises DaemonError (never a raw OSError) when the daemon goes and can
reconnect, and a frame whose pipeline closes under it is never answered as a result."""

from __future__ import annotations

import subprocess
import sys
import time
from multiprocessing import resource_tracker, shared_memory

import numpy as np
import pytest
from fpgashare.backends import make_backend
from fpgashare.client import DaemonError, DeadlineMissed, FrameDropped, connect
from fpgashare.daemon import Daemon, DaemonRunningError, DaemonThread
from fpgashare.platform import load_platform
from fpgashare.simrun import resolve_chain
from fpgashare.vision_ref import chain_reference

SHAPE = (60, 80)
SENTINEL = 77
ROUNDS = 1000     #: close rounds of the sentinel test


@pytest.fixture
def sock(tmp_path):
    return tmp_path / "fpgashare.sock"


def daemon_on(sock, dilation=20.0):
    return DaemonThread(Daemon(make_backend("model", load_platform("zcu104")), sock, dilation=dilation))


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
    stale = shared_memory.SharedMemory(name="fpgashare-c9-deadbeef0000", create=True, size=4096)
    resource_tracker.unregister(stale._name, "shared_memory")     # as if its process had died
    stale.close()
    with daemon_on(sock):
        assert not (sock.parent / "x").exists()
        with pytest.raises(FileNotFoundError):
            shared_memory.SharedMemory(name="fpgashare-c9-deadbeef0000")


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


def _round(fpga, stages, frame, name):
    """One pipeline, four frames, closed at once: each frame ends dropped, or as a result whose
    output was written (never the sentinel the client left in the output slot)."""
    pipe = fpga.pipeline(name, ["gauss3x3", "threshold"], period_ms=2.0, frame_shape=SHAPE)
    for slot in range(4):
        pipe.ring.output(slot)[...] = SENTINEL
    futures = [pipe.submit(frame) for _ in range(4)]
    fpga._send("close", pipeline=name)            # straight behind the frames, without waiting
    outcomes = []
    for future in futures:
        try:
            out = future.result(timeout=20)
        except DeadlineMissed as late:            # late is a result too: its output must be there
            out = late.output
        except FrameDropped as exc:
            outcomes.append(exc.reason)
            continue
        assert np.array_equal(out, chain_reference(stages, frame)), "a result without its output written"
        outcomes.append("result")
    fpga.pipelines.pop(name).ring.close()
    return outcomes


def test_frames_of_a_closing_pipeline_are_never_answered_as_results(sock):
    """The sentinel test: 1,000 rounds of close with frames on the fabric, then rounds where the
    daemon stops (what SIGTERM runs) instead."""
    stages = resolve_chain(["gauss3x3", "threshold"], {})
    frame = np.full(SHAPE, 200, np.uint8)           # its output is 255s, never the sentinel
    seen: dict[str, int] = {}
    with daemon_on(sock, dilation=10.0), connect(sock) as fpga:
        for i in range(ROUNDS):
            for outcome in _round(fpga, stages, frame, f"r{i}"):
                seen[outcome] = seen.get(outcome, 0) + 1
    assert seen.get("pipeline closed while the frame was on the fabric", 0) > 0, seen
    assert sum(seen.values()) == 4 * ROUNDS
    stopped = 0
    for _ in range(20):
        with daemon_on(sock, dilation=10.0) as daemon:
            fpga = connect(sock)
            pipe = fpga.pipeline("s", ["gauss3x3", "threshold"], period_ms=2.0, frame_shape=SHAPE)
            for slot in range(4):
                pipe.ring.output(slot)[...] = SENTINEL
            futures = [pipe.submit(frame) for _ in range(4)]
            fpga.clock()                          # the frames are in
        for future in futures:
            try:
                out = future.result(timeout=20)
            except DeadlineMissed as late:
                out = late.output
            except (FrameDropped, DaemonError):
                stopped += 1
                continue
            assert np.array_equal(out, chain_reference(stages, frame)), "a result without its output written"
        assert daemon.states == {}
        fpga.close()
    assert stopped > 0

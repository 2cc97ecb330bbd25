"""Quotas and backpressure: each limit refuses its abuser with a ``quota`` error naming it, while
another client's admitted pipeline meets every deadline; frames faster than their declared period
are held to it (on a virtual clock), so they cannot take the time admission promised others."""

from __future__ import annotations

import socket
import time

import numpy as np
import pytest
from fpgashare.backends import make_backend
from fpgashare.client import QuotaExceeded, connect
from fpgashare.client.connection import Connection
from fpgashare.clock import VirtualClock
from fpgashare.daemon import Daemon, DaemonThread, Limits
from fpgashare.daemon.limits import refuse
from fpgashare.platform import load_platform
from fpgashare.protocol import encode, error_reply
from fpgashare.sched import make_policy
from fpgashare.sched.online import OnlineEngine
from fpgashare.workload import realtime_spec

SHAPE = (60, 80)


@pytest.fixture
def sock(tmp_path):
    return tmp_path / "fpgashare.sock"


def running(sock, **limits):
    return DaemonThread(Daemon(make_backend("model", load_platform("zcu104")), sock, dilation=20.0,
                               limits=Limits(**limits)))


class Victim:
    """Another client's admitted pipeline: every one of its frames must be on time."""

    def __init__(self, sock) -> None:
        self.fpga = connect(sock)
        self.pipe = self.fpga.pipeline("victim", ["threshold"], period_ms=5.0, frame_shape=SHAPE)

    def stream(self, n: int = 5) -> None:
        frame = np.zeros(SHAPE, np.uint8)
        for _ in range(n):
            self.pipe.submit(frame).result(timeout=20)      # DeadlineMissed / FrameDropped would raise

    def check(self, daemon) -> None:
        self.stream()
        assert daemon.per_pipeline["victim"]["outcomes"] == {"on_time": 10}
        self.fpga.close()


def test_pipelines_per_client(sock):
    with running(sock, pipelines_per_client=2) as daemon:
        victim = Victim(sock)
        victim.stream()
        with connect(sock) as abuser:
            for i in range(2):
                abuser.pipeline(f"p{i}", ["threshold"], period_ms=50.0, frame_shape=SHAPE)
            with pytest.raises(QuotaExceeded, match="limit pipelines_per_client = 2") as err:
                abuser.pipeline("p2", ["threshold"], period_ms=50.0, frame_shape=SHAPE)
            assert err.value.kind == "quota"
            victim.check(daemon)


def test_dnn_per_client(sock):
    with running(sock, dnn_per_client=1) as daemon:
        victim = Victim(sock)
        victim.stream()
        with connect(sock) as abuser:
            abuser.dnn("d0", "digits_cnn")
            with pytest.raises(QuotaExceeded, match="limit dnn_per_client = 1"):
                abuser.dnn("d1", "digits_cnn")
            victim.check(daemon)


@pytest.mark.parametrize("limit", ["shm_bytes_per_client", "shm_bytes_total"])
def test_shared_memory_bytes(sock, limit):
    ring = 4 * 2 * SHAPE[0] * SHAPE[1]            # the victim's ring: 4 slots of input and output
    limits = {"shm_bytes_per_client": 10 * ring, "shm_bytes_total": 10 * ring}
    limits[limit] = 3 * ring if limit == "shm_bytes_per_client" else 4 * ring
    with running(sock, **limits) as daemon:
        victim = Victim(sock)
        victim.stream()
        with connect(sock) as abuser:
            for i in range(3):
                abuser.pipeline(f"p{i}", ["threshold"], period_ms=50.0, frame_shape=SHAPE)
            with pytest.raises(QuotaExceeded, match=f"limit {limit} = {limits[limit]}"):
                abuser.pipeline("p3", ["threshold"], period_ms=50.0, frame_shape=SHAPE)
            assert daemon.shm_bytes == 4 * ring <= limits["shm_bytes_total"]
            victim.check(daemon)


def test_outstanding_requests_per_client(sock):
    with running(sock, outstanding_per_client=2) as daemon:
        victim = Victim(sock)
        victim.stream()
        with connect(sock) as abuser:
            pipes = [abuser.pipeline(f"p{i}", ["threshold"], period_ms=1000.0, frame_shape=SHAPE) for i in range(2)]
            frame = np.zeros(SHAPE, np.uint8)
            pipes[0].submit(frame).result(timeout=20)          # its first frame: taken at once
            held = [pipes[0].submit(frame) for _ in range(2)]  # sooner than a period apart: held, in flight
            abuser.clock()
            with pytest.raises(QuotaExceeded, match="limit outstanding_per_client = 2"):
                pipes[1].submit(frame).result(timeout=20)
            victim.check(daemon)
        assert len(held) == 2                  # they end dropped with the connection (client gone)


def test_message_rate(sock):
    with running(sock, messages_per_s=200.0) as daemon:
        victim = Victim(sock)
        victim.stream()
        raw = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        raw.connect(str(sock))
        raw.sendall(b"".join(encode({"op": "clock", "id": i}) for i in range(1000)))
        replies = b""
        raw.settimeout(10)
        while replies.count(b"\xa2ok") < 1000:
            replies += raw.recv(1 << 16)
        assert b"limit messages_per_s = 200.0" in replies
        raw.close()
        victim.check(daemon)


def test_frames_faster_than_their_period_are_held_and_others_keep_their_deadlines():
    """On a virtual clock: an abuser declares 720p frames every 40 ms (6 ms deadline), then keeps
    four in flight at all times. Its frames are released at 40 ms a frame (held to its period), and the
    victim's frames every 10 ms all meet their deadlines."""
    platform = load_platform("zcu104")
    clock = VirtualClock()
    engine = OnlineEngine(platform, make_backend("model", platform), make_policy("edf"), clock)
    ended = []
    engine.on_finish = ended.append
    engine.begin()
    victim = realtime_spec("victim", ["threshold"], 0.010, 0.010, [240, 320], platform)
    abuser = realtime_spec("abuser", ["gauss3x3", "threshold"], 0.040, 0.006, [720, 1280], platform)
    engine.add_pipeline(victim)
    engine.add_pipeline(abuser)
    pixels = {"victim": np.zeros((240, 320), np.uint8), "abuser": np.zeros((720, 1280), np.uint8)}
    releases, mine, step = [], [], 0.0005
    for k in range(int(2.0 / step)):
        t = k * step
        clock.wait_until(max(t, clock.now()))
        if k % 20 == 0:
            mine.append(engine.submit("victim", pixels["victim"]))
        while sum(1 for f in engine.frames if f.pipeline.name == "abuser") < 4:   # a ring of four, always full
            releases.append(engine.submit("abuser", pixels["abuser"]).release)
        engine.advance_to(t)
    assert len(releases) > 40          # held to 40 ms a frame, with at most one frame's burst:
    assert all(r >= releases[0] + (i - 1) * 0.040 - 1e-9 for i, r in enumerate(releases))
    done = [f for f in mine if f.outcome is not None]
    assert len(done) >= 190 and all(f.outcome == "on_time" for f in done)


def test_a_client_that_never_reads_its_replies_cannot_grow_the_daemon(sock):
    """Its requests stop being read once its replies back up (the socket's buffers and the
    transport's 64 KiB high-water mark); the daemon's buffer for it stays small."""
    with running(sock, messages_per_s=1e9) as daemon:
        victim = Victim(sock)
        victim.stream()
        hog = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        hog.connect(str(sock))
        hog.setblocking(False)
        request = encode({"op": "status", "id": 1})
        sent = 0
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                sent += hog.send(request)
            except BlockingIOError:
                time.sleep(0.05)                       # the daemon may read a little more
                try:
                    sent += hog.send(request)
                except BlockingIOError:
                    break
        assert time.monotonic() < deadline, "the daemon kept reading a client that never reads"
        hog_client = max(daemon.clients.values(), key=lambda c: c.id)
        buffered = hog_client.writer.transport.get_write_buffer_size()
        assert buffered < 2 * 1024 * 1024, buffered
        victim.check(daemon)
        hog.close()


def test_connections(sock):
    """The refusal is a parting error on a socket the daemon closes at once: the client reads it
    even when its hello finds the socket already closed, and raises it typed."""
    with running(sock, clients=2) as daemon:
        victim = Victim(sock)
        victim.stream()
        with connect(sock):
            for _ in range(20):
                with pytest.raises(QuotaExceeded, match="too many connections: limit clients = 2"):
                    connect(sock)
            victim.check(daemon)


def test_a_refusal_sent_before_the_close_is_read_even_when_the_send_fails(tmp_path):
    """The race made deterministic: the daemon's side writes its refusal and closes before the
    client's first request; the send fails (EPIPE) and the client still reads the refusal."""
    path = tmp_path / "refuser.sock"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen(1)
    conn = Connection(path, timeout=5.0)
    conn._connect()
    peer, _ = server.accept()
    peer.sendall(error_reply(-1, refuse("clients", 2, "too many connections")))
    peer.close()
    with pytest.raises(QuotaExceeded, match="too many connections: limit clients = 2"):
        conn._send("hello")
    conn._shut()
    server.close()

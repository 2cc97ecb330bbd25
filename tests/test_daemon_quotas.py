"""Quotas and backpressure: each limit refuses its abuser with a ``quota`` error naming it, while
another client's admitted pipeline meets every deadline; frames faster than their declared period
are held to it, so they cannot take the time admission promised others. Every daemon here runs on a
virtual clock: outcomes do not depend on the host's load."""

from __future__ import annotations

import contextlib
import mmap
import os
import socket
import struct
import threading
import time
from pathlib import Path

import msgpack
import numpy as np
import pytest
from fpgashare.backends import make_backend
from fpgashare.catalogue.platform import load_platform
from fpgashare.catalogue.workload import realtime_spec
from fpgashare.client import QuotaExceeded, connect
from fpgashare.client.connection import Connection
from fpgashare.daemon import Daemon, DaemonThread, Limits
from fpgashare.daemon.limits import refuse
from fpgashare.sched.board.board import Board
from fpgashare.sched.core.clock import VirtualClock
from fpgashare.sched.policies.registry import make_policy
from fpgashare.wire.protocol import VERSION, encode, error_reply

SHAPE = (64, 80)           #: a ring of it (4 slots of input and output) is 40,960 bytes: whole pages
RING = 4 * 2 * SHAPE[0] * SHAPE[1]
SHM_TOTAL = 16 * RING      #: the configured totals unless a test sets its own
RSS_ALLOWANCE = 32 << 20   #: the daemon's own working memory may move this much while a client abuses it


class Footprint:
    """This process's memory as the kernel counts it (daemon and clients both live here): the frame
    rings mapped (anonymous memory files named fpgashare-*, by inode), fpgashare files in
    /dev/shm, and resident set sizes (VmRSS; RssShmem, the rings' touched pages among them)."""

    def __init__(self) -> None:
        self.rings: dict[int, int] = {}
        with open("/proc/self/maps") as maps:
            for line in maps:
                parts = line.split()
                if len(parts) >= 6 and parts[5].startswith("/memfd:fpgashare-"):
                    start, end = (int(v, 16) for v in parts[0].split("-"))
                    inode = int(parts[4])
                    self.rings[inode] = max(self.rings.get(inode, 0), end - start)
        # This process's files in /dev/shm (mapped or open): other test files' daemons, run beside
        # this one by pytest's other worker, make and sweep their own there.
        with open("/proc/self/maps") as maps:
            held = {line.split()[5] for line in maps if len(line.split()) >= 6}
        held |= {os.readlink(f"/proc/self/fd/{fd}") for fd in os.listdir("/proc/self/fd")
                 if os.path.exists(f"/proc/self/fd/{fd}")}
        shm = Path("/dev/shm")
        self.dev_shm = {e.name: e.stat().st_size for e in shm.iterdir()
                        if e.name.startswith("fpgashare") and str(e) in held} if shm.is_dir() else {}
        with open("/proc/self/status") as status:
            fields = dict(line.split(":", 1) for line in status)
        self.rss = int(fields["VmRSS"].split()[0]) * 1024
        self.rss_shmem = int(fields["RssShmem"].split()[0]) * 1024


def touch(pipe) -> None:
    """Write every byte of a pipeline's ring, as a client streaming through it does: its pages resident."""
    for slot in range(pipe.ring.spec.slots):
        pipe.ring.input(slot)[...] = 1
        pipe.ring.output(slot)[...] = 1


def assert_within_totals(daemon, before: Footprint, warm: Footprint) -> None:
    """The rings that exist, in /dev/shm or mapped, stay under the configured total, and so does what
    the process's RSS grew by while the abuser ran (``warm``: after the victim's first frames)."""
    now = Footprint()
    total = daemon.limits.shm_bytes_total
    mapped = sum(size for inode, size in now.rings.items() if inode not in before.rings)
    assert 0 < mapped <= total, (mapped, total)
    pages = sum(-(-state.ring.nbytes // mmap.PAGESIZE) * mmap.PAGESIZE for _, state in daemon.states.values())
    assert mapped == pages                        # the daemon's count is what the kernel maps (in whole pages)
    dev_shm = sum(size for name, size in now.dev_shm.items() if name not in before.dev_shm)
    assert dev_shm <= total and dev_shm == 0      # private rings: nothing in /dev/shm at all
    assert now.rss_shmem - warm.rss_shmem <= total, (now.rss_shmem - warm.rss_shmem, total)
    assert now.rss - warm.rss <= total + RSS_ALLOWANCE, (now.rss - warm.rss, total)


@pytest.fixture
def sock(tmp_path):
    return tmp_path / "fpgashare.sock"


@contextlib.contextmanager
def running(sock, **limits):
    """A daemon with ``limits`` on a virtual clock that a ticker thread moves on (0.5 ms a step,
    a step at most every wall millisecond): frames complete, yet whether one is on time depends on
    board time only, never on how loaded the host is."""
    limits = {"shm_bytes_per_client": SHM_TOTAL, "shm_bytes_total": SHM_TOTAL, **limits}
    daemon = Daemon(make_backend("model", load_platform("zcu104")), sock, clock=VirtualClock(),
                    limits=Limits(**limits))
    with DaemonThread(daemon) as started:
        stop = threading.Event()
        ticker = threading.Thread(target=_tick, args=(daemon, stop), daemon=True)
        ticker.start()
        try:
            yield started
        finally:
            stop.set()
            ticker.join()


def _tick(daemon: Daemon, stop: threading.Event) -> None:
    t = 0.0
    while not stop.wait(0.001):
        t += 0.0005
        daemon.run_until(t)


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
    before = Footprint()
    with running(sock, pipelines_per_client=2) as daemon:
        victim = Victim(sock)
        victim.stream()
        warm = Footprint()
        with connect(sock) as abuser:
            for i in range(2):
                touch(abuser.pipeline(f"p{i}", ["threshold"], period_ms=50.0, frame_shape=SHAPE))
            with pytest.raises(QuotaExceeded, match="limit pipelines_per_client = 2") as err:
                abuser.pipeline("p2", ["threshold"], period_ms=50.0, frame_shape=SHAPE)
            assert err.value.kind == "quota"
            assert_within_totals(daemon, before, warm)
            victim.check(daemon)


def test_dnn_per_client(sock):
    before = Footprint()
    with running(sock, dnn_per_client=1) as daemon:
        victim = Victim(sock)
        victim.stream()
        warm = Footprint()
        with connect(sock) as abuser:
            abuser.dnn("d0", "digits_cnn")
            with pytest.raises(QuotaExceeded, match="limit dnn_per_client = 1"):
                abuser.dnn("d1", "digits_cnn")
            assert_within_totals(daemon, before, warm)
            victim.check(daemon)


@pytest.mark.parametrize("limit", ["shm_bytes_per_client", "shm_bytes_total"])
def test_shared_memory_bytes(sock, limit):
    ring = RING                                   # the victim's ring: 4 slots of input and output
    limits = {"shm_bytes_per_client": 10 * ring, "shm_bytes_total": 10 * ring}
    limits[limit] = 3 * ring if limit == "shm_bytes_per_client" else 4 * ring
    before = Footprint()
    with running(sock, **limits) as daemon:
        victim = Victim(sock)
        victim.stream()
        warm = Footprint()
        with connect(sock) as abuser:
            for i in range(3):
                touch(abuser.pipeline(f"p{i}", ["threshold"], period_ms=50.0, frame_shape=SHAPE))
            for _ in range(20):                   # asking again and again takes nothing more
                with pytest.raises(QuotaExceeded, match=f"limit {limit} = {limits[limit]}"):
                    abuser.pipeline("p3", ["threshold"], period_ms=50.0, frame_shape=SHAPE)
            assert daemon.shm_bytes == 4 * ring <= limits["shm_bytes_total"]
            assert_within_totals(daemon, before, warm)
            victim.check(daemon)


def test_outstanding_requests_per_client(sock):
    before = Footprint()
    with running(sock, outstanding_per_client=2) as daemon:
        victim = Victim(sock)
        victim.stream()
        warm = Footprint()
        with connect(sock) as abuser:
            pipes = [abuser.pipeline(f"p{i}", ["threshold"], period_ms=1000.0, frame_shape=SHAPE) for i in range(2)]
            frame = np.zeros(SHAPE, np.uint8)
            pipes[0].submit(frame).result(timeout=20)          # its first frame: taken at once
            held = [pipes[0].submit(frame) for _ in range(2)]  # sooner than a period apart: held, in flight
            abuser.clock()
            with pytest.raises(QuotaExceeded, match="limit outstanding_per_client = 2"):
                pipes[1].submit(frame).result(timeout=20)
            assert_within_totals(daemon, before, warm)
            victim.check(daemon)
        assert len(held) == 2                  # they end dropped with the connection (client gone)


def test_message_rate(sock):
    before = Footprint()
    with running(sock, messages_per_s=200.0) as daemon:
        victim = Victim(sock)
        victim.stream()
        warm = Footprint()
        raw = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        raw.connect(str(sock))
        raw.sendall(b"".join(encode({"op": "clock", "id": i}) for i in range(1000)))
        replies = b""
        raw.settimeout(10)
        while replies.count(b"\xa2ok") < 1000:
            replies += raw.recv(1 << 16)
        assert b"limit messages_per_s = 200.0" in replies
        assert_within_totals(daemon, before, warm)
        raw.close()
        victim.check(daemon)


def test_frames_faster_than_their_period_are_held_and_others_keep_their_deadlines():
    """On a virtual clock: an abuser declares 720p frames every 40 ms (6 ms deadline), then keeps
    four in flight at all times. Its frames are released at 40 ms a frame (held to its period), and the
    victim's frames every 10 ms all meet their deadlines."""
    platform = load_platform("zcu104")
    clock = VirtualClock()
    engine = Board.whole(platform, make_backend("model", platform), lambda: make_policy("edf"), clock)
    ended = []
    engine.on_finish = ended.append
    engine.begin()
    victim = realtime_spec("victim", ["threshold"], 0.010, 0.010, [240, 320], platform)
    abuser = realtime_spec("abuser", ["gauss3x3", "threshold"], 0.040, 0.006, [720, 1280], platform)
    ready = []
    engine.add_pipeline(victim, on_ready=lambda: ready.append("victim"))
    engine.add_pipeline(abuser, on_ready=lambda: ready.append("abuser"))
    while len(ready) < 2:                 # registration returns once each one's mode change is done
        due = engine.next_event_s()
        clock.wait_until(due)
        engine.advance_to(due)
    pixels = {"victim": np.zeros((240, 320), np.uint8), "abuser": np.zeros((720, 1280), np.uint8)}
    sent, mine, step, start = [], [], 0.0005, clock.now()
    for k in range(int(2.0 / step)):
        t = start + k * step
        clock.wait_until(max(t, clock.now()))
        if k % 20 == 0:
            mine.append(engine.submit("victim", pixels["victim"]))
        while sum(1 for f in engine.frames if f.pipeline.name == "abuser") < 4:   # a ring of four, always full
            sent.append(engine.submit("abuser", pixels["abuser"]))
        engine.advance_to(t)
    releases = [f.release for f in sent if f.outcome is not None]
    assert len(releases) > 40          # held to 40 ms a frame, with at most one frame's burst:
    assert all(r >= releases[0] + (i - 1) * 0.040 - 1e-9 for i, r in enumerate(releases))
    done = [f for f in mine if f.outcome is not None]
    assert len(done) >= 190 and all(f.outcome == "on_time" for f in done)


def test_a_client_that_never_reads_its_replies_cannot_grow_the_daemon(sock):
    """Its requests stop being read once its replies back up (the socket's buffers and the
    transport's 64 KiB high-water mark); the daemon's buffer for it stays small."""
    before = Footprint()
    with running(sock, messages_per_s=1e9) as daemon:
        victim = Victim(sock)
        victim.stream()
        warm = Footprint()
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
        assert_within_totals(daemon, before, warm)
        victim.check(daemon)
        hog.close()


@pytest.mark.parametrize("body", [b"\xc1", msgpack.packb({"v": VERSION}), msgpack.packb({"v": VERSION, "id": "x"})],
                         ids=["not-msgpack", "no-id", "text-id"])
def test_a_client_flooding_bodies_that_are_no_request_is_held_like_any_other(sock, body):
    """Bodies that are no request (each answered ``malformed``, the connection kept) cost what a
    request costs: the sender's rate, and no more read while its replies back up. Each 5-byte
    body is answered with ~100 bytes: unread, they must not pile up in the daemon."""
    before = Footprint()
    with running(sock, messages_per_s=1e9) as daemon:
        victim = Victim(sock)
        victim.stream()
        warm = Footprint()
        hog = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        hog.connect(str(sock))
        hog.setblocking(False)
        chunk = (struct.pack(">I", len(body)) + body) * 4096
        sent = 0
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                sent += hog.send(chunk)
            except BlockingIOError:
                time.sleep(0.05)
                try:
                    sent += hog.send(chunk)
                except BlockingIOError:
                    break
        assert time.monotonic() < deadline, "the daemon kept reading a client that never reads"
        hog_client = max(daemon.clients.values(), key=lambda c: c.id)
        buffered = hog_client.writer.transport.get_write_buffer_size()
        assert buffered < 2 * 1024 * 1024, (buffered, sent)
        assert_within_totals(daemon, before, warm)
        victim.check(daemon)
        hog.close()
    with running(sock, messages_per_s=50.0):                 # a second's burst: 50
        raw = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        raw.connect(str(sock))
        started = time.monotonic()
        raw.sendall((struct.pack(">I", len(body)) + body) * 100 + encode({"op": "clock", "id": 7}))
        replies = b""
        raw.settimeout(10)
        while b"\xa2id\x07" not in replies:
            replies += raw.recv(1 << 16)
        # The clock's answer waited for the bucket: 51 requests past the burst at 50 a second.
        assert time.monotonic() - started >= 0.9
        assert replies.count(b"malformed") == 100          # each answered, none dropped
        raw.close()


def test_connections(sock):
    """The refusal is a parting error on a socket the daemon closes at once: the client reads it
    even when its hello finds the socket already closed, and raises it typed."""
    before = Footprint()
    with running(sock, clients=2, root_reserve=0) as daemon:      # root: no connections beyond the cap
        victim = Victim(sock)
        victim.stream()
        warm = Footprint()
        with connect(sock):
            for _ in range(20):
                with pytest.raises(QuotaExceeded, match="too many connections: limit clients = 2"):
                    connect(sock)
            assert_within_totals(daemon, before, warm)
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


def test_the_descriptor_budget_keeps_room_for_root_and_the_daemon(fresh_seed):
    """For any descriptor limit and any configured caps: other users' connections, root's reserve
    and the daemon's own descriptors fit in the limit; each user's share fits in what is left."""
    from fpgashare.daemon.limits import ENGINE_FDS, DescriptorBudget
    from fpgashare.errors import FpgashareError

    rng = np.random.default_rng(fresh_seed)
    for _ in range(500):
        limits = Limits(clients=int(rng.integers(1, 500)), root_reserve=int(rng.integers(1, 32)),
                        descriptors_per_user=int(rng.integers(0, 300)))
        nofile = int(rng.integers(1, 4096))
        room = nofile - ENGINE_FDS - limits.root_reserve
        if room < 2:
            with pytest.raises(FpgashareError, match="leaves no room for clients"):
                DescriptorBudget.split(nofile, limits)
            continue
        budget = DescriptorBudget.split(nofile, limits)
        assert 1 <= budget.clients <= limits.clients, (fresh_seed, nofile, limits, budget)
        assert budget.clients + limits.root_reserve + ENGINE_FDS <= nofile, (fresh_seed, nofile, limits, budget)
        assert 1 <= budget.per_user <= room, (fresh_seed, nofile, limits, budget)

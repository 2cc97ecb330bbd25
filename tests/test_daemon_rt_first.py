"""The real-time path runs before anything else on the daemon's loop (runtime/daemon/control_lane.py):
a real-time frame that becomes ready together with control requests and a DNN burst is handed to
the engine first; one that becomes ready while control work is queued waits for no more than the
piece of control work then running; a frame whose end is due ends before the next control piece.

No wall-clock luck: the daemon runs on a virtual clock, and every request is in its socket before
the loop (held on a callback meanwhile) looks, so the order follows from the loop's turns alone."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import random
import socket
import sys
import threading

import numpy as np
import pytest
from fpgashare.backends import make_backend
from fpgashare.catalogue.platform import load_platform
from fpgashare.client import connect
from fpgashare.daemon import Daemon, DaemonThread
from fpgashare.daemon.control_lane import ControlLane
from fpgashare.daemon.eventloop import SWITCH_INTERVAL_S
from fpgashare.sched.core.clock import VirtualClock
from fpgashare.sched.host.host_cost import HostCost
from fpgashare.wire.protocol import encode

SHAPE = (48, 64)
CONTROL = ("status", "hello", "clock", "pipeline", "close", "infer")


@contextlib.contextmanager
def held(daemon: Daemon):
    """The daemon's loop held on one callback for the block: what is sent meanwhile is all in
    its sockets when the loop next looks."""
    holding, go = threading.Event(), threading.Event()

    def hold() -> None:
        holding.set()
        go.wait(30)

    daemon._loop.call_soon_threadsafe(hold)
    assert holding.wait(30)
    try:
        yield
    finally:
        go.set()


def recording(daemon: Daemon, order: list[str], on_start=None) -> None:
    """Every op's handler notes its op in ``order`` as it starts (``on_start(op, n)`` then runs)."""
    for op, handler in list(daemon.ops.handlers.items()):
        async def noted(client, message, op=op, handler=handler):
            order.append(op)
            if on_start is not None:
                on_start(op, len(order))
            return await handler(client, message)
        daemon.ops.handlers[op] = noted


def raw(sock_path) -> socket.socket:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(str(sock_path))
    return s


def control_burst(rng: random.Random, first_id: int) -> bytes:
    """Control requests in a random order: status, hello, clock, a registration, a close."""
    messages = [{"op": "status"}, {"op": "hello"}, {"op": "clock"}, {"op": "close", "pipeline": "nothing"},
                {"op": "pipeline", "name": f"late{first_id}", "stages": ["threshold"], "period_ms": 20.0,
                 "frame_shape": list(SHAPE), "params": {}}]
    messages += [{"op": rng.choice(["status", "hello", "clock"])} for _ in range(rng.randrange(0, 8))]
    rng.shuffle(messages)
    return b"".join(encode({**m, "id": first_id + k}) for k, m in enumerate(messages))


def settle(daemon: Daemon, futures: list) -> None:
    """Move the virtual clock on until every future has its reply (requests still waiting for
    their turn get it as the loop goes round)."""
    for _ in range(2000):
        if all(f._future.done() for f in futures):
            break
        daemon.run_until(daemon.clock.now() + 0.005)
    for f in futures:
        with contextlib.suppress(Exception):
            f.result(timeout=30)


@pytest.fixture
def daemon(tmp_path):
    return Daemon(make_backend("model", load_platform("zcu104")), tmp_path / "d.sock", clock=VirtualClock(),
                  host_cost=HostCost())


def test_a_frame_ready_with_control_work_and_a_dnn_burst_goes_first(daemon, tmp_path, fresh_seed):
    rng = random.Random(fresh_seed)
    frame = np.zeros(SHAPE, np.uint8)
    with DaemonThread(daemon), connect(daemon.socket_path, timeout=30) as app, \
            connect(daemon.socket_path, timeout=30) as dnn_app:
        pipe = app.pipeline("cam", ["threshold"], period_ms=10.0, frame_shape=SHAPE)
        digits = dnn_app.dnn("digits", model="digits_cnn")
        image = np.zeros(digits.ring.spec.in_shape, digits.ring.spec.np_dtype)
        controllers = [raw(daemon.socket_path) for _ in range(rng.randrange(2, 5))]
        order: list[str] = []
        recording(daemon, order)
        with held(daemon):
            for k, s in enumerate(controllers):
                s.sendall(control_burst(rng, 1000 * (k + 1)))
            burst = [digits.submit(image) for _ in range(digits.ring.spec.slots)]
            frame_future = pipe.submit(frame)          # sent last of all
        settle(daemon, [frame_future, *burst])
        frame_future.result(timeout=30)
        for s in controllers:
            s.close()
        control = app.status()["control"]
    assert order[0] == "submit", (fresh_seed, order)
    assert control["turns"] >= len(order) - 1 and 0 <= control["piece_cpu_p50_ms"] <= control["piece_cpu_max_ms"], \
        (fresh_seed, control)
    assert set(order[1:]) <= set(CONTROL) and "infer" in order and "pipeline" in order, (fresh_seed, order)


def test_a_frame_waits_for_no_more_than_the_control_piece_running(daemon, fresh_seed):
    """A frame sent while the lane has a backlog (status, a DNN burst) is taken right after the
    piece that was running, before the next one."""
    rng = random.Random(fresh_seed)
    frame = np.zeros(SHAPE, np.uint8)
    with DaemonThread(daemon), connect(daemon.socket_path, timeout=30) as app, \
            connect(daemon.socket_path, timeout=30) as dnn_app:
        pipe = app.pipeline("cam", ["threshold"], period_ms=10.0, frame_shape=SHAPE)
        digits = dnn_app.dnn("digits", model="digits_cnn")
        image = np.zeros(digits.ring.spec.in_shape, digits.ring.spec.np_dtype)
        controllers = [raw(daemon.socket_path) for _ in range(3)]
        sent_at = rng.randrange(2, 8)     # the control piece, counted from the first, while which it comes
        order: list[str] = []
        frames: list = []
        sent = threading.Event()

        def send_frame(op: str, n: int) -> None:
            if op != "submit" and not frames and sum(o != "submit" for o in order) == sent_at:
                frames.append((n, pipe.submit(frame)))
                sent.set()
        recording(daemon, order, send_frame)
        with held(daemon):
            for k, s in enumerate(controllers):
                s.sendall(control_burst(rng, 1000 * (k + 1)))
            burst = [digits.submit(image) for _ in range(digits.ring.spec.slots)]
        assert sent.wait(30), (fresh_seed, order)
        settle(daemon, [frames[0][1], *burst])
        frames[0][1].result(timeout=30)
        for s in controllers:
            s.close()
    n = frames[0][0]                  # order[n - 1] is the piece during which the frame was sent
    assert order[n] == "submit", (fresh_seed, n, order)
    assert order.count("submit") == 1 and len(order) > n + 1, (fresh_seed, n, order)


def test_a_frame_end_due_is_taken_before_the_next_control_piece(daemon, fresh_seed):
    frame = np.zeros(SHAPE, np.uint8)
    with DaemonThread(daemon), connect(daemon.socket_path, timeout=30) as app:
        pipe = app.pipeline("cam", ["threshold"], period_ms=10.0, frame_shape=SHAPE)
        future = pipe.submit(frame)
        app.clock()                   # one request after it on its connection: the frame is on the fabric
        ends: list[str] = []
        answer = daemon.driver.on_ended
        daemon.driver.on_ended = lambda item: (ends.append("end"), answer(item))
        order: list[str] = []
        recording(daemon, order, lambda op, n: ends.append(op))
        controller = raw(daemon.socket_path)
        with held(daemon):
            # The frame's end falls due while nothing has run it: the clock moved past it.
            daemon.clock.wait_until(daemon.clock.now() + 0.01)
            controller.sendall(control_burst(random.Random(fresh_seed), 1))
        settle(daemon, [future])
        controller.close()
    assert ends[0] == "end", (fresh_seed, ends)


def test_the_lane_runs_no_control_piece_between_a_ready_item_and_its_run(fresh_seed):
    """On generated schedules: control pieces (callbacks and coroutines) that make real-time items
    ready (timers due now) while they run; no other control piece starts before each item runs."""
    seed = fresh_seed
    rng = random.Random(seed)

    async def main() -> tuple[list, int]:
        loop = asyncio.get_running_loop()
        lane = ControlLane(loop)
        log: list = []

        def piece(k: int) -> None:
            log.append(("piece", k))
            for j in range(rng.randrange(0, 3)):
                label = (k, j)
                log.append(("ready", label))
                loop.call_at(loop.time(), log.append, ("run", label))

        async def coroutine(k: int) -> None:
            await asyncio.sleep(0) if rng.random() < 0.5 else None
            await lane.turn()
            piece(k)

        tasks = []
        for k in range(rng.randrange(5, 60)):
            if rng.random() < 0.5:
                lane.call(lambda k=k: piece(k))
            else:
                tasks.append(asyncio.ensure_future(coroutine(k)))
            if rng.random() < 0.3:
                await asyncio.sleep(0)
        while lane.waiting or not all(t.done() for t in tasks) or lane._running:
            await asyncio.sleep(0)
        await asyncio.sleep(0)
        return log, lane.granted

    log, granted = asyncio.run(main())
    pieces = [e for e in log if e[0] == "piece"]
    assert granted == len(pieces), seed
    pending: set = set()
    for kind, label in log:
        if kind == "ready":
            pending.add(label)
        elif kind == "run":
            pending.discard(label)
        else:
            assert not pending, (seed, label, pending)
    assert not pending, seed


def test_a_serving_daemon_tunes_the_interpreter_and_restores_it(tmp_path):
    """A worker's Python gives the loop thread the interpreter's lock within SWITCH_INTERVAL_S
    while the daemon serves, and what was alive at its start is out of the collector's reach;
    the interval and the collector are as they were once it stops."""
    before, frozen = sys.getswitchinterval(), gc.get_freeze_count()
    daemon = Daemon(make_backend("model", load_platform("zcu104")), tmp_path / "d.sock", host_cost=HostCost())
    with DaemonThread(daemon):
        during, frozen_during = sys.getswitchinterval(), gc.get_freeze_count()
    assert during == pytest.approx(min(before, SWITCH_INTERVAL_S))
    assert frozen_during > frozen
    assert sys.getswitchinterval() == before and gc.get_freeze_count() == 0

"""``fpgashare daemon``: owns the FPGA and serves apps over a Unix socket.

One thread of control, an asyncio loop (runtime/eventloop.py: timers to the microsecond). It
reads requests (runtime/protocol.py), checks every field (checks.py) and the client's quotas
(limits.py), and hands them to the engine (runtime/sched/online.py), which it then advances to the
clock's now; a timer on the loop wakes it when the next event is due. A frame that ends is
answered at once: its output goes into the client's ring and the reply onto its socket.

Rings are private to their client (runtime/shm.py): an anonymous memory file whose descriptor
goes to the client with the registration's reply and nowhere else. Pipeline names are per client:
the engine knows a pipeline by a name unique across clients (the client's own unless another
client holds it, then ``name@client``).

A frame whose pipeline closes while it is on the fabric ends ``dropped`` with the reason: its
output is never written into a ring that is going away, and never answered as a result.

Failures: a request the daemon cannot take is a typed error reply; an exception out of the engine
is a bug that would leave slots and frames in an unknown state, so the daemon logs it and stops
(systemd restarts it) rather than carry on.
"""

from __future__ import annotations

import asyncio
import contextlib
import grp
import logging
import os
import pwd
import signal
import socket
import struct
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from fpgashare.backends.base import Backend
from fpgashare.clock import WallClock
from fpgashare.daemon.limits import Limits, RateLimiter, refuse
from fpgashare.daemon.lock import BoardLock, sweep_stale_rings
from fpgashare.daemon.ops import Ops
from fpgashare.daemon.stats import Stats
from fpgashare.errors import FpgashareError
from fpgashare.eventloop import tighten_timer_slack
from fpgashare.protocol import ProtocolError, error_reply, read_message, reply
from fpgashare.sched import make_policy
from fpgashare.sched.engine import DnnRequest, Frame
from fpgashare.sched.online import OnlineEngine
from fpgashare.shm import FrameRing

log = logging.getLogger("fpgashare.daemon")

DEFAULT_SOCKET = Path(os.environ.get("FPGASHARE_SOCKET", "/run/fpgashare/fpgashare.sock"))
CLIENT_GONE = "client gone"
SHUTTING_DOWN = "daemon shutting down"
SHUTDOWN_GRACE_S = 5.0    #: wall seconds frames on the fabric get to finish when the daemon stops
FD_SEND_WAIT_S = 5.0      #: how long a ring's descriptor waits for room in a client's socket


@dataclass
class PipelineState:
    name: str                     #: the client's name for it
    key: str                      #: the engine's name (unique across clients)
    ring: FrameRing
    free: set[int]
    in_flight: dict[int, int] = field(default_factory=dict)   # frame seq -> ring slot
    closing: str | None = None    #: why it is ending, once it is


@dataclass
class Client:
    id: int
    pid: int
    uid: int
    gid: int
    writer: asyncio.StreamWriter
    rate: RateLimiter
    pipelines: dict[str, PipelineState] = field(default_factory=dict)   # by the client's name
    submits: dict[int, int] = field(default_factory=dict)    # frame seq -> request id
    shm_bytes: int = 0

    def in_flight(self) -> int:
        return sum(len(s.in_flight) for s in self.pipelines.values())


class Daemon(Ops):
    def __init__(self, backend: Backend, socket_path: str | Path = DEFAULT_SOCKET, dilation: float = 1.0,
                 scheduler: str = "edf", metrics_port: int | None = None, limits: Limits | None = None,
                 socket_group: str | None = None, clock=None, watchdog_margin: float | None = None) -> None:
        """``metrics_port``: serve Prometheus metrics on 127.0.0.1 at that port (0: any free one);
        ``socket_group``: the group the socket (mode 0660) belongs to (default: the daemon's);
        ``clock``: a VirtualClock for tests (no timers: the test moves time with ``run_until``),
        else a WallClock at ``dilation``; ``watchdog_margin``: how far past its expected time (a
        fraction of it) a load or frame may run before the watchdog ends it (runtime/sched/online.py)."""
        self.backend, self.platform = backend, backend.platform
        self.socket_path = Path(socket_path)
        self.socket_group = socket_group
        self.limits = limits or Limits()
        self.clock = clock if clock is not None else WallClock(dilation)
        self.dilation = getattr(self.clock, "dilation", 1.0)
        self.virtual = not isinstance(self.clock, WallClock)
        if backend.name != "pynq" and not self.virtual:   # a simulated board's slowness must not pass for board time
            backend.held_clock = self.clock
        self.engine = OnlineEngine(self.platform, backend, make_policy(scheduler), self.clock)
        if watchdog_margin is not None:
            self.engine.watchdog_margin = watchdog_margin
        # Items that end during an engine call are answered once it returns, never from inside it.
        self._ended: deque[Frame | DnnRequest] = deque()
        self.engine.on_finish = self._ended.append
        self._timer: asyncio.TimerHandle | None = None   # wakes the engine for its next event
        self._timer_due: float | None = None
        self.clients: dict[int, Client] = {}
        self.states: dict[str, tuple[Client, PipelineState]] = {}    # engine name -> owner, state
        self.shm_bytes = 0                                           # every ring together
        self._next_client = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.base_events.Server | None = None
        self._stopped = asyncio.Event()
        self._registering = asyncio.Lock()   # one registration at a time: each test sees the set it joins
        self.stats = Stats()
        self.failure: BaseException | None = None     #: what stopped the daemon, if a bug did
        self._stopping: asyncio.Future | None = None
        self.shutting_down = False    #: once stop() begins: requests are refused ``gone``
        self.lock = BoardLock(self.socket_path)
        self.metrics_port = metrics_port
        self.metrics = None

    @property
    def outcomes(self) -> dict[str, int]:
        return self.stats.outcomes

    @property
    def per_pipeline(self) -> dict[str, dict]:
        return self.stats.per_pipeline

    # ---- lifecycle
    async def start(self) -> None:
        """Take the board (refused with DaemonRunningError if another daemon has it), sweep what a dead
        daemon left, and listen."""
        self._loop = asyncio.get_running_loop()
        self.socket_path.parent.mkdir(parents=True, exist_ok=True)
        self.lock.acquire()
        try:
            sweep_stale_rings()
            with contextlib.suppress(FileNotFoundError):
                self.socket_path.unlink()        # a dead daemon's: the lock and the probe say so
            self._server = await asyncio.start_unix_server(self._serve, path=str(self.socket_path))
            os.chmod(self.socket_path, 0o660)
            if self.socket_group is not None:
                os.chown(self.socket_path, -1, grp.getgrnam(self.socket_group).gr_gid)
            if self.metrics_port is not None:
                from fpgashare.metrics import DaemonMetrics

                self.metrics = DaemonMetrics(self.engine, self.clock)
                self.metrics_port = self.metrics.serve(self.metrics_port)
                log.info("metrics on http://127.0.0.1:%d/metrics", self.metrics_port)
        except BaseException:
            self.lock.release()
            raise
        tighten_timer_slack()                 # a frame's end is a timer: wake within microseconds
        _warm_up()                            # first-call costs (OpenCV's init) must not land on a frame
        self._step(self.engine.begin)
        log.info("serving %s on %s (%s backend, dilation %g)", self.platform.name, self.socket_path,
                 self.backend.name, self.dilation)

    async def serve_forever(self) -> None:
        await self.start()
        for sig in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                self._loop.add_signal_handler(sig, lambda: asyncio.ensure_future(self.stop()))
        await self._stopped.wait()
        if self.failure is not None:
            raise FpgashareError(f"the daemon stopped on an internal error: {self.failure!r}")

    async def stop(self) -> None:
        """Stop taking requests; every client's pipelines end (waiting frames are dropped with a
        reason, frames on the fabric too), rings are unmapped, the socket file goes."""
        if self._stopped.is_set():
            return
        self.shutting_down = True
        if self._server is not None:
            self._server.close()
        leaving = list(self.clients.values())
        for client in leaving:
            self._client_gone(client, SHUTTING_DOWN)
        # Frames on the fabric end first, each answered dropped with the reason, then the sockets close.
        deadline = time.monotonic() + SHUTDOWN_GRACE_S
        while self.states and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        for client, state in list(self.states.values()):
            self._retire(client, state)
        for client in leaving:
            client.writer.close()           # its reader sees the end and its task finishes
        if self._timer is not None:
            self._timer.cancel()
        if self.metrics is not None:
            self.metrics.close()
        with contextlib.suppress(FileNotFoundError):
            self.socket_path.unlink()
        self.lock.release()
        self._stopped.set()

    # ---- connections
    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        pid, uid, gid = _peer_credentials(writer)
        if len(self.clients) >= self.limits.clients:
            writer.write(error_reply(-1, refuse("clients", self.limits.clients, "too many connections")))
            writer.close()
            return
        self._next_client += 1
        client = Client(self._next_client, pid, uid, gid, writer, RateLimiter(self.limits.messages_per_s))
        self.clients[client.id] = client
        log.info("client %d connected (pid %d, uid %d, gid %d)", client.id, pid, uid, gid)
        try:
            while True:
                try:
                    message = await read_message(reader)
                except ProtocolError as exc:
                    self._send(client, error_reply(-1, exc))
                    if exc.kind in ("oversized", "malformed") and "stream ended" not in str(exc):
                        if exc.kind == "oversized":
                            break          # the stream cannot be resynchronised after a bad length
                        continue
                    break
                if message is None:
                    break
                if not client.rate.take():
                    self._send(client, error_reply(message["id"], refuse(
                        "messages_per_s", self.limits.messages_per_s, "request rate too high")))
                else:
                    await self._handle(client, message)
                # A client that does not read its replies is not read either: they cannot pile up here.
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            self._client_gone(client, CLIENT_GONE)
            with contextlib.suppress(Exception):
                writer.close()

    def _send(self, client: Client, data: bytes) -> None:
        if not client.writer.is_closing():
            client.writer.write(data)

    async def _send_with_fd(self, client: Client, data: bytes, fd: int) -> None:
        """``data`` with ``fd`` on its first byte (SCM_RIGHTS), after every byte already queued;
        ``fd`` is closed here. A client whose socket stays full loses its connection."""
        writer = client.writer
        transport = writer.transport
        try:
            if transport.get_write_buffer_size():
                transport.set_write_buffer_limits(high=0)      # drain() now waits for an empty buffer
                try:
                    await writer.drain()
                finally:
                    transport.set_write_buffer_limits()
            raw = socket.socket(fileno=transport.get_extra_info("socket").fileno())
            try:
                deadline = time.monotonic() + FD_SEND_WAIT_S
                while True:
                    try:
                        sent = socket.send_fds(raw, [data], [fd])
                        break
                    except BlockingIOError:
                        if time.monotonic() > deadline:
                            raise ConnectionError("the client's socket stayed full") from None
                        await asyncio.sleep(0.001)
            finally:
                raw.detach()
            if sent < len(data):
                writer.write(data[sent:])
        finally:
            os.close(fd)

    async def _handle(self, client: Client, message: dict) -> None:
        rid = message["id"]
        op = message.get("op")
        handler = getattr(self, f"_op_{op}", None) if isinstance(op, str) and op.isidentifier() else None
        if self.shutting_down:
            self._send(client, error_reply(rid, ProtocolError("gone", SHUTTING_DOWN)))
            return
        if handler is None:
            self._send(client, error_reply(rid, ProtocolError("unknown_op", f"unknown op {op!r}")))
            return
        try:
            answer = await handler(client, message)
        except ProtocolError as exc:
            self._send(client, error_reply(rid, exc))
        except FpgashareError as exc:
            self._send(client, error_reply(rid, ProtocolError("bad_request", str(exc))))
        except (ConnectionError, asyncio.CancelledError):
            raise
        except Exception as exc:
            log.exception("op %s failed", op)
            self._send(client, error_reply(rid, ProtocolError("internal", f"{type(exc).__name__}: {exc}")))
        else:
            if answer is not None:
                self._send(client, reply(rid, **answer))

    def is_admin(self, client: Client) -> bool:
        """Root, the daemon's own user, or a member of ``limits.admin_gid``."""
        if client.uid in (0, os.getuid()):
            return True
        admin = self.limits.admin_gid
        if admin is None:
            return False
        if client.gid == admin:
            return True
        try:
            return admin in os.getgrouplist(pwd.getpwuid(client.uid).pw_name, client.gid)
        except KeyError:
            return False

    # ---- the engine, on this loop
    def _step(self, fn, *args):
        """``fn(*args)`` on the engine, then every event now due (see ``_advance``)."""
        try:
            return fn(*args)
        finally:
            self._advance()

    def _advance(self) -> None:
        """Take every event due by the clock's now, answer what ended, then set the timer for
        the next event. An exception here is a bug: the daemon stops (see the module's doc)."""
        if self._stopped.is_set() and self.failure is not None:
            return
        try:
            self.engine.advance_to(self.clock.now())
        except Exception as exc:
            log.critical("engine step failed; stopping the daemon", exc_info=True)
            self.failure = exc
            self._stopping = asyncio.ensure_future(self.stop())
            return
        while self._ended:
            self._frame_done(self._ended.popleft())
        due = self.engine.next_event_s()
        if due == self._timer_due:
            return
        if self._timer is not None:
            self._timer.cancel()
        self._timer, self._timer_due = None, due
        if due is not None and not self.virtual:
            wall_s = max(0.0, (due - self.clock.now()) * self.dilation)
            self._timer = self._loop.call_later(wall_s, self._timer_fired)

    def run_until(self, t: float) -> None:
        """A virtual clock's daemon: move time to ``t`` (on the loop) and take every event due."""
        if not self.virtual:
            raise FpgashareError("run_until drives a daemon on a virtual clock only")

        def go():
            # Event by event: each is taken at its own time, not at t.
            while (due := self.engine.next_event_s()) is not None and due <= t:
                self.clock.wait_until(max(due, self.clock.now()))
                self._advance()
            self.clock.wait_until(max(t, self.clock.now()))
            self._advance()

        if self._loop is not None and self._loop.is_running():
            asyncio.run_coroutine_threadsafe(_call(go), self._loop).result(30)
        else:
            go()

    def _timer_fired(self) -> None:
        self._timer, self._timer_due = None, None
        self._advance()

    # ---- frames ending
    def _frame_done(self, frame: Frame | DnnRequest) -> None:
        owner = self.states.get(frame.pipeline.name)
        if owner is None or frame.seq not in owner[1].in_flight:
            return                          # already answered
        client, state = owner
        outcome, reason = frame.outcome, frame.reason
        if state.closing and outcome in ("on_time", "late", "done"):
            # Its ring is going away: the output is not written, so it must not pass for a result.
            outcome, reason = "dropped", f"{state.closing} while the frame was on the fabric"
        elif outcome in ("on_time", "late", "done"):
            garbage = _bad_output(frame, state.ring)
            if garbage:                     # the board's DMA returned something else: not a result
                outcome, reason = "error", garbage
        latency = None if frame.end is None else (frame.end - frame.release) * 1e3
        self.stats.ended(frame.pipeline.name, frame.pipeline.klass, outcome, latency)
        slot = state.in_flight.pop(frame.seq)
        rid = client.submits.pop(frame.seq, -1)
        if isinstance(frame, DnnRequest):   # outputs are a few int8 values: they ride in the reply
            output = frame.output if outcome == "done" else None
            extra = {"output": None if output is None else [int(v) for v in output]}
            metric_latency = None
            frame.image = None
        else:                               # a frame's output goes next to its input in the ring
            if frame.output is not None and outcome in ("on_time", "late"):
                state.ring.output(slot)[...] = frame.output
            extra = {"latency_ms": latency}
            metric_latency = None if latency is None else latency / 1e3
            frame.pixels = frame.output = None      # the ring's views: let it close
        if self.metrics is not None:
            self.metrics.frame_ended(frame.pipeline.name, outcome, metric_latency)
        self._send(client, reply(rid, outcome=outcome, reason=reason, slot=slot, **extra))
        state.free.add(slot)
        if state.closing and not state.in_flight:
            self._retire(client, state)

    # ---- pipelines and clients ending
    def _end_pipeline(self, client: Client, name: str, reason: str) -> None:
        state = client.pipelines[name]
        if state.closing:
            return
        state.closing = reason
        self._step(self.engine.remove_pipeline, state.key, reason)     # waiting frames are answered dropped
        if not state.in_flight:             # else frames on the fabric end first (answered dropped)
            self._retire(client, state)

    def _retire(self, client: Client, state: PipelineState) -> None:
        state.ring.close()
        if client.pipelines.get(state.name) is state:
            del client.pipelines[state.name]
            client.shm_bytes -= state.ring.nbytes
            self.shm_bytes -= state.ring.nbytes
        self.states.pop(state.key, None)
        self.stats.retired(state.key, self.states)

    def _client_gone(self, client: Client, reason: str) -> None:
        if self.clients.pop(client.id, None) is None:
            return
        for name in list(client.pipelines):
            self._end_pipeline(client, name, reason)
        log.info("client %d gone (%s)", client.id, reason)


def _bad_output(item: Frame | DnnRequest, ring: FrameRing) -> str | None:
    """Why the output the board returned cannot be a result (None if it can)."""
    out = item.output
    if isinstance(item, DnnRequest):
        if isinstance(out, np.ndarray) and out.ndim == 1 and out.dtype.kind in "iu" and out.size \
                and int(out.min()) >= -128 and int(out.max()) <= 127:
            return None
        what = f"shape {getattr(out, 'shape', None)}, dtype {getattr(out, 'dtype', type(out).__name__)}"
        return f"the board returned a DNN output of {what}, not int8 values"
    if isinstance(out, np.ndarray) and out.shape == ring.spec.out_shape and out.dtype == np.dtype(ring.spec.dtype):
        return None
    what = f"shape {getattr(out, 'shape', None)}, dtype {getattr(out, 'dtype', type(out).__name__)}"
    return f"the board returned a frame of {what}; the pipeline's output is {ring.spec.out_shape} {ring.spec.dtype}"


async def _call(fn) -> None:
    fn()


def _warm_up() -> None:
    import numpy as np
    from fpgashare.simrun import resolve_chain
    from fpgashare.vision_ref import chain_reference

    chain_reference(resolve_chain(["gauss3x3", "threshold"], {}), np.zeros((8, 8), np.uint8))


def _peer_credentials(writer: asyncio.StreamWriter) -> tuple[int, int, int]:
    sock = writer.get_extra_info("socket")
    try:
        creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        return struct.unpack("3i", creds)
    except (AttributeError, OSError):
        return (-1, -1, -1)

"""``fpgashare daemon``: owns the FPGA and serves apps over a Unix socket.

One thread of control, an asyncio loop (runtime/eventloop.py: timers to the microsecond). It
reads requests (runtime/protocol.py), checks them, and hands them to the engine (runtime/sched/
online.py), which it then advances to the clock's now; a timer on the loop wakes it when the next
event is due. A frame that ends is answered at once: its output goes into the client's
shared-memory ring and the reply onto its socket. No thread hand-off lies on a frame's path, so
a submit costs one socket wake-up each way plus the scheduler's decision.

On the board the loop does not wait for the hardware: a partial load runs on the port's own
thread and a frame streams under DMA while the loop goes on; their reports are collected when
they are due. The simulated board's RTL blocks the loop while it runs (the clock is held
meanwhile), and requests that arrive then wait in their sockets. The admission trial of a new
pipeline runs on a worker thread on a snapshot, so frames keep flowing while it runs.

Time is a WallClock, dilated on the simulated board (its RTL is slower than the hardware it stands
for): clients read the daemon's clock with ``clock`` and pace their frames by it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import socket
import struct
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

from fpgashare.backends.base import Backend
from fpgashare.clock import WallClock
from fpgashare.errors import FpgashareError, FrameError
from fpgashare.eventloop import new_event_loop, tighten_timer_slack
from fpgashare.protocol import VERSION, ProtocolError, error_reply, read_message, reply
from fpgashare.sched import make_policy
from fpgashare.sched.engine import DnnRequest, Frame
from fpgashare.sched.online import OnlineEngine
from fpgashare.shm import FrameRing, check_layout
from fpgashare.workload import DNN_MODELS, PipelineSpec, realtime_spec

log = logging.getLogger(__name__)

DEFAULT_SOCKET = Path(os.environ.get("FPGASHARE_SOCKET", "/run/fpgashare/fpgashare.sock"))
RING_SLOTS = 4            #: frames a client may have in flight per pipeline
CLIENT_GONE = "client gone"
SHUTDOWN_GRACE_S = 5.0    #: wall seconds frames on the fabric get to finish when the daemon stops
LATENCY_WINDOW = 10_000   #: newest frame latencies kept per pipeline (percentiles), not every one of a day
ENDED_KEPT = 64           #: ended pipelines whose statistics are kept (the newest), for apps that come and go


@dataclass
class PipelineState:
    name: str
    ring: FrameRing
    free: set[int]
    in_flight: dict[int, tuple[int, object]] = field(default_factory=dict)   # frame seq -> (slot, writer)
    closing: bool = False


@dataclass
class Client:
    id: int
    pid: int
    uid: int
    gid: int
    writer: asyncio.StreamWriter
    pipelines: dict[str, PipelineState] = field(default_factory=dict)
    submits: dict[int, int] = field(default_factory=dict)    # frame seq -> request id


class Daemon:
    def __init__(self, backend: Backend, socket_path: str | Path = DEFAULT_SOCKET, dilation: float = 1.0,
                 scheduler: str = "edf", metrics_port: int | None = None) -> None:
        """``metrics_port``: serve Prometheus metrics on 127.0.0.1 at that port (0: any free one)."""
        self.backend, self.platform = backend, backend.platform
        self.socket_path = Path(socket_path)
        self.clock = WallClock(dilation)
        if backend.name != "pynq":          # a simulated board's slowness must not pass for board time
            backend.held_clock = self.clock
        self.engine = OnlineEngine(self.platform, backend, make_policy(scheduler), self.clock)
        # Items that end during an engine call are answered once it returns, never from inside it.
        self._ended: deque[Frame | DnnRequest] = deque()
        self.engine.on_finish = self._ended.append
        self._timer: asyncio.TimerHandle | None = None   # wakes the engine for its next event
        self._timer_due: float | None = None
        self.clients: dict[int, Client] = {}
        self._owner: dict[str, Client] = {}          # pipeline name -> client
        self._next_client = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.base_events.Server | None = None
        self._stopped = asyncio.Event()
        self._registering = asyncio.Lock()   # one registration at a time: each test sees the set it joins
        self.outcomes = {"on_time": 0, "late": 0, "dropped": 0, "error": 0, "done": 0}
        self.per_pipeline: dict[str, dict] = {}      #: outcomes and newest latencies (ms) of the pipelines seen
        self._ended_names: deque[str] = deque()      # ended pipelines with statistics kept, oldest first
        self.metrics_port = metrics_port
        self.metrics = None

    # ---- lifecycle
    async def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self.socket_path.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileNotFoundError):
            self.socket_path.unlink()
        self._server = await asyncio.start_unix_server(self._serve, path=str(self.socket_path))
        os.chmod(self.socket_path, 0o660)
        if self.metrics_port is not None:
            from fpgashare.metrics import DaemonMetrics

            self.metrics = DaemonMetrics(self.engine, self.clock)
            self.metrics_port = self.metrics.serve(self.metrics_port)
            log.info("metrics on http://127.0.0.1:%d/metrics", self.metrics_port)
        tighten_timer_slack()                 # a frame's end is a timer: wake within microseconds
        _warm_up()                            # first-call costs (OpenCV's init) must not land on a frame
        self._step(self.engine.begin)
        log.info("serving %s on %s (%s backend, dilation %g)", self.platform.name, self.socket_path,
                 self.backend.name, self.clock.dilation)

    async def serve_forever(self) -> None:
        await self.start()
        for sig in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                self._loop.add_signal_handler(sig, lambda: asyncio.ensure_future(self.stop()))
        await self._stopped.wait()

    async def stop(self) -> None:
        """Stop taking requests; every client's pipelines end (waiting frames are dropped with a
        reason), rings are removed, the socket file goes."""
        if self._stopped.is_set():
            return
        if self._server is not None:
            self._server.close()
        for client in list(self.clients.values()):
            self._client_gone(client, "daemon shutting down")
            client.writer.close()           # its reader sees the end and its task finishes
        # Frames already on the fabric finish (their rings are retired as they do); whatever is
        # still out after that is retired here, so no segment outlives the daemon.
        deadline = time.monotonic() + SHUTDOWN_GRACE_S
        while self._owner and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        for name, client in list(self._owner.items()):
            self._retire(client, client.pipelines[name])
        if self._timer is not None:
            self._timer.cancel()
        if self.metrics is not None:
            self.metrics.close()
        with contextlib.suppress(FileNotFoundError):
            self.socket_path.unlink()
        self._stopped.set()

    # ---- connections
    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        pid, uid, gid = _peer_credentials(writer)
        self._next_client += 1
        client = Client(self._next_client, pid, uid, gid, writer)
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
                await self._handle(client, message)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            self._client_gone(client, CLIENT_GONE)
            with contextlib.suppress(Exception):
                writer.close()

    def _send(self, client: Client, data: bytes) -> None:
        if not client.writer.is_closing():
            client.writer.write(data)

    async def _handle(self, client: Client, message: dict) -> None:
        rid = message["id"]
        op = message.get("op")
        handler = getattr(self, f"_op_{op}", None) if isinstance(op, str) else None
        if handler is None:
            self._send(client, error_reply(rid, ProtocolError("unknown_op", f"unknown op {op!r}")))
            return
        try:
            answer = await handler(client, message)
        except ProtocolError as exc:
            self._send(client, error_reply(rid, exc))
        except FpgashareError as exc:
            self._send(client, error_reply(rid, ProtocolError("bad_request", str(exc))))
        except Exception as exc:
            log.exception("op %s failed", op)
            self._send(client, error_reply(rid, ProtocolError("internal", f"{type(exc).__name__}: {exc}")))
        else:
            if answer is not None:
                self._send(client, reply(rid, **answer))

    # ---- the engine, on this loop
    def _step(self, fn, *args):
        """``fn(*args)`` on the engine, then every event now due (see ``_advance``)."""
        try:
            return fn(*args)
        finally:
            self._advance()

    def _advance(self) -> None:
        """Take every event due by the clock's now, answer what ended, then set the timer for
        the next event."""
        try:
            self.engine.advance_to(self.clock.now())
        except Exception:
            log.exception("engine step failed")
        while self._ended:
            self._frame_done(self._ended.popleft())
        due = self.engine.next_event_s()
        if due == self._timer_due:
            return
        if self._timer is not None:
            self._timer.cancel()
        self._timer, self._timer_due = None, due
        if due is not None:
            wall_s = max(0.0, (due - self.clock.now()) * self.clock.dilation)
            self._timer = self._loop.call_later(wall_s, self._timer_fired)

    def _timer_fired(self) -> None:
        self._timer, self._timer_due = None, None
        self._advance()

    # ---- ops
    async def _op_hello(self, client: Client, message: dict) -> dict:
        return {"server": "fpgashare", "version": VERSION, "platform": self.platform.name,
                "backend": self.backend.name, "dilation": self.clock.dilation, "now": self.clock.now(),
                "client": client.id}

    async def _op_clock(self, client: Client, message: dict) -> dict:
        return {"now": self.clock.now(), "dilation": self.clock.dilation}

    async def _op_pipeline(self, client: Client, message: dict) -> dict:
        name = _field(message, "name", str)
        stages = _field(message, "stages", list)
        period_s = float(_field(message, "period_ms", (int, float))) / 1e3
        deadline_s = float(message.get("deadline_ms", period_s * 1e3)) / 1e3
        shape = _field(message, "frame_shape", list)
        params = message.get("params") or {}
        if period_s <= 0 or deadline_s <= 0:
            raise ProtocolError("bad_request", "period_ms and deadline_ms must be > 0")
        try:
            spec = realtime_spec(name, [str(s) for s in stages], period_s, deadline_s, list(shape)[:2],
                                 self.platform, params)
        except FpgashareError as exc:
            raise ProtocolError("bad_request", f"pipeline {name!r}{exc}") from None
        self._check_name_free(name)
        async with self._registering:
            # The admission trial runs on a worker thread, on a snapshot: frames keep flowing.
            test = self.engine.admission_test(spec)
            reason = await asyncio.get_running_loop().run_in_executor(None, test)
            if reason:
                raise ProtocolError("admission", f"pipeline {name!r} not admitted: {reason}")
            in_shape = spec.stages[0].kind.input_shape(*spec.frame)
            out_shape = spec.frame
            for stage in spec.stages:
                out_shape = stage.kind.output_shape(*out_shape)
            ring = FrameRing.create(RING_SLOTS, in_shape, tuple(out_shape), tag=f"c{client.id}")
            try:
                self._step(self.engine.add_pipeline, spec, True)
            except FpgashareError as exc:
                ring.close()
                raise ProtocolError("admission", f"pipeline {name!r} not admitted: {exc}") from None
        self._register(client, name, ring)
        log.info("client %d: pipeline %s admitted (%s)", client.id, name, "/".join(spec.modules))
        return {"ring": ring.spec.to_wire(), "deadline_ms": spec.deadline_s * 1e3, "exec_ms": spec.exec_s * 1e3}

    async def _op_submit(self, client: Client, message: dict) -> None:
        return await self._hand_in(client, message, self.engine.submit)

    async def _hand_in(self, client: Client, message: dict, submit) -> None:
        """Give the engine the frame (or DNN image) in a ring slot; answered when it ends."""
        name = _field(message, "pipeline", str)
        slot = _field(message, "slot", int)
        state = client.pipelines.get(name)
        if state is None or state.closing:
            raise ProtocolError("bad_request", f"no pipeline {name!r} of this client")
        if slot not in state.free:
            raise ProtocolError("frame", f"ring slot {slot} of {name!r} is not free (in flight or outside "
                                f"0..{state.ring.spec.slots - 1})")
        # The client says what it wrote; a frame of another layout would be read as garbage.
        shape, dtype = _field(message, "shape", list), _field(message, "dtype", str)
        try:
            check_layout(tuple(shape), dtype, state.ring.spec.in_shape, state.ring.spec.dtype)
        except FrameError as exc:
            raise ProtocolError("frame", f"{name!r}: {exc}") from None
        item = submit(name, state.ring.input(slot))     # queued, not yet decided: it cannot have ended
        state.free.discard(slot)
        state.in_flight[item.seq] = (slot, client)
        client.submits[item.seq] = message["id"]
        self._advance()
        return None

    async def _op_dnn(self, client: Client, message: dict) -> dict:
        """A best-effort DNN pipeline: images go into its ring, outputs come back in the reply."""
        from fpgashare.dnn.planning import network

        name = _field(message, "name", str)
        model = _field(message, "model", str)
        if model not in DNN_MODELS:
            raise ProtocolError("bad_request", f"dnn {name!r}: unknown model {model!r} ({', '.join(DNN_MODELS)})")
        self._check_name_free(name)
        shape = network(model).input_shape
        in_shape = shape[:2] if shape[2] == 1 else shape
        ring = FrameRing.create(RING_SLOTS, in_shape, (1,), tag=f"c{client.id}")
        try:
            async with self._registering:
                self._step(self.engine.add_pipeline, PipelineSpec(name, "besteffort", model=model))
        except FpgashareError as exc:
            ring.close()
            raise ProtocolError("admission", f"dnn {name!r} not admitted: {exc}") from None
        self._register(client, name, ring)
        return {"ring": ring.spec.to_wire(), "model": model}

    def _check_name_free(self, name: str) -> None:
        # Names are the daemon's, across clients (a closing pipeline keeps its name until retired).
        if name in self._owner:
            raise ProtocolError("bad_request", f"a pipeline named {name!r} is already registered")

    def _register(self, client: Client, name: str, ring: FrameRing) -> None:
        client.pipelines[name] = PipelineState(name, ring, set(range(RING_SLOTS)))
        self._owner[name] = client

    async def _op_infer(self, client: Client, message: dict) -> None:
        return await self._hand_in(client, message, self.engine.submit_dnn)

    async def _op_close(self, client: Client, message: dict) -> dict:
        name = _field(message, "pipeline", str)
        if name not in client.pipelines:
            raise ProtocolError("bad_request", f"no pipeline {name!r} of this client")
        self._end_pipeline(client, name, "pipeline closed")
        return {"closed": name}

    async def _op_status(self, client: Client, message: dict) -> dict:
        return self._status()

    # ---- frames ending
    def _frame_done(self, frame: Frame | DnnRequest) -> None:
        client = self._owner.get(frame.pipeline.name)
        state = client.pipelines.get(frame.pipeline.name) if client else None
        if state is None or frame.seq not in state.in_flight:
            return                          # already answered
        self.outcomes[frame.outcome] = self.outcomes.get(frame.outcome, 0) + 1
        latency = None if frame.end is None else (frame.end - frame.release) * 1e3
        stats = self.per_pipeline.setdefault(frame.pipeline.name, {"class": frame.pipeline.klass, "outcomes": {},
                                                                   "latencies_ms": deque(maxlen=LATENCY_WINDOW)})
        stats["outcomes"][frame.outcome] = stats["outcomes"].get(frame.outcome, 0) + 1
        if latency is not None:
            stats["latencies_ms"].append(latency)
        slot, _ = state.in_flight.pop(frame.seq)
        rid = client.submits.pop(frame.seq, -1)
        if isinstance(frame, DnnRequest):   # outputs are a few int8 values: they ride in the reply
            extra = {"output": None if frame.output is None else [int(v) for v in frame.output]}
            metric_latency = None
        else:                               # a frame's output goes next to its input in the ring
            if frame.output is not None and frame.outcome in ("on_time", "late") and not state.closing:
                state.ring.output(slot)[...] = frame.output
            extra = {"latency_ms": latency}
            metric_latency = None if latency is None else latency / 1e3
        if self.metrics is not None:
            self.metrics.frame_ended(frame.pipeline.name, frame.outcome, metric_latency)
        self._send(client, reply(rid, outcome=frame.outcome, reason=frame.reason, slot=slot, **extra))
        state.free.add(slot)
        if state.closing and not state.in_flight:
            self._retire(client, state)

    # ---- pipelines and clients ending
    def _end_pipeline(self, client: Client, name: str, reason: str) -> None:
        state = client.pipelines[name]
        state.closing = True
        self._step(self.engine.remove_pipeline, name, reason)     # waiting frames are answered dropped
        if not state.in_flight:             # else frames on the fabric still write into the ring
            self._retire(client, state)

    def _retire(self, client: Client, state: PipelineState) -> None:
        state.ring.close()
        client.pipelines.pop(state.name, None)
        self._owner.pop(state.name, None)
        # Statistics outlive their pipeline (a summary at the end, a status meanwhile), but only
        # the newest few: apps that register a fresh name each run would otherwise grow the daemon.
        if state.name in self.per_pipeline:
            with contextlib.suppress(ValueError):
                self._ended_names.remove(state.name)
            self._ended_names.append(state.name)
        while len(self._ended_names) > ENDED_KEPT:
            name = self._ended_names.popleft()
            if name not in self._owner:             # not registered again meanwhile
                self.per_pipeline.pop(name, None)

    def _client_gone(self, client: Client, reason: str) -> None:
        if self.clients.pop(client.id, None) is None:
            return
        for name in list(client.pipelines):
            self._end_pipeline(client, name, reason)
        log.info("client %d gone (%s)", client.id, reason)

    def _status(self) -> dict:
        engine = self.engine
        now = max(self.clock.now(), 1e-9)
        slots = [{"slot": s.index, "state": s.state.value, "module": s.module,
                  "utilization": round(engine.busy_by_slot[s.index] / now, 4)} for s in engine.slots.slots]
        port = engine.slots.port
        per = {}
        for p in engine.pipelines:
            frames = [f for f in engine.frames if f.pipeline.name == p.name]
            per[p.name] = {"class": p.klass, "modules": list(p.modules), "in_flight": len(frames)}
        for p in engine.dnn_pipelines:
            per[p.name] = {"class": p.klass, "modules": ["dnn_tile"], "model": p.model,
                           "in_flight": len(engine.dnn_queue.get(p.name, [])), "images": engine.dnn_images[p.name]}
        for name, entry in per.items():
            counts = dict(self.per_pipeline.get(name, {}).get("outcomes", {}))
            total = sum(counts.values())
            entry["outcomes"] = counts
            entry["miss_rate"] = round((counts.get("late", 0) + counts.get("dropped", 0)) / total, 4) if total else 0.0
        return {"now": self.clock.now(), "dilation": self.clock.dilation, "slots": slots,
                "port": {"loads": port.loads, "busy_s": port.busy_s, "queued": len(port.queue)},
                "pipelines": per, "outcomes": dict(self.outcomes),
                "clients": [{"id": c.id, "pid": c.pid, "uid": c.uid, "pipelines": list(c.pipelines)}
                            for c in self.clients.values()]}


class DaemonThread:
    """A daemon on a thread of its own with its own event loop (the demo, benchmarks, tests):
    ``with DaemonThread(daemon):`` serves until the block ends."""

    def __init__(self, daemon: Daemon) -> None:
        self.daemon = daemon
        self.loop = new_event_loop()
        self.thread = threading.Thread(target=self._run, name="fpgashare-daemon", daemon=True)
        self.ready = threading.Event()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_until_complete(self.daemon.start())
        self.ready.set()
        self.loop.run_until_complete(self.daemon._stopped.wait())

    def __enter__(self) -> Daemon:
        self.thread.start()
        if not self.ready.wait(60):
            raise FpgashareError("the daemon did not start within 60 s")
        return self.daemon

    def __exit__(self, *exc) -> None:
        asyncio.run_coroutine_threadsafe(self.daemon.stop(), self.loop).result(30)
        self.thread.join(30)


def calibrate_dilation(backend: Backend, margin: float = 2.0) -> float:
    """How much slower than the hardware a backend runs: the wall time of one partial load and one
    small frame over their hardware time, times ``margin``; 1 for a real board. Loads a module
    into slot 0 (the daemon starts with every slot blank, so nothing is lost)."""
    import numpy as np
    from fpgashare.simrun import resolve_chain

    if backend.name == "pynq":
        return 1.0
    stages = resolve_chain(["threshold"], {})
    start = time.perf_counter()
    load = backend.load(0, "threshold")
    load_ratio = (time.perf_counter() - start) / load.seconds
    start = time.perf_counter()
    frame = backend.run_frame([0], stages, np.zeros((120, 160), np.uint8))
    frame_ratio = (time.perf_counter() - start) / frame.seconds
    return max(1.0, margin * max(load_ratio, frame_ratio))


def _warm_up() -> None:
    import numpy as np
    from fpgashare.simrun import resolve_chain
    from fpgashare.vision_ref import chain_reference

    chain_reference(resolve_chain(["gauss3x3", "threshold"], {}), np.zeros((8, 8), np.uint8))


def _field(message: dict, key: str, typ):
    value = message.get(key)
    if not isinstance(value, typ) or isinstance(value, bool):
        want = typ.__name__ if isinstance(typ, type) else " or ".join(t.__name__ for t in typ)
        raise ProtocolError("bad_request", f"{message.get('op')}: {key} must be {want}, got {value!r}")
    return value


def _peer_credentials(writer: asyncio.StreamWriter) -> tuple[int, int, int]:
    sock = writer.get_extra_info("socket")
    try:
        creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        return struct.unpack("3i", creds)
    except (AttributeError, OSError):
        return (-1, -1, -1)

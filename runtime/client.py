"""The client API: how an app asks the daemon for pipelines and streams frames through them.

    from fpgashare import connect
    with connect() as fpga:
        edges = fpga.pipeline("edges", stages=["gauss3x3", "sobel_mag"],
                              period_ms=33.3, deadline_ms=33.3, frame_shape=(480, 640))
        fut = edges.submit(frame)                  # non-blocking
        out = fut.result(timeout=1.0)              # ndarray; raises DeadlineMissed / FrameDropped

Frames go into the pipeline's shared-memory ring (runtime/shm.py); only the ring slot's index
crosses the socket. Every submitted frame ends in exactly one outcome: its output (on time),
``DeadlineMissed`` (late; the output is on the exception), ``FrameDropped`` (with the daemon's
reason) or ``FrameFailed``.

The ring is the app's alone: its descriptor arrives with the registration's reply (SCM_RIGHTS)
and nothing else can open it. When the daemon goes, every call raises ``DaemonError`` (kind
``gone``), never a raw OSError; ``connect(reconnect=True)`` instead connects again on the next
call and registers the app's pipelines anew (frames in flight at the loss end ``gone``).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import itertools
import logging
import os
import select
import socket
import threading
import time
from collections import deque
from pathlib import Path

import numpy as np
from fpgashare.errors import FpgashareError
from fpgashare.protocol import HEADER, MAX_MESSAGE, ProtocolError, decode, encode
from fpgashare.shm import FrameRing, RingSpec, check_frame

log = logging.getLogger(__name__)

RECV_BYTES = 1 << 16    #: one recv takes every reply already there
MAX_FDS = 16            #: ring descriptors one recv may bring


class DaemonError(FpgashareError):
    """The daemon refused a request; ``kind`` is the protocol's error kind."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


class QuotaExceeded(DaemonError):  # noqa: N818 (the API's names: what happened, not 'Error')
    """A limit of the daemon refused the request; the message names the limit and its value."""


class AdmissionRejected(DaemonError):  # noqa: N818 (the API's names: what happened, not 'Error')
    """Admission control turned the pipeline away; the message says what does not fit."""


class FrameDropped(FpgashareError):  # noqa: N818 (the API's names: what happened, not 'Error')
    """The frame was dropped; ``reason`` says why (deadline out of reach, client gone, ...)."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"frame dropped: {reason}")
        self.reason = reason


class DeadlineMissed(FpgashareError):  # noqa: N818 (the API's names: what happened, not 'Error')
    """The frame finished after its deadline; ``output`` still holds the result."""

    def __init__(self, latency_ms: float, output: np.ndarray) -> None:
        super().__init__(f"frame finished {latency_ms:.2f} ms after its release, past its deadline")
        self.latency_ms, self.output = latency_ms, output


class FrameFailed(FpgashareError):  # noqa: N818 (the API's names: what happened, not 'Error')
    """The hardware path failed for this frame."""


def connect(path: str | Path | None = None, timeout: float = 5.0, reconnect: bool = False) -> Fpga:
    """A connection to the daemon at ``path`` (default: $FPGASHARE_SOCKET or
    /run/fpgashare/fpgashare.sock). ``reconnect``: when the daemon goes, connect again at the next
    call (waiting up to ``timeout`` for a new daemon) and register this app's pipelines anew."""
    from fpgashare.daemon.server import DEFAULT_SOCKET

    return Fpga(Path(path) if path is not None else DEFAULT_SOCKET, timeout, reconnect)


class Fpga:
    """One connection; thread-safe. Replies are matched to requests by id. There is no reader
    thread: a thread waiting for a reply reads the socket itself while no other thread does, and
    hands the replies it meets to their waiters (a reply costs no extra thread wake-up)."""

    def __init__(self, path: Path, timeout: float, reconnect: bool = False) -> None:
        self.path, self.timeout, self.reconnect = path, timeout, reconnect
        self._ids = itertools.count(1)
        self._waiting: dict[int, concurrent.futures.Future] = {}
        self._lock = threading.Lock()
        self._turn = threading.Condition(self._lock)   # waiters sleep here while another thread reads
        self._reading = threading.Lock()               # held by the thread reading the socket
        self._reconnecting = threading.Lock()
        self.pipelines: dict[str, Pipeline] = {}
        self._closed = False          # by the app: for good
        self.reconnects = 0
        self._open()

    def _open(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(str(self.path))
        except OSError as exc:
            sock.close()
            raise DaemonError("gone", f"cannot reach the fpgashare daemon at {self.path}: "
                              f"{exc.strerror or exc}") from None
        with self._lock:
            self._sock = sock
            self._buffer = bytearray()
            self._fds: deque[int] = deque()            # ring descriptors received, in order
            self._last_error: dict | None = None       # an error the daemon sent unasked (before closing)
            self._lost = False
        try:
            hello = self.request("hello")
        except BaseException:
            sock.close()
            raise
        self.platform, self.dilation, self.client_id = hello["platform"], hello["dilation"], hello["client"]

    def _revive(self) -> None:
        """The daemon went: connect again (a new daemon may take a moment to come) and register
        every pipeline anew, each with its new ring."""
        with self._reconnecting:
            if not self._lost or self._closed:
                return
            with self._reading:
                self._sock.close()
            deadline = time.monotonic() + self.timeout
            while True:
                try:
                    self._open()
                    break
                except DaemonError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.05)          # waiting for a new daemon to listen, not simulating
            self.reconnects += 1
            for pipe in list(self.pipelines.values()):
                answer = self.request(pipe.op_register, **pipe.registration)
                pipe._renew(self._attach(answer), answer)
            log.info("reconnected to %s; %d pipeline(s) registered again", self.path, len(self.pipelines))

    # ---- plumbing
    def _ensure(self) -> None:
        """Connect again first if the daemon went and this connection reconnects."""
        if self._lost and self.reconnect and not self._closed:
            self._revive()

    def _send(self, op: str, **fields) -> tuple[int, concurrent.futures.Future]:
        self._ensure()
        future: concurrent.futures.Future = concurrent.futures.Future()
        with self._lock:
            if self._closed or self._lost:
                raise DaemonError("gone", "the connection to the daemon is closed" if self._closed
                                  else "the daemon went away")
            rid = next(self._ids)
            data = encode({"op": op, "id": rid, **fields})
            self._waiting[rid] = future
            try:
                self._sock.sendall(data)
            except OSError as exc:
                self._waiting.pop(rid, None)
                self._lost = True
                raise DaemonError("gone", f"the daemon went away: {exc.strerror or exc}") from None
        return rid, future

    def request(self, op: str, **fields) -> dict:
        """Send one request and wait for its reply; an error reply raises DaemonError."""
        _, future = self._send(op, **fields)
        return _unwrap(self.wait(future, self.timeout))

    def wait(self, future: concurrent.futures.Future, timeout: float | None) -> dict:
        """The reply ``future`` stands for, read from the socket by this thread unless another
        thread is reading it; raises TimeoutError after ``timeout`` seconds (None: no limit)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while not future.done():
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                raise concurrent.futures.TimeoutError(f"no reply from the daemon within {timeout} s")
            if self._reading.acquire(blocking=False):
                try:
                    self._read_until(future, deadline)
                finally:
                    self._reading.release()
                    with self._turn:
                        self._turn.notify_all()            # another waiter may take the socket now
            else:
                with self._turn:
                    if not future.done() and self._reading.locked():
                        self._turn.wait(remaining)
        return future.result()

    def _read_until(self, future: concurrent.futures.Future, deadline: float | None) -> None:
        """Read replies and settle their futures until ``future`` is settled or the deadline passes."""
        try:
            while not future.done():
                message = self._next_message(deadline)
                if message is None:
                    return                                 # the deadline passed
                with self._turn:
                    waiter = self._waiting.pop(message.get("id"), None)
                    if waiter is not None:
                        waiter.set_result(message)
                        self._turn.notify_all()
                if waiter is None and not message.get("ok", True):
                    log.warning("daemon: %s", message["error"]["message"])
                    self._last_error = message["error"]       # e.g. why it is closing this connection
        except (OSError, ProtocolError) as exc:
            log.debug("connection ended: %s", exc)
            self._fail_all(lost=True)

    def _next_message(self, deadline: float | None) -> dict | None:
        """The next whole message from the socket, or None if the deadline passes first."""
        while True:
            if len(self._buffer) >= HEADER.size:
                (length,) = HEADER.unpack_from(self._buffer)
                if length > MAX_MESSAGE:
                    raise ProtocolError("oversized", f"reply of {length} bytes")
                end = HEADER.size + length
                if len(self._buffer) >= end:
                    body = bytes(self._buffer[HEADER.size:end])
                    del self._buffer[:end]
                    message = decode(body)
                    if message.get("ring_fd"):    # its descriptor came with its first byte
                        message["fd"] = self._fds.popleft() if self._fds else None
                    return message
            if deadline is not None:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not select.select([self._sock], [], [], remaining)[0]:
                    return None
            chunk, fds, _, _ = socket.recv_fds(self._sock, RECV_BYTES, MAX_FDS)
            self._fds.extend(fds)
            if not chunk:
                raise ProtocolError("malformed", "the daemon closed the connection"
                                    + (" inside a message" if self._buffer else ""))
            self._buffer += chunk

    def _fail_all(self, lost: bool = False) -> None:
        """The connection is gone: every waiting request ends with a 'gone' error reply."""
        with self._turn:
            if lost:
                self._lost = True
            else:
                self._closed = True
            waiting, self._waiting = self._waiting, {}
            for future in waiting.values():
                error = self._last_error or {"kind": "gone", "message": "the daemon went away"}
                future.set_result({"ok": False, "error": error})
            self._turn.notify_all()

    # ---- API
    def clock(self) -> float:
        """The daemon's time in seconds (dilated on the simulated board): pace frames by it."""
        return float(self.request("clock")["now"])

    def sleep_until(self, t: float) -> None:
        """Wait until the daemon's clock reads ``t`` (wall time scaled by the daemon's dilation;
        on the simulated board the clock also stands still while the RTL catches up), so an app
        paces its frames the same on a board and on the simulated board."""
        while (delay := (t - self.clock()) * self.dilation) > 0:
            time.sleep(delay)       # real waiting: pacing an app, not a simulated duration

    def status(self) -> dict:
        return self.request("status")

    def pipeline(self, name: str, stages: list[str], period_ms: float, frame_shape: tuple[int, int],
                 deadline_ms: float | None = None, params: dict | None = None) -> Pipeline:
        """Register a real-time pipeline; raises AdmissionRejected with the reason if it does not fit."""
        fields = {"name": name, "stages": list(stages), "period_ms": float(period_ms),
                  "frame_shape": [int(v) for v in frame_shape], "params": params or {}}
        if deadline_ms is not None:
            fields["deadline_ms"] = float(deadline_ms)
        answer = self.request("pipeline", **fields)
        pipe = Pipeline(self, name, self._attach(answer), answer, fields)
        self.pipelines[name] = pipe
        return pipe

    def _attach(self, answer: dict) -> FrameRing:
        """The ring a registration's reply hands over (its descriptor, or a named ring)."""
        spec = RingSpec.from_wire(answer["ring"])
        if answer.get("ring_fd"):
            if answer.get("fd") is None:
                raise DaemonError("gone", f"the daemon's reply for ring {spec.name} carried no descriptor")
            return FrameRing.attach_fd(spec, answer["fd"])
        return FrameRing.attach(spec)

    def dnn(self, name: str, model: str) -> DnnPipeline:
        """Register a best-effort DNN pipeline (``digits_cnn``, ``edge_cnn``): its images run in
        the slot time real-time pipelines leave."""
        answer = self.request("dnn", name=name, model=model)
        pipe = DnnPipeline(self, name, self._attach(answer), answer, {"name": name, "model": model})
        self.pipelines[name] = pipe
        return pipe

    def close(self) -> None:
        for pipe in list(self.pipelines.values()):
            pipe.ring.close()
        self.pipelines.clear()
        try:
            self._sock.shutdown(socket.SHUT_RDWR)     # a thread reading it sees the end
        except OSError:
            pass
        with self._reading:                            # wait until no thread reads it
            self._fail_all()
            self._sock.close()
            while self._fds:                           # descriptors of replies nobody took
                os.close(self._fds.popleft())

    def __enter__(self) -> Fpga:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class Pipeline:
    """A registered pipeline: frames in, results out, through its shared-memory ring."""

    op, op_register = "submit", "pipeline"

    def __init__(self, fpga: Fpga, name: str, ring: FrameRing, info: dict, registration: dict) -> None:
        self.fpga, self.name = fpga, name
        self.registration = registration        #: the request that registered it (again, after a reconnect)
        self._lock = threading.Lock()
        self._renew(ring, info)

    def _renew(self, ring: FrameRing, info: dict) -> None:
        """A (new) ring: every slot free; futures of an older ring give theirs back to nothing."""
        old = getattr(self, "ring", None)
        with self._lock:
            self.ring = ring
            self.deadline_ms, self.exec_ms = info.get("deadline_ms"), info.get("exec_ms")
            self._free = threading.Semaphore(ring.spec.slots)
            self._slots = list(range(ring.spec.slots))
            self.generation = getattr(self, "generation", -1) + 1
        if old is not None:
            old.close()

    def submit(self, frame: np.ndarray, timeout: float | None = None) -> FrameFuture:
        """Hand a frame to the daemon; returns at once unless every ring slot is in flight (then
        waits up to ``timeout`` for one)."""
        check_frame(frame, self.ring.spec.in_shape, self.ring.spec.dtype)
        self.fpga._ensure()                      # a new ring first, if the daemon was replaced
        if not self._free.acquire(timeout=self.fpga.timeout if timeout is None else timeout):
            raise FrameDropped(f"all {self.ring.spec.slots} ring slots of {self.name!r} are still in flight")
        with self._lock:
            slot, generation, ring = self._slots.pop(), self.generation, self.ring
        ring.input(slot)[...] = frame
        try:
            _, future = self.fpga._send(self.op, pipeline=self.name, slot=slot, shape=list(frame.shape),
                                        dtype=str(frame.dtype))
        except Exception:
            self._release(slot, generation)
            raise
        return self.future(slot, future, generation, ring)

    def future(self, slot: int, future: concurrent.futures.Future, generation: int, ring: FrameRing) -> FrameFuture:
        return FrameFuture(self, slot, future, generation, ring)

    async def asubmit(self, frame: np.ndarray) -> np.ndarray:
        """``submit`` for asyncio code: the output, or the same exceptions."""
        fut = self.submit(frame)
        return await asyncio.get_running_loop().run_in_executor(None, fut.result)

    def _release(self, slot: int, generation: int) -> None:
        with self._lock:
            if generation != self.generation:
                return                  # a slot of a ring replaced since (reconnect)
            self._slots.append(slot)
            self._free.release()

    def close(self) -> None:
        """End the pipeline (its frames in flight end ``dropped``); a daemon already gone ended it."""
        try:
            self.fpga.request("close", pipeline=self.name)
        except DaemonError as exc:
            if exc.kind != "gone":
                raise
        self.ring.close()
        self.fpga.pipelines.pop(self.name, None)


class DnnPipeline(Pipeline):
    """A best-effort DNN pipeline: ``submit(image).result()`` is the network's int8 output."""

    op, op_register = "infer", "dnn"

    def future(self, slot: int, future: concurrent.futures.Future, generation: int, ring: FrameRing) -> FrameFuture:
        return DnnFuture(self, slot, future, generation, ring)


class FrameFuture:
    """The outcome of one submitted frame."""

    def __init__(self, pipe: Pipeline, slot: int, future: concurrent.futures.Future, generation: int,
                 ring: FrameRing) -> None:
        self.pipe, self.slot, self._future = pipe, slot, future
        self._generation, self._ring = generation, ring
        self._outcome: np.ndarray | Exception | None = None

    def result(self, timeout: float | None = None) -> np.ndarray:
        if self._outcome is None:
            message = self.pipe.fpga.wait(self._future, timeout)
            try:
                self._outcome = self._settle(message)
            finally:
                self.pipe._release(self.slot, self._generation)
        if isinstance(self._outcome, Exception):
            raise self._outcome
        return self._outcome

    def _settle(self, message: dict) -> np.ndarray | Exception:
        if not message.get("ok"):
            error = message["error"]
            cls = QuotaExceeded if error["kind"] == "quota" else DaemonError
            return cls(error["kind"], error["message"])
        outcome = message["outcome"]
        if outcome == "dropped":
            return FrameDropped(message.get("reason") or "no reason given")
        if outcome == "error":
            return FrameFailed(message.get("reason") or "the hardware path failed")
        output = self._ring.output(self.slot).copy()     # the slot is reused after this
        if outcome == "late":
            return DeadlineMissed(message["latency_ms"], output)
        return output


class DnnFuture(FrameFuture):
    def _settle(self, message: dict) -> np.ndarray | Exception:
        if not message.get("ok"):
            return super()._settle(message)
        if message["outcome"] == "error":
            return FrameFailed(message.get("reason") or "the hardware path failed")
        if message["outcome"] != "done":
            return FrameDropped(message.get("reason") or "no reason given")
        return np.array(message["output"], dtype=np.int8)


def _unwrap(message: dict) -> dict:
    if message.get("ok"):
        return message
    error = message["error"]
    cls = {"admission": AdmissionRejected, "quota": QuotaExceeded}.get(error["kind"], DaemonError)
    raise cls(error["kind"], error["message"])

"""A registered pipeline and its frames' futures: frames go into the pipeline's ring (shared
memory), only the slot's index crosses the socket, and each frame's reply settles its future into
one outcome (the output, or ``DeadlineMissed`` / ``FrameDropped`` / ``FrameFailed`` / ``DaemonError``)."""

from __future__ import annotations

import asyncio
import threading
from typing import TYPE_CHECKING, Protocol

import numpy as np
from fpgashare.client.errors import DaemonError, DeadlineMissed, FrameDropped, FrameFailed, daemon_error
from fpgashare.wire.shm import FrameRing, check_frame

if TYPE_CHECKING:
    from fpgashare.client.connection import Reply


class Owner(Protocol):
    """What a pipeline needs of the connection that registered it (client/fpga.py's ``Fpga``)."""

    timeout: float
    reconnect: bool
    pipelines: dict

    def _ensure(self) -> None: ...
    def _send(self, op: str, **fields) -> tuple[int, Reply]: ...
    def request(self, op: str, **fields) -> dict: ...
    def wait(self, future: Reply, timeout: float | None) -> dict: ...


class FrameFuture:
    """The outcome of one submitted frame."""

    def __init__(self, pipe: Pipeline, slot: int, future: Reply, generation: int,
                 ring: FrameRing) -> None:
        self.pipe, self.slot, self._future = pipe, slot, future
        self._generation, self._ring = generation, ring
        self._outcome: np.ndarray | Exception | None = None
        self._settling = threading.Lock()
        self._taken = False              # its reply taken (and its slot given back): once only
        #: The result registers the chain's modules left after this frame (moments' M00, M10_LO ...,
        #: template_match's BEST, BEST_X, BEST_Y), by stage name; filled by ``result()``.
        self.results: dict[str, dict[str, int]] = {}

    def result(self, timeout: float | None = None) -> np.ndarray:
        if self._outcome is None:
            self._take(self.pipe.fpga.wait(self._future, timeout))
        if isinstance(self._outcome, Exception):
            raise self._outcome
        return self._outcome

    def _take(self, message: dict) -> None:
        # Once, whichever thread comes first: the one waiting in result() or the one closing the
        # pipeline (a slot released twice would be handed to two frames).
        with self._settling:
            if self._taken:
                return
            self._taken = True
            try:
                self._outcome = self._settle(message)
            except Exception as exc:     # (a reply it cannot read): its outcome, raised by result()
                self._outcome = exc
            finally:
                self.pipe._release(self.slot, self._generation, self)

    def _settle_if_answered(self) -> None:
        """Settle now if the reply is in (its pipeline is closing: its ring goes next)."""
        if not self._taken and self._future.done():
            self._take(self._future.result())

    def _settle(self, message: dict) -> np.ndarray | Exception:
        if not message.get("ok"):
            return daemon_error(message["error"])
        outcome = message["outcome"]
        if outcome == "dropped":
            return FrameDropped(message.get("reason") or "no reason given")
        if outcome == "error":
            return FrameFailed(message.get("reason") or "the hardware path failed")
        output = self._ring.output(self.slot).copy()     # the slot is reused after this
        self.results = {stage: {reg: int(v) for reg, v in regs.items()}
                        for stage, regs in (message.get("results") or {}).items()}
        if outcome == "late":
            return DeadlineMissed(message["latency_ms"], output, message.get("reason") or "")
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


class Pipeline:
    """A registered pipeline: frames in, results out, through its shared-memory ring."""

    op, op_register = "submit", "pipeline"
    future_class: type[FrameFuture] = FrameFuture    #: what a submit returns

    def __init__(self, fpga: Owner, name: str, ring: FrameRing, info: dict, registration: dict) -> None:
        self.fpga, self.name = fpga, name
        self.registration = registration        #: the request that registered it (again, after a reconnect)
        self._lock = threading.Lock()        # the slots, the ring, ``closed`` and ``_futures``
        #: Submitted, not yet settled (at most a ring's slots: a submit waits for a free one).
        self._futures: set[FrameFuture] = set()
        self.closed = False
        self._renew(ring, info)

    def _renew(self, ring: FrameRing, info: dict) -> None:
        """A (new) ring: every slot free; futures of an older ring give theirs back to nothing."""
        old = getattr(self, "ring", None)
        with self._lock:
            self.ring = ring
            self.deadline_ms, self.exec_ms = info.get("deadline_ms"), info.get("exec_ms")
            #: (stage, "fpga" or "cpu") for each stage, in order (a DNN pipeline: its model's place)
            self.placement = [tuple(p) for p in info.get("placement", ())]
            self._free = threading.Semaphore(ring.spec.slots)
            self._slots = list(range(ring.spec.slots))
            self.generation = getattr(self, "generation", -1) + 1
        if old is not None:
            with self._lock:
                futures, self._futures = list(self._futures), set()
            for future in futures:               # answered before the daemon went: outputs out first
                future._settle_if_answered()
            old.close()

    def submit(self, frame: np.ndarray, timeout: float | None = None, _again: bool = True) -> FrameFuture:
        """Hand a frame to the daemon; returns at once unless every ring slot is in flight (then
        waits up to ``timeout`` for one)."""
        if self.closed:                          # (checked again under the lock, before the ring is written)
            raise self._closed_error()
        spec = self.ring.spec
        if not (type(frame) is np.ndarray and frame.shape == spec.in_shape and frame.dtype == spec.np_dtype):
            check_frame(frame, spec.in_shape, spec.dtype)     # says what is wrong
        self.fpga._ensure()                      # a new ring first, if the daemon was replaced
        if not self._free.acquire(timeout=self.fpga.timeout if timeout is None else timeout):
            raise FrameDropped(f"all {self.ring.spec.slots} ring slots of {self.name!r} are still in flight")
        with self._lock:                         # a close unmaps the ring under it: never mid-write
            if self.closed:
                self._free.release()
                raise self._closed_error()
            slot, generation, ring = self._slots.pop(), self.generation, self.ring
            ring.input(slot)[...] = frame
        try:
            _, future = self.fpga._send(self.op, pipeline=self.name, slot=slot, shape=list(ring.spec.in_shape),
                                        dtype=ring.spec.dtype)
        except Exception as exc:
            self._release(slot, generation)
            if _again and isinstance(exc, DaemonError) and exc.kind == "gone" and self.fpga.reconnect:
                # The daemon went before this connection noticed: once more, into the new daemon's ring.
                return self.submit(frame, timeout, _again=False)
            raise
        return self.future(slot, future, generation, ring)

    def future(self, slot: int, future: Reply, generation: int, ring: FrameRing) -> FrameFuture:
        made = self.future_class(self, slot, future, generation, ring)
        with self._lock:
            self._futures.add(made)
        return made

    def _closed_error(self) -> DaemonError:
        # Its ring is unmapped: say so, not an IndexError.
        return DaemonError("bad_request", f"{self.op}: pipeline {self.name!r} is closed")

    async def asubmit(self, frame: np.ndarray) -> np.ndarray:
        """``submit`` for asyncio code: the output, or the same exceptions."""
        fut = self.submit(frame)
        return await asyncio.get_running_loop().run_in_executor(None, fut.result)

    def _release(self, slot: int, generation: int, future: FrameFuture | None = None) -> None:
        with self._lock:
            self._futures.discard(future)
            if generation != self.generation:
                return                  # a slot of a ring replaced since (reconnect)
            self._slots.append(slot)
            self._free.release()

    def close(self) -> None:
        """End the pipeline (its frames in flight end ``dropped``); a daemon already gone ended it.
        Frames answered before it (the daemon answers each before the close) keep their outcome:
        an output is copied out of the ring before the ring is unmapped."""
        try:
            self.fpga.request("close", pipeline=self.name)
        except DaemonError as exc:
            if exc.kind != "gone":
                raise
        self._drop()
        self.fpga.pipelines.pop(self.name, None)

    def _drop(self) -> None:
        """No more frames; those answered are settled while the ring is still mapped, then it goes."""
        with self._lock:
            self.closed = True
            futures = list(self._futures)
        for future in futures:
            future._settle_if_answered()
        with self._lock:
            self.ring.close()


class DnnPipeline(Pipeline):
    """A best-effort DNN pipeline: ``submit(image).result()`` is the network's int8 output."""

    op, op_register = "infer", "dnn"
    future_class = DnnFuture

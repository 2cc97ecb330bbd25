"""The engine's CPU jobs (``CpuJobs``, a part of the engine): the stages of ``fallback="cpu"``
pipelines the fabric does not take, before its part, after it, or all of them, and DNN images of a
model the fabric has no tiles for. Each job's end is an event at its start + its bound
(runtime/sched/host/cpu_work.py says why the bound, not the host's actual time); a job still
computing then is looked at again every CPU_POLL_S and counted as an overrun, never waited for."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import numpy as np
from fpgashare.sched.core.jobs import CPU_DONE, DnnRequest, Frame, TraceEvent

if TYPE_CHECKING:
    from fpgashare.sched.core.engine_state import EngineState

log = logging.getLogger(__name__)

#: How often a CPU job that overran its bound is looked at again.
CPU_POLL_S = 0.0005


def _key(item: Frame | DnnRequest) -> str:
    return item.key if isinstance(item, Frame) else f"{item.pipeline.name}/image{item.seq}"


class CpuJobs:
    """One engine's work on the host, on the engine's workers (``engine.cpu``, and
    ``engine.cpu_besteffort`` for DNN images: the daemon replaces them with threaded ones).
    ``running``: frame key -> (frame, "before"/"after", Pending)."""

    def __init__(self, engine: EngineState) -> None:
        self.engine = engine
        self.running: dict[str, tuple[Frame | DnnRequest, str, object]] = {}
        self.overruns = 0                 #: CPU parts that took longer than their bound
        self._late: set[str] = set()

    def start(self, frame: Frame) -> None:
        """The frame's release: its CPU prefix (or whole chain) starts on the host."""
        if frame.outcome is None:
            pixels = frame.pixels if frame.pixels is not None else self.engine.test_pixels(frame)
            self.run(frame, "before", pixels)

    def run(self, frame: Frame, phase: str, pixels: np.ndarray) -> None:
        """Run the frame's CPU stages of ``phase`` ("before" or "after" its fabric part)."""
        engine = self.engine
        p = frame.pipeline
        stages, seconds = (p.cpu_before, p.cpu_before_s) if phase == "before" else (p.cpu_after, p.cpu_after_s)
        work = engine.cpu.run_stages(stages, seconds, pixels)
        self.running[frame.key] = (frame, phase, work)
        start = engine.now
        engine.trace.append(TraceEvent("cpu", f"{frame.key} {phase}", start, start + seconds,
                                       {"pipeline": p.name, "stages": [s.name for s in stages]}))
        engine.push(start + seconds, CPU_DONE, frame)

    def run_dnn_on_host(self, request: DnnRequest, seconds: float, infer) -> None:
        """A best-effort image of a DNN pipeline the fabric cannot take: ``infer(image)`` on the host."""
        image = request.image
        self.running[_key(request)] = (request, "dnn", self.engine.cpu_besteffort.start(seconds, lambda: infer(image)))
        self.engine.push(self.engine.now + seconds, CPU_DONE, request)

    def _settled(self, key: str, item: Frame | DnnRequest):
        """The finished CPU job of ``item`` (taken off ``running``), or None: the item ended
        meanwhile (its pipeline closed), or the host is still at it past the bound (counted as an
        overrun, looked at again in CPU_POLL_S)."""
        entry = self.running.get(key)
        if entry is None or entry[0] is not item:
            return None
        if item.outcome is not None:
            del self.running[key]
            return None
        work = entry[2]
        if not work.ready():
            if key not in self._late:
                self._late.add(key)
                self.overruns += 1
                if isinstance(item, Frame):
                    item.overran = True
            self.engine.push(self.engine.now + CPU_POLL_S, CPU_DONE, item)
            return None
        del self.running[key]
        self._late.discard(key)
        return entry

    def done(self, frame: Frame | DnnRequest) -> None:
        """A CPU job's bound is up: take its result (or look again later)."""
        if isinstance(frame, DnnRequest):
            self._dnn_on_host_done(frame)
            return
        entry = self._settled(frame.key, frame)
        if entry is None:
            return
        engine = self.engine
        _, phase, work = entry
        try:
            out, results = work.report()
        except Exception as exc:            # a bug in a CPU stage ends this frame, not the daemon
            log.error("CPU stages of %s failed", frame.key, exc_info=True)
            engine.finish(frame, "error", f"CPU stages failed: {type(exc).__name__}: {exc}")
            return
        frame.results.update(results)
        if phase == "before" and frame.pipeline.stages:
            frame.pixels = out
            engine.fabric_release(frame)
            return
        frame.end = engine.now
        frame.output = out if engine.want_output else None
        engine.finish(frame, "on_time" if frame.end <= frame.due + 1e-12 else "late")
        engine.trace.append(TraceEvent(f"pipeline {frame.pipeline.name}", frame.key, frame.origin, frame.end,
                                       {"outcome": frame.outcome}))

    def _dnn_on_host_done(self, request: DnnRequest) -> None:
        key = _key(request)
        entry = self._settled(key, request)
        if entry is None:
            return
        engine = self.engine
        try:
            request.output = np.asarray(entry[2].report())
        except Exception as exc:
            log.error("the host's inference of %s failed", key, exc_info=True)
            engine.finish_dnn(request, "error", f"CPU inference failed: {type(exc).__name__}: {exc}")
            return
        request.end = engine.now
        engine.dnn_images[request.pipeline.name] = engine.dnn_images.get(request.pipeline.name, 0) + 1
        engine.finish_dnn(request, "done")

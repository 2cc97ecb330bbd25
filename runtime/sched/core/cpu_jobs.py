"""The engine's CPU jobs (a mixin of ``Engine``): the stages of ``fallback="cpu"`` pipelines the
fabric does not take, before its part, after it, or all of them, and DNN images of a model the
fabric has no tiles for. Each job's end is an event at its start + its bound
(runtime/sched/host/cpu_work.py says why the bound, not the host's actual time); a job still
computing then is looked at again every CPU_POLL_S and counted as an overrun, never waited for."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import numpy as np
from fpgashare.sched.core.jobs import CPU_DONE, RELEASE, DnnRequest, Frame, TraceEvent

if TYPE_CHECKING:
    from fpgashare.sched.core.engine import Engine

log = logging.getLogger(__name__)

#: How often a CPU job that overran its bound is looked at again.
CPU_POLL_S = 0.0005


def _key(item: Frame | DnnRequest) -> str:
    return item.key if isinstance(item, Frame) else f"{item.pipeline.name}/image{item.seq}"


class CpuJobs:
    def _cpu_start(self: Engine, frame: Frame) -> None:
        """The frame's release: its CPU prefix (or whole chain) starts on the host."""
        if frame.outcome is None:
            pixels = frame.pixels if frame.pixels is not None else self._pixels[frame.pipeline.name]
            self._run_on_cpu(frame, "before", pixels)

    def _run_on_cpu(self: Engine, frame: Frame, phase: str, pixels: np.ndarray) -> None:
        p = frame.pipeline
        stages, seconds = (p.cpu_before, p.cpu_before_s) if phase == "before" else (p.cpu_after, p.cpu_after_s)
        work = self.cpu.run_stages(stages, seconds, pixels)
        self.on_cpu[frame.key] = (frame, phase, work)
        start = self.now
        self.trace.append(TraceEvent("cpu", f"{frame.key} {phase}", start, start + seconds,
                                     {"pipeline": p.name, "stages": [s.name for s in stages]}))
        self.push(start + seconds, CPU_DONE, frame)

    def run_dnn_on_host(self: Engine, request: DnnRequest, seconds: float, infer) -> None:
        """A best-effort image of a DNN pipeline the fabric cannot take: ``infer(image)`` on the host."""
        image = request.image
        self.on_cpu[_key(request)] = (request, "dnn", self.cpu_besteffort.start(seconds, lambda: infer(image)))
        self.push(self.now + seconds, CPU_DONE, request)

    def _settled(self: Engine, key: str, item: Frame | DnnRequest):
        """The finished CPU job of ``item`` (taken off ``on_cpu``), or None: the item ended
        meanwhile (its pipeline closed), or the host is still at it past the bound (counted as an
        overrun, looked at again in CPU_POLL_S)."""
        entry = self.on_cpu.get(key)
        if entry is None or entry[0] is not item:
            return None
        if item.outcome is not None:
            del self.on_cpu[key]
            return None
        work = entry[2]
        if not work.ready():
            if key not in self._cpu_late:
                self._cpu_late.add(key)
                self.cpu_overruns += 1
            self.push(self.now + CPU_POLL_S, CPU_DONE, item)
            return None
        del self.on_cpu[key]
        self._cpu_late.discard(key)
        return entry

    def _cpu_done(self: Engine, frame: Frame | DnnRequest) -> None:
        if isinstance(frame, DnnRequest):
            self._dnn_on_host_done(frame)
            return
        entry = self._settled(frame.key, frame)
        if entry is None:
            return
        _, phase, work = entry
        try:
            out, results = work.report()
        except Exception as exc:            # a bug in a CPU stage ends this frame, not the daemon
            log.error("CPU stages of %s failed", frame.key, exc_info=True)
            self.finish(frame, "error", f"CPU stages failed: {type(exc).__name__}: {exc}")
            return
        frame.results.update(results)
        if phase == "before" and frame.pipeline.stages:
            frame.pixels = out
            self._fabric_release(frame)
            return
        frame.end = self.now
        frame.output = out if self.want_output else None
        self.finish(frame, "on_time" if frame.end <= frame.due + 1e-12 else "late")
        self.trace.append(TraceEvent(f"pipeline {frame.pipeline.name}", frame.key, frame.origin, frame.end,
                                     {"outcome": frame.outcome}))

    def _fabric_release(self: Engine, frame: Frame) -> None:
        """The CPU prefix is done: the fabric part is released (at its planned time or now)."""
        self.push(max(self.now, frame.release), RELEASE, frame)

    def _dnn_on_host_done(self: Engine, request: DnnRequest) -> None:
        key = _key(request)
        entry = self._settled(key, request)
        if entry is None:
            return
        try:
            request.output = np.asarray(entry[2].report())
        except Exception as exc:
            log.error("the host's inference of %s failed", key, exc_info=True)
            self.finish_dnn(request, "error", f"CPU inference failed: {type(exc).__name__}: {exc}")
            return
        request.end = self.now
        self.dnn_images[request.pipeline.name] = self.dnn_images.get(request.pipeline.name, 0) + 1
        self.finish_dnn(request, "done")

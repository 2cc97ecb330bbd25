"""The engine's best-effort DNN batches (a mixin of ``Engine``): a batch of images on dnn_tile
slots, its backlog (a workload's DNN pipelines always have images; the daemon's queue them), and
its end."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
from fpgashare.catalogue.workload import PipelineSpec
from fpgashare.sched.core.jobs import JOB_DONE, DnnJob, DnnRequest, TraceEvent, fault_reason

if TYPE_CHECKING:
    from fpgashare.sched.core.engine import Engine


class DnnJobs:
    def dnn_backlog(self: Engine, pipeline: PipelineSpec) -> bool:
        """Whether ``pipeline`` has images waiting (a workload's DNN pipelines always do)."""
        return True

    def take_dnn_work(self: Engine, pipeline: PipelineSpec, images: int) -> tuple[int | np.ndarray, list[DnnRequest]]:
        """Up to ``images`` images of ``pipeline`` for one batch: a count of stand-in images here."""
        return images, []

    def dnn_setup_s(self: Engine, slots: Sequence[int], model: str, plan) -> float:
        """Fabric time a batch on ``slots`` would spend first programming tiles new to their layers."""
        return self.backend.dnn_setup_s(slots, model, plan)

    def start_dnn(self: Engine, pipeline: PipelineSpec, slots: Sequence[int], images: int) -> DnnJob | None:
        """Run a batch of up to ``images`` images of a best-effort DNN pipeline on dnn_tile ``slots``."""
        if not self.stream_free():
            raise RuntimeError(f"a {pipeline.name} batch cannot start: the video stream is carrying other work")
        start = self.now
        work, requests = self.take_dnn_work(pipeline, images)
        try:
            pending = self.backend.start_dnn(slots, pipeline.model, work, stream=self.stream_id)
        except Exception as exc:     # a hardware fault: the images taken end with the reason
            for request in requests:
                self.finish_dnn(request, "error", fault_reason(exc))
            return None
        count = work if isinstance(work, int) else len(work)
        job = DnnJob(pipeline, tuple(slots), count, start, start + pending.seconds, requests, work=pending)
        self.slots.acquire(slots, job.key)
        self.dnn_running[job.key] = job
        self._stream_at = None
        self.when_done(pending, job.end, JOB_DONE, job)
        return job

    def _dnn_done(self: Engine, job: DnnJob) -> None:
        self.dnn_running.pop(job.key)
        self._stream_at = None
        self.slots.release(job.slots, self.now)
        job.end = self.now
        try:
            report = job.work.report()
        except Exception as exc:     # a hardware fault: the batch's images end with the reason
            for request in job.requests:
                self.finish_dnn(request, "error", fault_reason(exc))
            return
        job.images, job.outputs = report.images, report.outputs
        if self.now <= self.end_s + 1e-12:
            self.dnn_images[job.pipeline.name] += job.images
            self.dnn_busy_s += job.end - job.start
        for i, request in enumerate(job.requests):
            request.end, request.output = self.now, None if job.outputs is None else job.outputs[i]
            self.finish_dnn(request, "done")
        self._trace_stream(f"{job.pipeline.name} x{job.images}", job.start, job.end, job.pipeline.name)
        for slot in job.slots:
            self.trace.append(TraceEvent(f"slot {slot}", f"{job.pipeline.name} x{job.images}", job.start, job.end,
                                         {"pipeline": job.pipeline.name, "images": job.images}))

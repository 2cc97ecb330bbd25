"""The engine's best-effort DNN batches (``DnnJobs``, a part of the engine): a batch of images on
dnn_tile slots, its backlog (a workload's DNN pipelines always have images; the daemon's queue
them: runtime/sched/board/dnn_queue.py), and its end."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
from fpgashare.catalogue.workload import PipelineSpec
from fpgashare.sched.core.jobs import JOB_DONE, DnnJob, DnnRequest, TraceEvent, fault_reason

if TYPE_CHECKING:
    from fpgashare.sched.core.engine_state import EngineState


class DnnJobs:
    """The DNN batches of one engine; ``running``: by job key (one job per slot group)."""

    def __init__(self, engine: EngineState) -> None:
        self.engine = engine
        self.running: dict[str, DnnJob] = {}

    @property
    def stream_id(self) -> int:
        """The shell's video stream the batches take: the DNN's own if it has one."""
        own = self.engine.dnn_stream_id
        return self.engine.stream_id if own is None else own

    def backlog(self, pipeline: PipelineSpec) -> bool:
        """Whether ``pipeline`` has images waiting (a workload's DNN pipelines always do)."""
        return True

    def take_work(self, pipeline: PipelineSpec, images: int) -> tuple[int | np.ndarray, list[DnnRequest]]:
        """Up to ``images`` images of ``pipeline`` for one batch: a count of stand-in images here."""
        return images, []

    def drop_unplaceable(self) -> None:
        """A slot was quarantined: images queued that no working tile slot can take any more end
        (a workload's stand-in images are not queued)."""

    def setup_s(self, slots: Sequence[int], model: str, plan) -> float:
        """Fabric time a batch on ``slots`` would spend first programming tiles new to their layers."""
        return self.engine.backend.dnn_setup_s(slots, model, plan)

    def overrun_s(self) -> float:
        """How much later than its cycle estimate a batch may end: its register traffic (the
        engine's ``control_s``, the analysis's X; the co-simulated board's batches do run over)."""
        return self.engine.control_s

    def start(self, pipeline: PipelineSpec, slots: Sequence[int], images: int) -> DnnJob | None:
        """Run a batch of up to ``images`` images of a best-effort DNN pipeline on dnn_tile ``slots``."""
        engine = self.engine
        if not engine.stream.dnn_free():
            raise RuntimeError(f"a {pipeline.name} batch cannot start: the video stream is carrying other work")
        start = engine.now
        work, requests = self.take_work(pipeline, images)
        try:
            pending = engine.backend.start_dnn(slots, pipeline.model, work, stream=self.stream_id)
        except Exception as exc:     # a hardware fault: the images taken end with the reason
            for request in requests:
                engine.finish_dnn(request, "error", fault_reason(exc))
            return None
        count = work if isinstance(work, int) else len(work)
        job = DnnJob(pipeline, tuple(slots), count, start, start + pending.seconds, requests, work=pending)
        engine.slots.acquire(slots, job.key)
        self.running[job.key] = job
        engine.stream.changed()
        engine.when_done(pending, job.end, JOB_DONE, job)
        return job

    def done(self, job: DnnJob) -> None:
        """``job``'s batch ended: its slots are free, its images end ``done`` (or with the fault)."""
        engine = self.engine
        self.running.pop(job.key)
        engine.stream.changed()
        engine.slots.release(job.slots, engine.now)
        job.end = engine.now
        try:
            report = job.work.report()
        except Exception as exc:     # a hardware fault: the batch's images end with the reason
            for request in job.requests:
                engine.finish_dnn(request, "error", fault_reason(exc))
            return
        job.images, job.outputs = report.images, report.outputs
        now = engine.now
        if now <= engine.end_s + 1e-12:
            engine.dnn_images[job.pipeline.name] += job.images
            engine.dnn_busy_s += job.end - job.start
        for i, request in enumerate(job.requests):
            request.end, request.output = now, None if job.outputs is None else job.outputs[i]
            engine.finish_dnn(request, "done")
        engine.stream.trace(f"{job.pipeline.name} x{job.images}", job.start, job.end, job.pipeline.name,
                            stream=self.stream_id)
        for slot in job.slots:
            engine.trace.append(TraceEvent(f"slot {slot}", f"{job.pipeline.name} x{job.images}", job.start, job.end,
                                           {"pipeline": job.pipeline.name, "images": job.images}))

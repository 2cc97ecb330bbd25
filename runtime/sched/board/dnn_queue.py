"""The daemon's DNN batches (``QueuedDnnJobs``, the DNN part of its partitions' engines,
runtime/sched/board/board.py): batches of the images apps submitted, queued by pipeline name, instead of a workload's
endless stand-in images."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from fpgashare.catalogue.workload import PipelineSpec
from fpgashare.sched.core.dnn_jobs import DnnJobs
from fpgashare.sched.core.jobs import DnnRequest

if TYPE_CHECKING:
    from fpgashare.sched.core.engine_state import EngineState


class QueuedDnnJobs(DnnJobs):
    """DNN batches of the images apps submitted: ``queue`` holds them by pipeline name."""

    def __init__(self, engine: EngineState) -> None:
        super().__init__(engine)
        self.queue: dict[str, list[DnnRequest]] = {}

    def backlog(self, pipeline: PipelineSpec) -> bool:
        return bool(self.queue.get(pipeline.name))

    def drop_unplaceable(self) -> None:
        engine = self.engine
        if "dnn_tile" in engine.backend.platform.modules and not engine.working_platform().slots_for("dnn_tile"):
            for queue in self.queue.values():
                for request in queue:
                    engine.finish_dnn(request, "dropped", "every dnn_tile slot is quarantined")
                queue.clear()

    def take_work(self, pipeline: PipelineSpec, images: int) -> tuple[int | np.ndarray, list[DnnRequest]]:
        queue = self.queue[pipeline.name]
        taken, self.queue[pipeline.name] = queue[:images], queue[images:]
        if not self.engine.want_output:     # timing only (a replay): a count, no outputs computed
            return len(taken), taken
        return np.stack([r.image for r in taken]), taken

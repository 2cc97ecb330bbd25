"""A workload's releases: frame k of each real-time pipeline at its offset plus k periods (and its
jitter, drawn from the workload's seed) after the registration window, as ``bench`` and the tests
run a workload file. Frames carry no pixels: each pipeline gets one random stand-in input."""

from __future__ import annotations

import time

import numpy as np
from fpgashare.catalogue.workload import PipelineSpec, Workload
from fpgashare.sched.core.engine import Engine
from fpgashare.sched.core.jobs import RELEASE, Frame


class PeriodicReleases:
    """``workload``'s releases for the engine it is attached to (``ReleaseSource``)."""

    warm_up = True

    def __init__(self, workload: Workload) -> None:
        self.workload = workload
        self.engine = None
        self._next: dict[str, int] = {}               # pipeline -> its next frame not yet released
        self.pixels: dict[str, np.ndarray] = {}       #: each pipeline's stand-in input

    def attach(self, engine) -> None:
        self.engine = engine
        self._next = {p.name: 0 for p in engine.pipelines}
        rng = np.random.default_rng(self.workload.seed)
        for p in engine.pipelines:
            shape = p.stages[0].kind.input_shape(*p.frame)
            self.pixels[p.name] = rng.integers(0, 256, shape, dtype=np.uint8)

    def schedule(self) -> None:
        engine, seq = self.engine, 0
        early = engine.contract.early
        for p in engine.pipelines:
            k = 0
            while p.offset_s + k * p.period_s < self.workload.duration_s:
                release = engine.t0 + p.release_s(k, self.workload.seed)
                if p.name in early:
                    # pending from its commit instant on, due by its earliest deadline; it streams
                    # once it has come (runtime/sched/analysis/early_commit.py)
                    nominal = engine.t0 + p.offset_s + k * p.period_s
                    frame = Frame(p, k, nominal - early[p.name], nominal + p.deadline_s, seq, origin=release,
                                  arrives=release)
                    release = frame.release
                else:
                    frame = Frame(p, k, release, release + p.deadline_s, seq)
                seq += 1
                engine.frames.append(frame)
                engine.push(release, RELEASE, frame)
                k += 1

    def _nominal(self, pipeline: PipelineSpec) -> float:
        """Frame k's nominal release from the start of releases (inf after the last one)."""
        k = self._next[pipeline.name]
        if pipeline.offset_s + k * pipeline.period_s >= self.workload.duration_s:
            return float("inf")
        return pipeline.offset_s + k * pipeline.period_s

    def next_release_s(self, pipeline: PipelineSpec) -> float:
        # Its nominal release: jitter only delays it (an early pipeline's frame is pending sooner).
        return self.engine.t0 + self._nominal(pipeline) - self.engine.contract.early.get(pipeline.name, 0.0)

    def need_time(self, pipeline: PipelineSpec) -> float:
        return self._nominal(pipeline) + pipeline.deadline_s

    def released(self, frame: Frame) -> None:
        self._next[frame.pipeline.name] = frame.index + 1
        self.engine.demand.moved(frame.pipeline)

    def fabric_release(self, frame: Frame) -> None:
        self.engine.push(max(self.engine.now, frame.release), RELEASE, frame)

    def ended(self, frame: Frame) -> None:
        """A workload's frames stay for its summary."""

    def test_pixels(self, frame: Frame) -> np.ndarray:
        return self.pixels[frame.pipeline.name]


def workload_engine(workload: Workload, backend, policy, **kw):
    """An engine for ``workload``'s real-time pipelines, fed by its periodic releases (``Engine``'s
    other arguments as keywords)."""
    return Engine(workload, backend, policy, source=PeriodicReleases(workload), **kw)


def run_workload(workload: Workload, backend, policy, **kw) -> tuple:
    """``workload`` run to its end on one stream: the engine and its summary."""
    start = time.perf_counter()
    engine = workload_engine(workload, backend, policy, **kw).run()
    return engine, engine.summary(time.perf_counter() - start)

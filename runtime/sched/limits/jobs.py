"""The work of a workload over a horizon, as the exact model and the caps see it: one job per pass
of every real-time frame released in the horizon, in integer ticks.

Windows contain every realisation: release jitter is a window, so a frame may start at its nominal
release ``offset + k * period`` and must end by ``nominal + jitter + deadline`` (the latest
deadline any draw of the jitter gives it). Ticks round in the same direction: releases down,
deadlines up, stream and load times down. Each choice only widens what a schedule may do, so a
figure computed on these jobs bounds every run of the workload (docs/limits.md). ``realised``
instead takes the releases a run with the workload's seed draws (tighter, that run only).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from fpgashare.catalogue.platform import Platform
from fpgashare.catalogue.workload import PipelineSpec, Workload
from fpgashare.errors import FpgashareError

#: Seconds per tick of the exact model (100 ns: frames of a few microseconds keep their length).
TICK_S = 1e-7


def ticks_down(seconds: float) -> int:
    return math.floor(seconds / TICK_S + 1e-6)


def ticks_up(seconds: float) -> int:
    return math.ceil(seconds / TICK_S - 1e-6)


@dataclass(frozen=True)
class Job:
    """One pass of one frame: it streams ``length`` ticks through ``modules`` (distinct slots)
    somewhere in [release, due]."""

    pipeline: str
    frame: int                     #: the frame's index in its pipeline
    step: int                      #: the pass (0 for a chain that fits the fabric)
    release: int
    due: int
    length: int
    modules: tuple[str, ...]

    @property
    def key(self) -> str:
        return f"{self.pipeline}/{self.frame}/{self.step}"


def hyperperiod_s(pipelines: list[PipelineSpec]) -> float:
    """Least common multiple of the periods, in whole ticks."""
    ticks = [max(1, round(p.period_s / TICK_S)) for p in pipelines]
    return math.lcm(*ticks) * TICK_S if ticks else 0.0


def realtime(workload: Workload) -> list[PipelineSpec]:
    return [p for p in workload.pipelines if p.realtime and not p.on_cpu_only]


def frame_jobs(workload: Workload, horizon_s: float | None = None, max_frames: int | None = None,
               realised: bool = False, max_modules: int | None = None) -> list[Job]:
    """Every pass of every frame whose nominal release is before ``horizon_s`` (default: the
    workload's duration; the run releases exactly these), keeping at most ``max_frames`` frames
    and ``max_modules`` module uses (a stage of a frame), the earliest released frames. Fewer
    frames only drop constraints: a bound on them bounds the run."""
    horizon = workload.duration_s if horizon_s is None else min(horizon_s, workload.duration_s)
    frames: list[tuple[float, PipelineSpec, int]] = []
    for p in realtime(workload):
        k = 0
        while p.offset_s + k * p.period_s < horizon:
            frames.append((p.offset_s + k * p.period_s, p, k))
            k += 1
    frames.sort(key=lambda f: f[0])
    if max_frames is not None:
        frames = frames[:max_frames]
    if max_modules is not None:
        kept, used = [], 0
        for f in frames:
            used += len(f[1].stages)
            if used > max_modules and kept:
                break
            kept.append(f)
        frames = kept
    jobs = []
    for nominal, p, k in frames:
        if realised:
            start = p.release_s(k, workload.seed)
            due = start + p.deadline_s
        else:
            start, due = nominal, nominal + p.jitter_s + p.deadline_s
        for step, (modules, seconds) in enumerate(zip(p.pass_modules, p.pass_seconds, strict=True)):
            jobs.append(Job(p.name, k, step, ticks_down(start), ticks_up(due), max(1, ticks_down(seconds)),
                            modules))
    return jobs


def load_ticks(platform: Platform) -> dict[int, int]:
    """Port ticks of one load into each slot (rounded down)."""
    return {s.index: ticks_down(platform.slot_load_seconds(s.index)) for s in platform.slots}


def check_fits(jobs: list[Job], platform: Platform) -> None:
    """Every job's modules must fit distinct compatible slots, and its length its window."""
    from fpgashare.catalogue.passes import fits

    for job in jobs:
        if not fits(job.modules, platform):
            raise FpgashareError(f"{job.key}: modules {', '.join(job.modules)} do not fit {platform.name}'s slots")

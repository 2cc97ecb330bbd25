"""The engine is composed of parts handed their collaborators (runtime/sched/core/engine_state.py):
whichever engine builds them (a workload's or the daemon's), every part works on that engine and
on the same sibling parts, so a DNN batch started by the DNN part occupies the stream the frame
part checks."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from fpgashare.backends.model import ModelBackend
from fpgashare.catalogue.platform import load_platform
from fpgashare.catalogue.workload import load_workload
from fpgashare.sched.board.board import Board
from fpgashare.sched.board.dnn_queue import QueuedDnnJobs
from fpgashare.sched.core.clock import VirtualClock
from fpgashare.sched.core.engine import Engine
from fpgashare.sched.policies.registry import make_policy
from fpgashare.sched.sources.periodic import PeriodicReleases, workload_engine
from fpgashare.sched.sources.submitted import Submissions
from hypothesis import given, settings
from hypothesis import strategies as st


def _engines() -> list[Engine]:
    workload = load_workload("dnn_backfill_zcu104")
    platform = load_platform("zcu104")
    return [workload_engine(workload, ModelBackend(workload.platform), make_policy("edf")),
            Board.whole(platform, ModelBackend(platform), lambda: make_policy("edf"), VirtualClock()).parts[0]]


@pytest.mark.parametrize("engine", _engines(), ids=["workload", "daemon"])
def test_every_part_works_on_its_own_engine_and_siblings(engine):
    for name in ("port", "placement", "dnn", "cpu_jobs", "foresight", "stream"):
        assert getattr(engine, name).engine is engine, f"{name} works on another engine"
    assert engine.stream.dnn is engine.dnn and engine.stream.cpu_jobs is engine.cpu_jobs
    assert engine.foresight.port is engine.port


def test_the_daemons_dnn_part_batches_the_images_apps_queue():
    engine = _engines()[1]
    assert isinstance(engine.dnn, QueuedDnnJobs)


def test_the_release_source_and_registrations_are_wired_to_their_own_engine():
    workload, daemon = _engines()
    assert isinstance(workload.source, PeriodicReleases) and workload.source.engine is workload
    assert workload.members is None and workload.watchdog is None and not workload.changing
    assert isinstance(daemon.source, Submissions) and daemon.source.engine is daemon
    assert daemon.members.engine is daemon and daemon.members.source is daemon.source
    assert daemon.members.changes.engine is daemon and daemon.watchdog.engine is daemon
    assert daemon.source.joining == daemon.members.changes.joining       # held frames wait for their switch


@pytest.mark.parametrize("engine", _engines(), ids=["workload", "daemon"])
def test_a_running_dnn_batch_takes_the_stream_every_part_sees(engine):
    class _Batch:
        end = 1.0
    engine.dnn.running["batch"] = _Batch()
    engine.stream.changed()
    assert not engine.stream.free() and engine.stream.free_at() == 1.0
    assert engine.foresight.stream_job_end() == 1.0


def test_host_work_runs_on_the_workers_the_engine_is_given_after_it_is_built():
    """The daemon replaces the engine's host workers with threaded ones once built: the CPU part
    must use those, not workers of its own."""
    engine = _engines()[1]
    calls = []

    class _Workers:
        def run_stages(self, stages, seconds, pixels):
            calls.append("stages")
            return object()

        def start(self, seconds, fn):
            calls.append("image")
            return object()

    engine.cpu = engine.cpu_besteffort = _Workers()
    p = SimpleNamespace(name="p", cpu_before=(), cpu_before_s=0.001, cpu_after=(), cpu_after_s=0.0)
    engine.cpu_jobs.run(SimpleNamespace(key="p/0", pipeline=p), "before", np.zeros((2, 2), np.uint8))
    engine.cpu_jobs.run_dnn_on_host(SimpleNamespace(image=None, pipeline=p, seq=1), 0.001, lambda image: image)
    assert calls == ["stages", "image"]


@pytest.mark.parametrize("streams", [1, 2])
def test_an_engine_carries_as_many_passes_at_once_as_video_streams_it_is_given(streams):
    """``video_streams``: passes on disjoint slots stream together, each on a stream of its own
    (the planned policy's table over several streams); one stream takes them in turn."""
    from pathlib import Path

    from fpgashare.catalogue.workload import Workload, realtime_spec
    from fpgashare.sched.core.policy import Policy

    class _Resident(Policy):
        def dispatch(self, engine):
            for frame in list(engine.pending):
                self.start_if_resident(engine, frame, set())

    platform = load_platform("pynq-z2")
    pipelines = tuple(realtime_spec(name, [module], 0.01, 0.01, [120, 160], platform)
                      for name, module in (("a", "conv3x3"), ("b", "sobel_mag")))
    workload = Workload(Path("two.toml"), platform, 1, 0.05, pipelines)
    engine = workload_engine(workload, ModelBackend(platform, streams=streams if streams > 1 else None),
                             _Resident(), video_streams=streams).run()
    assert all(f.outcome == "on_time" for f in engine.frames) and len(engine.frames) == 10
    spans = {f.index: [] for f in engine.frames}
    for f in engine.frames:
        spans[f.index].append(f.streamed[0])
    together = [a[0] < b[1] and b[0] < a[1] for a, b in spans.values()]
    assert all(together) if streams == 2 else not any(together)
    tracks = {e.track for e in engine.trace if e.track.startswith("stream")}
    assert tracks == {f"stream {k}" for k in range(streams)}
    with pytest.raises(ValueError, match="at least one video stream"):
        workload_engine(workload, ModelBackend(platform), _Resident(), video_streams=0)


@settings(max_examples=4, deadline=None)
@given(st.integers(0, 2**31 - 1))
def test_on_an_engine_carrying_two_streams_a_dnn_batch_never_shares_a_stream(seed):
    """With no stream of its own, the DNN's batches take the engine's first stream: one at a
    time, and only while no frame streams there (a frame on the second stream may go on)."""
    import random
    from dataclasses import replace
    from itertools import pairwise

    from fpgashare.sched.policies.edf import EdfPolicy

    from benchmarks.limit_gap import small_workload

    rng = random.Random(seed)
    workload = next(w for w in (small_workload(rng.randrange(2**31)) for _ in range(500))
                    if any(not p.realtime for p in w.pipelines))
    workload = replace(workload, duration_s=2 * workload.duration_s)
    engine = workload_engine(workload, ModelBackend(workload.platform, streams=2), EdfPolicy(),
                             video_streams=2).run()
    assert all(f.outcome is not None for f in engine.frames)
    for track in {e.track for e in engine.trace if e.track.startswith("stream ")}:
        spans = sorted((e.start, e.end, e.name) for e in engine.trace if e.track == track)
        assert not [(a, b) for a, b in pairwise(spans) if b[0] < a[1] - 1e-12], track

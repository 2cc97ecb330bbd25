"""The daemon on several video streams (runtime/sched/board/board.py): apps' pipelines go to
fixed partitions of the board (a stream and slots of their own), frames of different partitions
run at the same time, and admitted still means guaranteed when pipelines arrive one by one."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from fpgashare.backends import make_backend
from fpgashare.backends.model import ModelBackend
from fpgashare.backends.simrun import resolve_chain
from fpgashare.catalogue.platform import load_platform
from fpgashare.catalogue.vision_ref import chain_reference
from fpgashare.catalogue.workload import realtime_spec
from fpgashare.client import connect
from fpgashare.daemon import Daemon, DaemonThread
from fpgashare.errors import FpgashareError
from fpgashare.sched.board.board import Board
from fpgashare.sched.board.board_admission import split_slots
from fpgashare.sched.core.clock import VirtualClock
from fpgashare.sched.policies.registry import make_policy
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from benchmarks.online_streams_soundness import replay

SHAPE = (240, 320)
CHAINS = {"a": ["gauss3x3", "threshold"], "b": ["sobel_mag", "threshold"]}


def test_slots_are_split_in_runs_and_bad_stream_counts_are_refused(tmp_path):
    zcu = load_platform("zcu104")
    assert split_slots(zcu, 1) == [(0, 1, 2, 3)]
    assert split_slots(zcu, 3) == [(0, 1), (2,), (3,)]
    with pytest.raises(FpgashareError, match=r"zcu104.toml: 5 streams asked; platform.streams is 4"):
        split_slots(zcu, 5)
    with pytest.raises(FpgashareError, match=r"pynq-z2.toml: 3 streams asked; platform.streams is 2"):
        Daemon(ModelBackend(load_platform("pynq-z2")), tmp_path / "d.sock", clock=VirtualClock(), streams=3)
    with pytest.raises(FpgashareError, match="0 streams asked"):
        split_slots(zcu, 0)

    class OneDma(ModelBackend):            # as the pynq backend: one DMA, stream 0 only
        @classmethod
        def streams_carried(cls, platform):
            return 1

    with pytest.raises(FpgashareError, match=r"carries 1 video stream\(s\) of zcu104 at once; 2 asked"):
        Daemon(OneDma(zcu), tmp_path / "e.sock", clock=VirtualClock(), streams=2)
    with pytest.raises(FpgashareError, match="rr-bundle runs on one stream"):
        Daemon(ModelBackend(zcu), tmp_path / "f.sock", clock=VirtualClock(), streams=2, scheduler="rr-bundle")


def _frames_side_by_side(sock, streams: int):
    """Both apps' frames submitted together, 10 times, after a warm-up; the daemon and the frames'
    (start, end, track) on the fabric."""
    frame = np.random.default_rng(7).integers(0, 256, SHAPE, dtype=np.uint8)
    daemon = Daemon(make_backend("model", load_platform("zcu104")), sock, clock=VirtualClock(), streams=streams,
                    fixed_split=True)
    with DaemonThread(daemon), connect(sock) as a, connect(sock) as b:
        pipes = {"a": a.pipeline("a", CHAINS["a"], period_ms=10.0, frame_shape=SHAPE),
                 "b": b.pipeline("b", CHAINS["b"], period_ms=10.0, frame_shape=SHAPE)}
        for k in range(12):
            daemon.run_until(k * 0.010)
            futures = {name: pipe.submit(frame) for name, pipe in pipes.items()}
            a.clock()
            b.clock()
            daemon.run_until(k * 0.010 + 0.009)
            for name, future in futures.items():
                want = chain_reference(resolve_chain(CHAINS[name], {}), frame)
                assert np.array_equal(future.result(timeout=10), want), (streams, name, k)
        status = a.status()
        homes = {name: daemon.engine.partition_of(name)[1] for name in pipes} if streams > 1 else {}
        spans = [(e.start, e.end, e.track) for e in daemon.engine.trace if e.track.startswith("stream")]
    return daemon, spans, status, homes


def test_two_apps_on_two_streams_compute_at_the_same_time(tmp_path):
    daemon, spans, status, homes = _frames_side_by_side(tmp_path / "two.sock", streams=2)
    assert daemon.outcomes.get("late", 0) == daemon.outcomes.get("dropped", 0) == 0
    assert sorted(homes.values()) == [(0, 1), (2, 3)]
    late = [s for s in spans if s[0] >= 0.05]               # once both are warm
    tracks = {t for _, _, t in late}
    assert tracks == {"stream 0", "stream 1"}
    together = [(x, y) for x in late for y in late if x[2] == "stream 0" and y[2] == "stream 1"
                and x[0] < y[1] and y[0] < x[1]]
    assert len(together) >= 5                  # the two streams' frames overlap in board time
    # Status numbers slots as the board does, each with the module of its own partition's chain.
    assert [(s["slot"], s["stream"]) for s in status["slots"]] == [(0, 0), (1, 0), (2, 1), (3, 1)]
    # On one stream the same frames take turns: never two at once.
    _, one, _, _ = _frames_side_by_side(tmp_path / "one.sock", streams=1)
    one = sorted(s for s in one if s[0] >= 0.05)
    assert all(b[0] >= a[1] - 1e-12 for a, b in itertools.pairwise(one))


def test_a_chain_longer_than_its_partition_runs_in_passes_there():
    """A partition has fewer slots than the board: a chain is cut into passes for its slots."""
    platform = load_platform("zcu104")
    engine = Board(platform, ModelBackend(platform), lambda: make_policy("edf"), VirtualClock(),
                           split_slots(platform, 2))
    spec = realtime_spec("edges", ["rgb2gray", "gauss3x3", "sobel_mag", "threshold"], 1 / 30, 1 / 30,
                         [480, 640], platform)
    assert spec.passes == ()
    assert engine.admit(spec) is None
    engine.add_pipeline(spec, admitted=True)
    placed = next(p for p in engine.pipelines if p.name == "edges")
    assert placed.passes == (2, 2) and placed.exec_s >= spec.exec_s


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10**9), st.integers(1, 4))
@example(27, 3)        # a pinned slot holding another module passed for "pin in": a frame dropped
@example(35, 1)        # held frames released less than a period apart: a frame dropped (one stream)
@example(61, 1)        # a frame committed before a new pin's idle load waited forever (163 of 167 dropped)
@example(80, 1)
@example(31154, 1)     # work started under the previous contract ran into a newcomer's first frame
@example(700095, 1)    # a DNN batch during a newcomer's warm-up
@example(700130, 1)    # warm-up holds shifted a pipeline's releases: 82 frames dropped
def test_online_admission_on_any_number_of_streams_never_misses(seed, streams):
    """Random workloads registered one pipeline at a time, frames with jitter, DNN images if the
    workload has a model: no admitted frame late or dropped, every frame and image ends once."""
    r = replay(seed, streams, max_s=1.0, dnn_every_s=0.02)
    assert r["missed"] == 0, r
    assert r["ended_twice"] == r["unended"] == r["dnn_failed"] == 0, r

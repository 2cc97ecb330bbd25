"""The DNN on a spare stream (runtime/sched/board/stream_plan.py ``with_spare_stream``,
runtime/sched/policies/backfill.py ``beside_pass``): where the DNN backfills inside a real-time
partition and the board has a stream no partition uses, its batches take that stream and may run
beside the partition's frames. Checked on generated DNN workloads with jitter run for many
hyperperiods: no admitted frame misses, every frame ends in exactly one outcome, a batch that
starts while a pass streams ends by that pass's end, and no slot is ever held by a batch and a
frame at once (a slot the DNN took is back before a frame of its partition uses it)."""

from __future__ import annotations

import random
from dataclasses import replace

from fpgashare.backends.model import ModelBackend
from fpgashare.cli.bench import run_one
from fpgashare.sched.analysis.control_traffic import control_seconds
from fpgashare.sched.board.board import run_board
from fpgashare.sched.board.stream_plan import Partition, StreamPlan, plan_streams, with_spare_stream
from fpgashare.sched.policies.edf import EdfPolicy
from hypothesis import given, note, settings
from hypothesis import strategies as st

from benchmarks.limit_gap import small_workload
from tests.test_pin_lend import dnn_workload

EPS = 1e-9


def _slices(engine, track: str, dnn: bool) -> list[tuple[float, float]]:
    return sorted((e.start, e.end) for e in engine.trace
                  if e.track == track and e.name.startswith("dnn ") == dnn)


def beside_batches(part) -> list[tuple[float, float, float, float]]:
    """(batch start, batch end, pass start, pass end) of every batch that started while a pass of
    ``part``'s frames streamed."""
    if part.dnn_stream_id is None:
        return []
    passes = _slices(part, f"stream {part.stream_id}", dnn=False)
    out = []
    for bs, be in _slices(part, f"stream {part.dnn_stream_id}", dnn=True):
        out += [(bs, be, ps, pe) for ps, pe in passes if ps - EPS <= bs < pe - EPS]
    return out


def slot_overlaps(part) -> list[tuple]:
    """Pairs (batch, frame) that held one slot at the same time: none may exist."""
    out = []
    for track in {e.track for e in part.trace if e.track.startswith("slot ")}:
        dnn = _slices(part, track, dnn=True)
        frames = _slices(part, track, dnn=False)
        out += [(track, b, f) for b in dnn for f in frames if b[0] < f[1] - EPS and f[0] < b[1] - EPS]
    return out


@settings(max_examples=12, deadline=None)
@given(st.integers(0, 2**31 - 1))
def test_batches_beside_frames_miss_nothing_and_end_with_their_pass(seed):
    workload = dnn_workload(seed)
    board, result = run_one(workload, "edf", "model", check_rejected=False)
    admitted = set(result["admitted"])
    late = {n: p["late"] + p["dropped"] + p["errors"] for n, p in result["pipelines"].items() if n in admitted}
    assert not any(late.values()), late
    frames = board.frames
    assert all(f.outcome is not None for f in frames)
    assert len(frames) == sum(p["submitted"] for p in result["pipelines"].values())
    beside = 0
    for part in board.parts:
        assert not slot_overlaps(part)
        for bs, be, ps, pe in beside_batches(part):
            assert be <= pe + EPS, (bs, be, ps, pe)
            beside += 1
    note(f"{workload.platform.name}: batches beside a pass: {beside}")


class TrafficBoard(ModelBackend):
    """The twin, but every DNN batch runs over its cycle estimate by the board's register traffic
    *X* (``control_seconds``, the bound the analysis takes): the co-simulated board's batches do
    run over by their register accesses, which the twin's cycle count leaves out."""

    def start_dnn(self, slots, model, images, stream=0):
        pending = super().start_dnn(slots, model, images, stream)
        pending.seconds += control_seconds(self.platform)
        return pending


@settings(max_examples=3, deadline=None)
@given(st.integers(0, 2**31 - 1))
def test_a_batch_beside_a_pass_ends_by_the_pass_end_with_its_register_traffic(seed):
    """A batch beside a pass is sized to end *X* before the pass does, so the traffic that runs it
    over its estimate still leaves it over when the next frame may want one of its tiles. Runs
    generated DNN workloads until some batches ran beside a pass (or 40 workloads)."""
    rng = random.Random(seed)
    beside = []
    for _ in range(40):
        workload = dnn_workload(rng.randrange(2**31), hyperperiods=4)
        streams = workload.platform.streams
        plan = plan_streams(workload, streams, phased=True, spare_stream=True)
        board, summary = run_board(workload, TrafficBoard(workload.platform, streams=streams), plan, EdfPolicy)
        admitted = {p.name for p in plan.admitted}
        assert not any(p["late"] + p["dropped"] + p["errors"] for n, p in summary["pipelines"].items()
                       if n in admitted)
        beside += [b for part in board.parts for b in beside_batches(part)]
        if len(beside) >= 8:
            break
    note(f"batches beside a pass: {len(beside)}")
    assert all(be <= pe + EPS for _, be, _, pe in beside), [b for b in beside if b[1] > b[3] + EPS]


def test_some_generated_workloads_run_batches_beside_frames():
    """The mechanism is used: among generated DNN workloads, some run batches beside a pass."""
    found = 0
    for seed in range(12):
        board, _ = run_one(dnn_workload(8_675_309 + seed, hyperperiods=2), "edf", "model", check_rejected=False)
        found += any(beside_batches(part) for part in board.parts)
    assert found


def test_the_spare_stream_goes_to_the_partition_hosting_the_dnn():
    platform = small_workload(1).platform
    host = Partition(0, (0, 1), pipelines=[object()], dnn=True)   # type: ignore[list-item]
    own = Partition(1, (2,), pipelines=[object()])                # type: ignore[list-item]
    plan = with_spare_stream(StreamPlan([host, own]), replace(platform, streams=3), 3)
    assert host.dnn_stream == 2 and own.dnn_stream is None
    # Every stream taken: nothing to hand out.
    full = Partition(0, (0, 1), pipelines=[object()], dnn=True)  # type: ignore[list-item]
    with_spare_stream(StreamPlan([full]), replace(platform, streams=1), 1)
    assert full.dnn_stream is None
    # A DNN with a partition of its own already has a stream: no real-time partition hosts it.
    alone = [Partition(0, (0,), pipelines=[object()]), Partition(1, (1,), dnn=True)]  # type: ignore[list-item]
    with_spare_stream(StreamPlan(alone), replace(platform, streams=3), 3)
    assert all(p.dnn_stream is None for p in alone)
    assert plan.partitions == [host, own]

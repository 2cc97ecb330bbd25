"""The DNN on a spare stream (runtime/sched/board/stream_plan.py ``with_spare_stream``,
runtime/sched/policies/backfill.py ``beside_pass``): where the DNN backfills inside a real-time
partition and the board has a stream no partition uses, its batches take that stream and may run
beside the partition's frames. Checked on generated DNN workloads with jitter run for many
hyperperiods: no admitted frame misses, every frame ends in exactly one outcome, a batch that
starts while a pass streams ends by that pass's end, and no slot is ever held by a batch and a
frame at once (a slot the DNN took is back before a frame of its partition uses it). And on the
daemon's path (``board_admission.give_spare_stream``): a board that starts whole and re-partitions
itself as generated cameras register gives the DNN's partition a stream no partition uses, and a
later layout that needs it takes it back with nothing on any stream overlapping and no frame
missing."""

from __future__ import annotations

import heapq
import random
from collections import Counter
from dataclasses import replace
from itertools import pairwise
from unittest.mock import patch

import numpy as np
from fpgashare.backends.model import ModelBackend
from fpgashare.catalogue.platform import load_platform
from fpgashare.catalogue.workload import DNN_MODELS, PipelineSpec
from fpgashare.cli.bench import run_one
from fpgashare.dnn.planning import network
from fpgashare.sched.analysis.control_traffic import control_seconds
from fpgashare.sched.board.board import Board
from fpgashare.sched.board.dnn_queue import QueuedDnnJobs
from fpgashare.sched.board.partition_check import Partition
from fpgashare.sched.board.stream_plan import StreamPlan, plan_streams, with_spare_stream
from fpgashare.sched.board.workload_run import run_board
from fpgashare.sched.core.clock import VirtualClock
from fpgashare.sched.policies.edf import EdfPolicy
from fpgashare.sched.policies.registry import make_policy
from hypothesis import given, note, settings
from hypothesis import strategies as st

from benchmarks.daemon_path_soundness import _camera
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


# ---- the daemon's path: a board that re-partitions itself as pipelines come (Board.whole, cap)

def daemon_episode(seed: int, backend: type = ModelBackend) -> dict:
    """A daemon's board on a virtual clock over the twin (as benchmarks/daemon_path_soundness.py
    drives it): a DNN with a backlog from the start, then generated cameras registering one after
    another at random times, each sending frames from its registration's return with jitter
    within its declaration, until the end. What happened: the board, frames, images, how often
    each ended, and every DNN batch with the end of the pass it started beside (None: none)."""
    batches: list = []
    start_batch = QueuedDnnJobs.start

    def recorded(jobs, pipeline, slots, images):
        passes = [f.expected_end for f in jobs.engine.running.values()]
        job = start_batch(jobs, pipeline, slots, images)
        if job is not None:
            batches.append((job, min(passes) if passes else None))
        return job

    with patch.object(QueuedDnnJobs, "start", recorded):
        return {**_daemon_episode(seed, backend), "batches": batches}


def _daemon_episode(seed: int, backend: type) -> dict:
    rng = random.Random(seed)
    platform = load_platform(rng.choice(("pynq-z2", "zcu104", "zcu104-x4")))
    cap = min(platform.streams, len(platform.slots))
    clock = VirtualClock()
    board = Board.whole(platform, backend(platform), lambda: make_policy("edf"), clock, cap=cap)
    for engine in board.parts:
        engine.want_output = False          # timing is the claim (a re-layout's partitions copy it)
    ended: Counter = Counter()
    board.on_finish = lambda item: ended.update([id(item)])
    board.begin()
    duration = rng.uniform(0.3, 0.6)
    dnn = PipelineSpec("dnn", "besteffort", model=rng.choice(DNN_MODELS))
    board.add_pipeline(dnn)
    image = np.zeros(network(dnn.model).input_shape, np.uint8)
    images = [board.submit_dnn("dnn", image) for _ in range(16)]
    cameras = [c for i in range(rng.randint(2, 6)) if (c := _camera(rng, f"p{i}", platform)) is not None]
    queue: list = []
    order = iter(range(1 << 62))

    def push(t: float, kind: str, item) -> None:
        heapq.heappush(queue, (t, next(order), kind, item))

    for camera in cameras:
        push(rng.uniform(0.0, 0.6 * duration), "register", camera)
    frames, admitted = [], set()
    pixels = {c.name: np.zeros(c.stages[0].kind.input_shape(*c.frame), np.uint8) for c in cameras}

    def start(spec: PipelineSpec) -> None:
        first = clock.now() + rng.uniform(0.0, spec.period_s)
        for k in range(int((duration - first) / spec.period_s) + 1):
            push(first + k * spec.period_s + rng.uniform(0.0, spec.jitter_s), "frame", spec)

    def run_to(t: float) -> None:
        while (due := board.next_event_s()) is not None and due <= t:
            clock.wait_until(max(due, clock.now()))
            board.advance_to(clock.now())
        clock.wait_until(max(t, clock.now()))
        board.advance_to(clock.now())

    while queue:
        t, _, kind, item = heapq.heappop(queue)
        run_to(t)
        if kind == "register":
            if board.busy:                  # the previous registration has not returned yet
                push(clock.now() + 1e-3, "register", item)
                continue
            if board.admit(item) is None:
                admitted.add(item.name)
                board.add_pipeline(item, admitted=True, on_ready=lambda spec=item: start(spec),
                                   on_refused=lambda _why, name=item.name: admitted.discard(name))
        elif kind == "frame":
            frames.append(board.submit(item.name, pixels[item.name]))
        waiting = sum(1 for r in images if r.outcome is None)
        if t < duration:                    # the DNN's backlog kept full
            images += [board.submit_dnn("dnn", image) for _ in range(16 - waiting)]
    run_to(duration + 1.0)
    for name in [*sorted(admitted), "dnn"]:
        board.remove_pipeline(name, "the run ended")
    while (due := board.next_event_s()) is not None:
        run_to(due)
    return {"board": board, "frames": frames, "images": images, "ended": ended}


def stream_slices(board) -> dict[str, list[tuple[float, float, str]]]:
    """Every slice on each video stream, of every partition the board has had."""
    out: dict[str, list] = {}
    for _, engine in board.every():
        for e in engine.trace:
            if e.track.startswith("stream "):
                out.setdefault(e.track, []).append((e.start, e.end, e.name))
    return out


def taken_back(board) -> int:
    """Spare streams the DNN's batches ran on that a later layout's real-time partition streams on."""
    every = [e for _, e in board.every()]
    out = 0
    for k, engine in enumerate(every):
        s = engine.dnn_stream_id
        if s is None or not _slices(engine, f"stream {s}", dnn=True):
            continue
        out += any(later.stream_id == s and _slices(later, f"stream {s}", dnn=False) for later in every[k + 1:])
    return out


def check_daemon_episode(run: dict) -> tuple[int, int]:
    """The claims on one episode: no admitted frame misses (as its app sees it), every frame and
    image ends exactly once, nothing overlaps on any stream (the DNN's spare stream is free before
    a new layout's partition streams on it), no slot is held by a batch and a frame at once, and
    a batch beside a pass ends by that pass's end. Batches beside a pass and streams taken back."""
    board = run["board"]
    for f in run["frames"]:
        assert f.outcome == "on_time" and f.end <= f.origin + f.pipeline.due_s + EPS, (f.key, f.outcome, f.reason)
    items = [*run["frames"], *run["images"]]
    assert all(run["ended"][id(x)] == 1 for x in items), [x.key for x in items if run["ended"][id(x)] != 1]
    for track, slices in stream_slices(board).items():
        slices.sort()
        for (_, end, a), (start, _, b) in pairwise(slices):
            assert start >= end - EPS, (track, a, b)
    for _, engine in board.every():
        assert not slot_overlaps(engine)
    beside = [(job.start, job.end, end) for job, end in run["batches"] if end is not None]
    assert all(be <= end + EPS for _, be, end in beside), [b for b in beside if b[1] > b[2] + EPS]
    return len(beside), taken_back(board)


@settings(max_examples=10, deadline=None)
@given(st.integers(0, 2**31 - 1))
def test_the_daemons_dnn_on_a_spare_stream_misses_nothing_and_gives_it_back(seed):
    run = daemon_episode(seed)
    beside, back = check_daemon_episode(run)
    board = run["board"]
    note(f"{board.platform.name}: relayouts {board.relayouts}, beside a pass {beside}, taken back {back}")


def test_the_daemons_dnn_runs_beside_passes_and_a_later_layout_takes_the_stream_back(fresh_seed):
    """The mechanism is used on the daemon's path: among generated episodes some DNN batches run
    on a spare stream beside passes, and some later registration re-partitions the board onto
    that stream (its registration returns), with the claims of ``check_daemon_episode`` held."""
    rng = random.Random(fresh_seed)
    beside = back = 0
    for _ in range(60):
        run = daemon_episode(rng.randrange(2**31))
        b, t = check_daemon_episode(run)
        beside, back = beside + b, back + t
        if beside and back:
            break
    assert beside and back, (fresh_seed, beside, back)


@settings(max_examples=3, deadline=None)
@given(st.integers(0, 2**31 - 1))
def test_the_daemons_batches_beside_a_pass_end_by_its_end_with_their_register_traffic(seed):
    """As on the bench's path: with every batch over its cycle estimate by the board's *X*
    (``TrafficBoard``), a batch beside a pass still ends by the pass's end (the daemon's partitions
    size it with the board's *X*, not their view's). Generated episodes until some batches ran
    beside a pass (or 30 episodes), each under ``check_daemon_episode``."""
    rng = random.Random(seed)
    beside = 0
    for _ in range(30):
        beside += check_daemon_episode(daemon_episode(rng.randrange(2**31), TrafficBoard))[0]
        if beside >= 8:
            break
    note(f"batches beside a pass: {beside}")

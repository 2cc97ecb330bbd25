"""Several video streams at once: admission partitions pipelines over streams and slots
(runtime/sched/board/stream_plan.py), one engine per partition shares the clock and the configuration
port (runtime/sched/board/board.py, port_share.py). Admitted must still mean guaranteed, on random
workloads with 1..S streams, random offsets and jitter."""

from __future__ import annotations

import itertools
import random
from dataclasses import replace
from pathlib import Path

import pytest
from fpgashare.backends.model import ModelBackend
from fpgashare.backends.slot_view import SlotView, sub_platform
from fpgashare.catalogue.platform import load_platform
from fpgashare.catalogue.workload import Workload, load_workload, realtime_spec
from fpgashare.cli.bench import run_one
from fpgashare.cli.trace import trace_events
from fpgashare.errors import FpgashareError
from fpgashare.sched.board.port_share import PortArbiter
from fpgashare.sched.board.stream_plan import plan_streams, spread_plan
from fpgashare.sched.board.workload_run import run_board
from fpgashare.sched.policies.edf import EdfPolicy
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from benchmarks.workload_gen import random_workload


def _run(workload: Workload, streams: int, planner=plan_streams):
    plan = planner(workload, streams)
    engine, summary = run_board(workload, ModelBackend(workload.platform), plan, EdfPolicy)
    return plan, engine, summary


def _overlaps(spans: list[tuple[float, float]]) -> bool:
    spans = sorted(spans)
    return any(b[0] < a[1] - 1e-12 for a, b in itertools.pairwise(spans))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10**9))
def test_no_admitted_pipeline_misses_on_random_workloads_over_random_stream_counts(seed):
    workload = random_workload(seed, max_s=4.0)
    # Drawn apart from the workload's own generator (same seed: the first draws would correlate).
    streams = random.Random(seed ^ 0x5EED).randint(1, workload.platform.streams)
    plan, engine, summary = _run(workload, streams)
    label = f"seed {seed} on {workload.platform.name}, {streams} stream(s)"
    for name, p in summary["pipelines"].items():
        assert p["on_time"] == p["submitted"], f"{label}: admitted {name} missed: {p}"
    assert all(f.outcome is not None for f in engine.frames)
    # Partitions are disjoint, one per stream, and no more streams than asked for.
    slots = [s for part in plan.partitions for s in part.slots]
    assert len(slots) == len(set(slots)) and len(plan.partitions) <= streams
    # One configuration port: loads never overlap, whichever partition asked.
    assert not _overlaps([(e.start, e.end) for e in engine.trace if e.track == "port"])
    # A quiet partition (every module pinned) loads nothing after the first release.
    for part, e in zip(plan.partitions, engine.parts, strict=True):
        if part.quiet:
            assert all(ev.start < engine.t0 for ev in e.trace if ev.track == "port"), label


def _plan_facts(plan) -> tuple:
    return ([(q.stream, q.slots, [p.name for p in q.pipelines], q.dnn, q.verdict) for q in plan.partitions],
            plan.rejected)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10**9))
def test_a_plan_made_after_others_is_the_plan_made_from_nothing(seed):
    """The planner remembers verdicts across calls (a daemon re-plans the same admitted set at
    each registration): what it remembers never changes a plan. Generated workloads are planned
    once from an empty memory, then again after the memory holds every prefix of their
    registrations and other workloads' verdicts, with and without known phases."""
    from fpgashare.sched.board import partition_check

    workload = random_workload(seed, max_s=4.0)
    streams = random.Random(seed ^ 0x5EED).randint(1, workload.platform.streams)
    for phased in (False, True):
        partition_check._MEMO.clear()
        fresh = _plan_facts(plan_streams(workload, streams, phased=phased))
        plan_streams(random_workload(seed + 1, max_s=4.0), streams, phased=phased)
        for k in range(len(workload.pipelines)):
            plan_streams(replace(workload, pipelines=workload.pipelines[:k]), streams, phased=not phased)
            plan_streams(replace(workload, pipelines=workload.pipelines[:k]), streams, phased=phased)
        assert _plan_facts(plan_streams(workload, streams, phased=phased)) == fresh, f"seed {seed}"


def test_a_plan_on_one_thread_never_sees_another_threads_phases(monkeypatch):
    """A daemon plans on worker threads, and a trial past its time limit still runs while the next
    one starts: two plans made at once on two threads, one with known phases and one without,
    each use their own test throughout. The phased plan is stopped inside its first analysis
    until the other plan has run, on its own thread; every analysis either makes is recorded."""
    import threading

    from fpgashare.sched.board import partition_check

    workload = _two_cameras()
    real = partition_check.analyse
    seen: dict[str, list[bool]] = {"phased": [], "plain": []}
    inside, done = threading.Event(), threading.Event()

    def analyse(*args, **kw):
        name = threading.current_thread().name
        seen.setdefault(name, []).append(kw.get("phased", False))
        if name == "phased" and not inside.is_set():
            inside.set()
            assert done.wait(60), "the plain plan never ran"
        return real(*args, **kw)

    monkeypatch.setattr(partition_check, "analyse", analyse)
    partition_check._MEMO.clear()
    plans: dict[str, object] = {}

    def plan(phased: bool) -> None:
        plans[threading.current_thread().name] = _plan_facts(spread_plan(workload, 2, phased=phased))
        done.set() if not phased else None

    first = threading.Thread(target=plan, args=(True,), name="phased")
    first.start()
    assert inside.wait(60)
    second = threading.Thread(target=plan, args=(False,), name="plain")
    second.start()
    second.join(60)
    first.join(60)
    assert seen["plain"] and not any(seen["plain"]), seen
    assert len(seen["phased"]) > 1 and all(seen["phased"]), seen     # the rest of it after the other ran
    for name, phased in (("plain", False), ("phased", True)):
        partition_check._MEMO.clear()
        assert plans[name] == _plan_facts(spread_plan(workload, 2, phased=phased)), name


def _two_cameras() -> Workload:
    """Two short chains, each filling most of a stream: one stream carries only one of them."""
    platform = load_platform("zcu104")
    a = realtime_spec("left", ["gauss3x3", "sobel_mag"], 0.016, 0.016, [1080, 1920], platform)
    b = realtime_spec("right", ["median3x3", "threshold"], 0.016, 0.016, [1080, 1920], platform)
    return Workload(Path("two_cameras.toml"), platform, 3, 1.0, (a, replace(b, offset_s=1e-3)))


def test_two_cameras_stream_at_once_each_in_its_time_alone():
    workload = _two_cameras()
    assert sum(p.exec_s / p.period_s for p in workload.pipelines) > 1.0     # one stream cannot carry both
    one = plan_streams(workload, 1)
    assert [p.name for p in one.admitted] == ["left"]
    plan, engine, summary = _run(workload, 2)
    assert [p.name for p in plan.admitted] == ["left", "right"] and len(plan.partitions) == 2
    assert all(p["on_time"] == p["submitted"] > 0 for p in summary["pipelines"].values())
    spans = {s: [(e.start, e.end) for e in engine.trace if e.track == f"stream {s}"] for s in (0, 1)}
    assert any(a0 < b1 and b0 < a1 for a0, a1 in spans[0] for b0, b1 in spans[1]), "the streams never overlapped"
    names = [e["args"]["name"] for e in trace_events(engine.trace)["traceEvents"] if e["name"] == "thread_name"]
    assert names[:3] == ["stream 0", "stream 1", "port"]            # Perfetto: the streams first
    for p, e in zip(plan.partitions, engine.parts, strict=True):    # each frame takes its time alone
        alone = p.pipelines[0].exec_s
        assert all(abs((f.end - f.start) - alone) < 1e-9 for f in e.frames if f.end is not None)


def test_the_bench_runs_edf_on_streams_and_baselines_on_one():
    workload = _two_cameras()
    _, edf = run_one(workload, "edf", "model", check_rejected=False)
    _, rr = run_one(workload, "rr-bundle", "model", check_rejected=False)
    assert len(edf["totals"]["streams"]) == 2 and not edf["rejected"]
    assert all(p["on_time"] == p["submitted"] for p in edf["pipelines"].values())
    assert "streams" not in rr["totals"]       # rr-bundle is Nguyen & Hoe's: one pipeline on the fabric at a time
    assert sum(p["late"] for p in rr["pipelines"].values()) > 0


def test_best_effort_dnn_gets_a_stream_and_the_slots_left():
    workload = load_workload("dnn_backfill_zcu104")
    plan, _, summary = _run(workload, workload.platform.streams)
    dnn = [p for p in plan.partitions if p.dnn]
    assert len(dnn) == 1 and not dnn[0].pipelines            # a partition of its own
    assert summary["totals"]["dnn_images"] > 0
    assert all(p["on_time"] == p["submitted"] for p in summary["pipelines"].values())


def test_a_pipeline_no_partition_can_take_is_refused_with_a_reason():
    platform = load_platform("pynq-z2")
    big = [realtime_spec(f"cam{i}", ["gauss3x3", "sobel_mag"], 1 / 30, 1 / 30, [1080, 1920], platform)
           for i in range(3)]
    plan = plan_streams(Workload(Path("three.toml"), platform, 1, 1.0, tuple(big)), platform.streams)
    # The first takes both slots (its chain needs two); the others can share neither its stream
    # (two 20.8 ms frames in 33.3 ms) nor a slot for a stream of their own.
    assert [p.name for p in plan.admitted] == ["cam0"] and len(plan.partitions) == 1
    assert [r["name"] for r in plan.rejected] == ["cam1", "cam2"]
    assert all("busy 1.248 of the time" in r["reason"] and "1 of 2 stream(s) taken" in r["reason"]
               for r in plan.rejected)


def test_a_slot_view_speaks_board_slots_and_refuses_a_repeated_slot():
    platform = load_platform("zcu104")
    board = ModelBackend(platform)
    view = SlotView(board, (2, 3))
    view.load(1, "threshold")
    assert board.resident(3) == "threshold" and view.resident(1) == "threshold" and board.resident(1) is None
    assert [s.name for s in view.platform.slots] == [platform.slots[2].name, platform.slots[3].name]
    with pytest.raises(FpgashareError, match="distinct slots"):
        sub_platform(platform, (1, 1))


def test_streams_that_together_move_more_than_the_ddr_carries_are_refused_naming_it():
    # With the shipped manifests' figures no set of streams reaches the DDR budget (README): the
    # mechanism is checked on a board whose DDR peaks at 600 MB/s (300 MB/s the fabric's share).
    platform = replace(load_platform("pynq-z2"), ddr_bytes_per_s=600e6)
    cams = [replace(realtime_spec(f"cam{i}", ["rgb2gray"], 1 / 30, 1 / 30, [1080, 1920], platform), offset_s=i * 1e-3)
            for i in range(2)]
    assert all(c.ddr_bytes_per_frame / c.period_s == pytest.approx(248.8e6, rel=1e-3) for c in cams)
    plan = plan_streams(Workload(Path("ddr.toml"), platform, 1, 1.0, tuple(cams)), 2)
    assert [p.name for p in plan.admitted] == ["cam0"]
    reason = plan.rejected[0]["reason"]
    assert plan.rejected[0]["name"] == "cam1" and "498 MB/s" in reason and "300 MB/s" in reason, reason


class _Part:
    """A stand-in partition engine for the arbiter: a port queue and a kick that starts its head."""

    def __init__(self, arbiter: PortArbiter, name: str, log: list) -> None:
        from fpgashare.sched.core.port import ConfigPort

        self.name, self.log, self.now = name, log, 0.0
        self.slots = type("S", (), {"port": ConfigPort()})()
        self.port = self            # its own port driver: kick, longest_load_s, arbiter
        arbiter.add(self)
        self.arbiter = arbiter

    def ask(self, stamp: float) -> None:
        from fpgashare.sched.core.port import LoadRequest

        self.slots.port.queue.append(LoadRequest(0, "m", stamp=stamp))

    def _advance(self, t: float) -> None:
        pass

    def kick(self) -> None:
        if self.arbiter.may_start(self):
            request = self.slots.port.queue.popleft()
            self.slots.port.current = request
            self.log.append((self.name, request.stamp))
            self.arbiter.started(self, 1.0)

    def longest_load_s(self) -> float:
        return 1.0

    def done(self) -> None:
        self.slots.port.current = None
        self.arbiter.finished(self)


@pytest.mark.parametrize("order", ["round-robin", "fifo"])
def test_the_port_arbiter_serves_every_partition_before_any_twice_or_by_time_stamp(order):
    log: list = []
    arbiter = PortArbiter(order)
    a, b, c = (_Part(arbiter, n, log) for n in "abc")
    a.ask(3.0)
    b.ask(1.0)
    c.ask(2.0)
    for _ in range(3):
        arbiter.grant()
        owner = arbiter.owner
        if owner is a:              # a asks again at once: it must not cut in before the others
            a.ask(0.5 if order == "round-robin" else 4.0)
        owner.done()
    arbiter.grant()
    served = [name for name, _ in log]
    if order == "round-robin":
        assert served == ["a", "b", "c", "a"]          # a's second load waits for b and c
    else:
        assert served == ["b", "c", "a", "a"] and [s for _, s in log] == [1.0, 2.0, 3.0, 4.0]
    assert not arbiter.free_for(a) and arbiter.owner is a


def test_fred_binds_pipelines_to_partitions_and_serves_each_in_release_order():
    workload = load_workload("multicam_zcu104")
    _, result = run_one(workload, "fred", "model", check_rejected=False)
    parts = result["totals"]["streams"]
    assert len(parts) == 2 and sorted(s for p in parts for s in p["slots"]) == [0, 1, 2, 3]
    assert not result["rejected"]                     # a baseline admits everything
    engine, _ = run_one(workload, "fred", "model", check_rejected=False)
    assert all(f.outcome is not None for f in engine.frames)
    for e in engine.parts:                            # FIFO per partition: starts in release order
        started = sorted((f for f in e.frames if f.start is not None), key=lambda f: f.start)
        assert [f.release for f in started] == sorted(f.release for f in started)
    assert not _overlaps([(ev.start, ev.end) for ev in engine.trace if ev.track == "port"])


_CHAINS = (["gauss3x3", "sobel_mag"], ["threshold", "downscale2x"], ["median3x3", "erode3x3"], ["dilate3x3", "fast9"])


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@example([0.04, 0.04, 0.05, 0.05], [0.0, 0.08, 0.12, 0.19], 1e-3, 5)      # admitted whole: two loaders
@given(st.lists(st.floats(0.03, 0.08), min_size=4, max_size=4), st.lists(st.floats(0.0, 1.0), min_size=4, max_size=4),
       st.floats(0.0, 2e-3), st.integers(0, 1000))
def test_partitions_that_both_load_through_the_one_port_keep_every_deadline(periods, phases, jitter, seed):
    """Four two-module chains over eight modules on the ZCU104's four slots: two partitions of two
    slots, each swapping modules, so loads of one partition wait behind the other's."""
    platform = load_platform("zcu104")
    pipelines = tuple(replace(realtime_spec(f"p{i}", chain, T, T, [480, 640], platform, jitter_s=jitter),
                              offset_s=phase * T)
                      for i, (chain, T, phase) in enumerate(zip(_CHAINS, periods, phases, strict=True)))
    workload = Workload(Path("contended.toml"), platform, seed, 2.0, pipelines)
    plan, engine, summary = _run(workload, 4, spread_plan)      # (plan_streams may prefer one stream)
    for name, p in summary["pipelines"].items():
        assert p["on_time"] == p["submitted"], f"{name} missed: {p} ({plan.partitions})"
    assert not _overlaps([(e.start, e.end) for e in engine.trace if e.track == "port"])
    if periods == [0.04, 0.04, 0.05, 0.05]:   # the example: all four, two loading partitions
        assert len(plan.admitted) == 4
        assert sum(not q.quiet for q in plan.partitions) == 2 and summary["totals"]["reconfigurations"] > 100


def test_a_loads_wait_at_the_port_counts_the_boards_longest_load():
    """Another partition's load may go into a larger slot: the wait is the board's longest load."""
    from fpgashare.sched.analysis.control_traffic import control_seconds
    from fpgashare.sched.analysis.schedulability import analyse, load_seconds

    base = load_platform("zcu104")
    board = replace(base, slots=(*base.slots[:3], replace(base.slots[3], frames=3 * base.slots[3].frames)))
    cam = realtime_spec("cam", ["threshold", "sobel_mag"], 0.05, 0.05, [240, 320], board)
    small = sub_platform(board, (0, 1))
    x = control_seconds(board)
    verdict = analyse([cam], small, port_share=2, board_load_s=load_seconds(board), control_s=x)
    assert load_seconds(board) == pytest.approx(3 * load_seconds(small), rel=1e-3)
    # Each load with its register traffic (runtime/sched/analysis/control_traffic.py).
    assert verdict.contract.load_s == pytest.approx(load_seconds(small) + x + load_seconds(board) + x)


def test_a_fault_in_one_partition_stays_there_and_every_frame_ends_once():
    """A slot that fails its load twice is quarantined and a frame that fails to start ends
    ``error``: the partition that owns them loses those frames (with the reason), the others run on
    time, the port is given back, and every frame ends in exactly one outcome."""
    from fpgashare.backends.faulty import FaultyBackend

    workload = load_workload("multicam_zcu104")
    board = FaultyBackend(workload.platform)
    board.arm("load_raises", 2)           # the first load (partition 0's pin) fails twice
    board.arm("frame_raises", 1)          # and the first frame to start fails
    plan = plan_streams(workload, workload.platform.streams)
    engine, _ = run_board(workload, board, plan, EdfPolicy)
    assert board.fired == {"load_raises": 2, "frame_raises": 1}
    assert all(f.outcome is not None for f in engine.frames)
    hit = engine.parts[0]
    assert hit.slots.quarantined == 1
    lost = [f for f in hit.frames if f.outcome != "on_time"]
    assert lost and all(f.outcome == "dropped" and "quarantined" in f.reason for f in lost)
    errors = [f for f in engine.frames if f.outcome == "error"]
    assert len(errors) == 1 and "injected" in errors[0].reason
    for e in engine.parts[1:]:            # the other partitions lose at most the frame that failed
        assert all(f.outcome == "on_time" or f in errors for f in e.frames)
    assert not _overlaps([(ev.start, ev.end) for ev in engine.trace if ev.track == "port"])

"""Admitted means guaranteed: edf's admission analysis on workloads the project was not tuned on.

The property test draws seeded random workloads (benchmarks/workload_gen.py: both platforms, 1-6
pipelines, random offsets and jitter, one hyperperiod or 10 s) and checks that no frame of an
admitted pipeline is ever late or dropped. The rest pin down the cases that broke the trial-based
admission: a release just before the others (blocking), a chain that needs two copies of one
module (livelock), best-effort work on a board without a tile (crash)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from fpgashare.backends.model import ModelBackend
from fpgashare.catalogue.platform import load_platform
from fpgashare.catalogue.workload import PipelineSpec, Workload, realtime_spec
from fpgashare.cli.bench import run_one
from fpgashare.sched.analysis.admission import admit
from fpgashare.sched.analysis.control_traffic import control_seconds
from fpgashare.sched.analysis.processor_demand import demand_check
from fpgashare.sched.analysis.schedulability import analyse
from fpgashare.sched.policies.edf import EdfPolicy
from fpgashare.sched.sources.periodic import run_workload
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchmarks.workload_gen import random_workload


def run_admitted(workload: Workload):
    admission = admit(workload)
    kept = {p.name for p in admission.admitted}
    admitted = replace(workload, pipelines=tuple(p for p in workload.pipelines if not p.realtime or p.name in kept))
    engine, summary = run_workload(admitted, ModelBackend(workload.platform), EdfPolicy(), contract=admission.contract)
    return admission, engine, summary


def assert_no_miss(summary: dict, label: str) -> None:
    for name, p in summary["pipelines"].items():
        assert p["on_time"] == p["submitted"], f"{label}: admitted {name} missed: {p}"


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10**9))
def test_no_admitted_pipeline_ever_misses_on_random_workloads(seed):
    workload = random_workload(seed, max_s=10.0)
    _, engine, summary = run_admitted(workload)
    assert_no_miss(summary, f"seed {seed} on {workload.platform.name}")
    assert all(f.outcome is not None for f in engine.frames)


def _pair(offset_p0_s: float) -> Workload:
    """The issue's smallest unsound case (PYNQ-Z2, no jitter): a small frame every 88.2 ms beside
    a 1080p one every 29 ms with a 26.1 ms deadline."""
    platform = load_platform("pynq-z2")
    p0 = realtime_spec("p0", ["threshold", "downscale2x"], 0.0882, 0.0882, [120, 160], platform)
    p1 = realtime_spec("p1", ["gauss3x3", "sobel_mag"], 0.029, 0.0261, [1080, 1920], platform)
    pipelines = (replace(p0, offset_s=offset_p0_s), replace(p1, offset_s=0.1e-3))
    return Workload(Path("pair.toml"), platform, 1, 3.0, pipelines)


@pytest.mark.parametrize("offset_s", [0.0, 0.1e-3, 0.0004])
def test_a_frame_released_just_before_the_others_cannot_break_an_admitted_set(offset_s):
    admission, _, summary = run_admitted(_pair(offset_s))
    assert_no_miss(summary, f"offset {offset_s}")
    if len(admission.admitted) < 2:     # refused: the reason names the window that does not fit
        assert "window" in admission.rejected[0]["reason"] or "busy" in admission.rejected[0]["reason"]


def test_a_chain_that_needs_two_copies_of_a_module_is_admitted_and_served():
    """laplacian3x3 and gauss3x3 are both conv3x3: the chain needs two copies. It fits the empty
    PYNQ-Z2 alone, so it is admitted and every frame is on time (before, warm-up loaded one copy
    and the drop rule dropped every frame before the second copy could load)."""
    platform = load_platform("pynq-z2")
    spec = realtime_spec("twice", ["laplacian3x3", "gauss3x3"], 0.040, 0.0221, [1080, 1920], platform)
    workload = Workload(Path("twice.toml"), platform, 3, 2.0, (spec,))
    admission, _, summary = run_admitted(workload)
    assert [p.name for p in admission.admitted] == ["twice"]
    assert sorted(admission.contract.pinned.values()) == ["conv3x3", "conv3x3"]
    assert summary["pipelines"]["twice"]["on_time"] == summary["pipelines"]["twice"]["submitted"] == 50
    # Without admission (no pins) the scheduler still never drops a frame it could serve.
    _, anyway = run_workload(workload, ModelBackend(platform), EdfPolicy())
    assert anyway["pipelines"]["twice"]["on_time"] >= 49


@settings(max_examples=20, deadline=None)
@given(st.sampled_from(["pynq-z2", "zcu104"]), st.integers(0, 10**6))
def test_a_pipeline_that_fits_the_empty_board_alone_is_admitted_and_served(platform_name, seed):
    """Alone on an empty board, a chain whose frame plus its jitter fits its period and whose run
    time fits its deadline, each with the register traffic the analysis counts (its own X and X of
    blocking), is admitted (its modules are pinned) and never misses."""
    import random

    rng = random.Random(seed)
    platform = load_platform(platform_name)
    chain = rng.sample(["gauss3x3", "sobel_mag", "threshold", "downscale2x", "box3x3"], rng.randint(1, 2))
    rows, cols = rng.choice([(120, 160), (480, 640), (720, 1280), (1080, 1920)])
    probe = realtime_spec("p", chain, 1.0, 1.0, [rows, cols], platform)
    jitter = rng.uniform(0, 2e-3)
    run = probe.exec_s + 2 * control_seconds(platform)
    period = run + jitter + rng.uniform(0, 0.02)
    deadline = rng.uniform(run, period)
    spec = realtime_spec("p", chain, period, deadline, [rows, cols], platform, jitter_s=jitter)
    workload = Workload(Path("alone.toml"), platform, seed, min(1.0, 40 * period), (spec,))
    admission, _, summary = run_admitted(workload)
    assert [p.name for p in admission.admitted] == ["p"], admission.rejected
    assert_no_miss(summary, "alone")


@pytest.mark.parametrize("model", ["digits_cnn", "edge_cnn"])
def test_best_effort_work_on_a_board_without_a_tile_gets_a_reason_not_an_error(model, tmp_path):
    from fpgashare.catalogue.platform import manifest_at_pixels_per_clock

    pynq = load_platform("pynq-z2")     # its library without dnn_tile
    platform = load_platform(manifest_at_pixels_per_clock(
        pynq.path, 1, tmp_path / "no_tile.toml", [m for m in pynq.modules if m != "dnn_tile"]))
    spec = realtime_spec("edges", ["gauss3x3", "sobel_mag"], 0.0333, 0.0333, [480, 640], platform)
    workload = Workload(Path("no_tile.toml"), platform, 1, 0.5, (spec, PipelineSpec("dnn", "besteffort", model=model)))
    _, result = run_one(workload, "edf", "model")
    assert result["totals"]["dnn_images"] == 0
    assert "no slot that fits dnn_tile" in result["bound"]["refused"]
    assert_no_miss(result, "no tile")


def test_any_prefix_of_a_run_releases_exactly_as_the_run():
    """Jitter is drawn per (pipeline, frame index) from the seed, offsets shift the first release:
    a shorter run releases the same frames at the same times."""
    from fpgashare.sched.sources.periodic import workload_engine

    workload = random_workload(7, max_s=2.0)
    releases = []
    for duration in (workload.duration_s / 2, workload.duration_s):
        engine = workload_engine(replace(workload, duration_s=duration), ModelBackend(workload.platform), EdfPolicy())
        engine.source.schedule()
        releases.append({f.key: f.release for f in engine.frames})
    short, full = releases
    assert short and all(full[k] == t for k, t in short.items())
    for p in workload.pipelines:
        if p.realtime:
            first = min(t for k, t in full.items() if k.startswith(f"{p.name}/"))
            assert p.offset_s <= first - engine.t0 <= p.offset_s + p.jitter_s


def test_the_demand_check_finds_the_window_a_blocking_job_breaks():
    """Two tasks that fit preemptively (U = 0.75) but not non-preemptively: a 6 ms job released
    just before a task with a 5 ms deadline makes it miss; the blocking term catches it."""
    run_s, period, deadline, jitter = (np.array(v) for v in ([0.002, 0.006], [0.005, 0.020], [0.005, 0.020], [0, 0]))
    check = demand_check(run_s, period, deadline, jitter, 0.0)
    assert not check.ok and check.worst_t == pytest.approx(0.005)
    fine = demand_check(np.array([0.002, 0.002]), period, deadline, jitter, 0.0)
    assert fine.ok and fine.slack_s == pytest.approx(0.001)


def test_admission_of_sixteen_pipelines_takes_milliseconds():
    """The analysis is arithmetic, not a trial: the budget is 10 ms (benchmarks/scheduler_cost.py
    prints the time); here only that a 16-pipeline set is decided, with a reason if refused."""
    platform = load_platform("zcu104")
    specs = [realtime_spec(f"p{i}", ["threshold"], 0.016 + 0.001 * i, 0.016, [120, 160], platform) for i in range(16)]
    verdict = analyse(specs, platform)
    assert verdict.ok, verdict.reason
    assert verdict.utilisation < 1.0


def test_a_pipeline_with_new_pins_is_ready_once_they_are_in_and_then_on_time():
    """Online, a pipeline admitted with new pins joins through a mode change: it is ready (its
    registration returns) once both pinned copies are loaded, so its first frame needs no load the
    analysis did not count; frames sent before then wait for the switch, their deadlines counting
    from their arrival."""
    from fpgashare.sched.board.board import Board
    from fpgashare.sched.core.clock import VirtualClock

    platform = load_platform("pynq-z2")
    engine = Board.whole(platform, ModelBackend(platform), EdfPolicy, VirtualClock())
    engine.begin()
    spec = realtime_spec("twice", ["laplacian3x3", "gauss3x3"], 0.040, 0.0221, [1080, 1920], platform)
    ready: list[float] = []
    engine.add_pipeline(spec, on_ready=lambda: ready.append(engine.clock.now()))
    assert not ready and [p.name for p in engine.parts[0].members.changes.joining()] == ["twice"]
    while not ready and (due := engine.next_event_s()) is not None:
        engine.clock.wait_until(due)
        engine.advance_to(due)
    assert ready and ready[0] >= 2 * engine.parts[0].port.load_seconds(0) - 1e-9      # both copies loaded first
    assert sorted(engine.contract.pinned.values()) == ["conv3x3", "conv3x3"]
    frames = []
    for k in range(5):
        t = ready[0] + k * spec.period_s
        engine.advance_to(t)
        engine.clock.wait_until(t)
        frames.append(engine.submit("twice", np.zeros((1080, 1920), np.uint8)))
        engine.advance_to(t)
    engine.advance_to(ready[0] + 1.0)
    assert [f.outcome for f in frames] == ["on_time"] * 5


def test_frames_sent_before_the_switch_count_from_their_arrival():
    """A frame sent while its pipeline's mode change is under way waits for the switch; its
    deadline as the app sees it still counts from its arrival (nothing shifts it)."""
    from fpgashare.sched.board.board import Board
    from fpgashare.sched.core.clock import VirtualClock

    platform = load_platform("pynq-z2")
    engine = Board.whole(platform, ModelBackend(platform), EdfPolicy, VirtualClock())
    engine.begin()
    spec = realtime_spec("twice", ["laplacian3x3", "gauss3x3"], 0.040, 0.0221, [1080, 1920], platform)
    engine.add_pipeline(spec)
    early = engine.submit("twice", np.zeros((1080, 1920), np.uint8))
    engine.advance_to(1.0)
    assert early.outcome in ("on_time", "late", "dropped")
    assert early.due == pytest.approx(spec.due_s)                     # arrival 0 + its deadline
    assert early.start is None or early.start >= 2 * engine.parts[0].port.load_seconds(0) - 1e-9


def _exact_violation(cost, period, dl, jit, until) -> bool:
    """Whether the demand test fails at some step point up to ``until``, in exact rationals."""
    from fractions import Fraction

    cost, period, dl, jit = ([Fraction(float(x)) for x in a] for a in (cost, period, dl, jit))
    n = len(cost)
    points = set()
    for i in range(n):
        t, k = dl[i], 0
        while t <= until:
            points.add(t)
            k += 1
            t = dl[i] - jit[i] + k * period[i]
    for t in points:
        demand = sum((((t - dl[j] + jit[j]) // period[j]) + 1) * cost[j] for j in range(n) if t >= dl[j])
        block = max([cost[j] for j in range(n) if dl[j] > t], default=Fraction(0))
        if t - demand - block < 0:
            return True
    return False


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(20, 400), st.floats(0.3, 1.0), st.floats(0.3, 0.99), st.floats(0.0, 0.2)),
                min_size=1, max_size=3))
def test_the_demand_check_never_misses_a_violation_exact_arithmetic_finds(tasks):
    """Floating point must not drop a frame at a step point (a release exactly at D - J + k*T once
    slipped through: seed 133178 of the streams property test)."""
    period = np.array([t[0] / 10_000 for t in tasks])               # whole tenths of a ms
    dl = np.array([max(1e-4, t[1] * p) for t, p in zip(tasks, period, strict=True)])
    cost = np.array([t[2] * d for t, d in zip(tasks, dl, strict=True)])       # tight: near the deadline
    jit = np.array([t[3] * p for t, p in zip(tasks, period, strict=True)])
    check = demand_check(cost, period, dl, jit, 0.0)
    if _exact_violation(cost, period, dl, jit, until=float(dl.max() + 4 * period.max())):
        assert not check.ok, (cost, period, dl, jit)


def test_a_frame_released_at_a_step_point_is_counted():
    """The smallest case the property test found: one 720p chain whose jitter lets two frames come
    8.76 ms apart while each streams 9.24 ms: the second misses, so admission must refuse it."""
    workload = random_workload(133178, max_s=4.0)
    admission = admit(workload)
    assert "p0" in {r["name"] for r in admission.rejected}
    # Both frames (9.24 ms each and their register traffic X), and X of blocking.
    p0 = next(p for p in workload.pipelines if p.name == "p0")
    x = control_seconds(workload.platform)
    need = f"{(2 * (p0.exec_s + x) + x) * 1e3:.2f} ms"
    assert need in next(r["reason"] for r in admission.rejected if r["name"] == "p0")


def test_every_frame_and_load_is_counted_with_its_register_traffic():
    """A frame's job is its stream time plus the register traffic X it and the operations beside it
    may cost (runtime/sched/analysis/control_traffic.py), and X more of blocking: one pinned chain whose
    deadline leaves 1.5 X beyond its stream time is refused, 2.5 X admitted; the contract's load is
    L + X and the DNN's budget is the slack less X."""
    platform = load_platform("zcu104")
    x = control_seconds(platform)
    probe = realtime_spec("cam", ["threshold"], 1.0, 1.0, [480, 640], platform)
    for margin, ok in ((1.5, False), (2.5, True)):
        d = probe.exec_s + margin * x
        spec = realtime_spec("cam", ["threshold"], d, d, [480, 640], platform)
        verdict = analyse([spec], platform)
        assert verdict.ok == ok, (margin, verdict.reason)
    assert verdict.contract.load_s == pytest.approx(platform.slot_load_seconds(0) + x)
    # The slack left is 0.5 X (too little for an idle load); a DNN batch would overrun it by up to X.
    assert verdict.slack_s == pytest.approx(0.5 * x) and not verdict.contract.idle_loads
    assert verdict.contract.dnn_block_s == 0.0

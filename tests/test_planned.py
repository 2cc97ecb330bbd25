"""The ``planned`` policy runs a cyclic CP-SAT table (runtime/sched/limits/cyclic.py,
runtime/sched/policies/planned.py; docs/planned.md): generated workloads with fresh seeds, their
declared jitter drawn at random each run, over ten hyperperiods on the bench engine."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest
from fpgashare.backends import make_backend
from fpgashare.backends.model import ModelBackend
from fpgashare.catalogue.workload import realtime_spec
from fpgashare.cli.bench import run_one
from fpgashare.errors import FpgashareError
from fpgashare.sched.analysis.control_traffic import control_seconds
from fpgashare.sched.limits.cyclic import PlanError, cyclic_plan, plan_jobs, table_to_run
from fpgashare.sched.limits.cyclic_check import plan_violations
from fpgashare.sched.limits.jobs import TICK_S
from fpgashare.sched.policies.planned import PlannedPolicy
from fpgashare.sched.sources.periodic import run_workload
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from benchmarks.limit_gap import small_workload

SEEDS = st.integers(0, 2**31 - 1)
FEW = settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                     HealthCheck.filter_too_much])
HYPERPERIODS = 10


def jittery(seed: int):
    """A small generated workload whose pipelines declare a random jitter (up to half their slack)
    and whose releases draw it afresh (another seed)."""
    workload = small_workload(seed, max_pipelines=3)
    rng = random.Random(seed)
    pipelines = tuple(replace(p, jitter_s=round(rng.uniform(0.0, 0.5) * (p.deadline_s - p.exec_s), 6))
                      if p.realtime else p for p in workload.pipelines)
    return replace(workload, pipelines=pipelines, seed=rng.randrange(2**31))


@FEW
@given(SEEDS, st.booleans())
def test_admitted_pipelines_never_miss_and_each_hyperperiod_runs_the_tables_loads(seed, every_stream):
    workload = jittery(seed)
    streams = workload.platform.streams if every_stream else 1
    plan, _ = table_to_run(workload, streams=streams)
    policy = PlannedPolicy(plan)
    assume(plan is not None)
    assert plan_violations(plan) == []
    kept = replace(workload, duration_s=HYPERPERIODS * plan.hyperperiod_s,
                   pipelines=tuple(p for p in workload.pipelines if not p.realtime or p.name in plan.admitted))
    board = make_backend("model", kept.platform, streams=streams if streams > 1 else None)
    engine, summary = run_workload(kept, board, policy, video_streams=streams)
    for p in kept.pipelines:
        if p.realtime:
            released = sum(1 for k in range(10**6) if p.offset_s + k * p.period_s < kept.duration_s)
            figures = summary["pipelines"][p.name]
            assert figures["submitted"] == released
            assert figures["on_time"] == released, (p.name, figures, [f.reason for f in engine.frames if f.reason])
    assert all(f.outcome is not None for f in engine.frames)
    assert sum(sum(v[k] for k in ("on_time", "late", "dropped", "errors"))
               for v in summary["pipelines"].values()) == len(engine.frames)
    # Every pass started at its planned instant (within the margin) and ran no longer than planned.
    lengths = {j.key: j.length for j in plan.jobs}
    for frame in engine.frames:
        j, n = plan.place(frame.pipeline.name, frame.index)
        for step, (start, end) in enumerate(frame.streamed):
            at = engine.t0 + (n * plan.hyperperiod + plan.starts[frame.pipeline.name, j, step]) * TICK_S
            assert at - 1e-12 <= start <= at + plan.late_s
            assert end - start <= lengths[frame.pipeline.name, j, step] * TICK_S
    # The table's loads every hyperperiod. The first and the last skip those whose frames never
    # come; the second may skip a load whose module its slot still holds because the first skipped
    # the wrap load before it (a slot's contents follow the table from the second on).
    port = [e for e in engine.trace if e.track == "port" and e.args["reason"] == "plan"]
    for n in range(HYPERPERIODS):
        lo = engine.t0 + n * plan.hyperperiod_s
        made = sum(lo - 1e-12 <= e.start < lo + plan.hyperperiod_s - 1e-12 for e in port)
        assert made == len(plan.loads) if 1 < n < HYPERPERIODS - 1 else made <= len(plan.loads)


@FEW
@given(SEEDS)
def test_a_plans_wrap_is_sound_and_a_broken_wrap_is_caught(seed):
    plan = cyclic_plan(jittery(seed), time_limit_s=10.0)      # one stream: a pass on another's instant overlaps
    assume(plan is not None and plan.admitted)
    assert plan_violations(plan) == []
    hyper = plan.hyperperiod
    # Slot contents across H: starting a hyperperiod with another module breaks the first use.
    slot, module = next(iter(plan.initial.items()))
    other = "not-" + module
    assert any(f"slot {slot}" in v for v in plan_violations(replace(plan, initial={**plan.initial, slot: other})))
    # The stream across H: a pass moved by one hyperperiod lands on itself folded, so moving one
    # pass onto another's instant plus H is a modular overlap the checker names.
    a, b = plan.jobs[0], plan.jobs[-1]
    if a.key != b.key:
        moved = {**plan.starts, b.key: plan.starts[a.key] + hyper}
        relaxed = [replace(j, release=0, due=10 * hyper) if j.key == b.key else j for j in plan.jobs]
        broken = replace(plan, starts=moved, jobs=tuple(relaxed))
        assert any(v.startswith("stream") for v in plan_violations(broken))


def test_bad_input_names_the_problem(pynq_z2, zcu104):
    spec = realtime_spec("cam", ["conv3x3"], 0.01, 0.01, [120, 160], pynq_z2)
    workload = replace(small_workload(1), platform=pynq_z2, pipelines=(replace(spec, period_s=0.0),))
    with pytest.raises(PlanError, match=r"cam's period is 0\.0 s"):
        plan_jobs(workload)
    tm = realtime_spec("tm", ["template_match"], 0.01, 0.01, [120, 160], zcu104)
    with pytest.raises(FpgashareError, match="no module 'template_match'"):
        cyclic_plan(replace(workload, pipelines=(tm,)))


def test_without_a_table_planned_is_edf_and_says_so(pynq_z2):
    spec = realtime_spec("cam", ["conv3x3"], 0.01000005, 0.01, [120, 160], pynq_z2)
    workload = replace(small_workload(2), platform=pynq_z2, pipelines=(spec,), duration_s=0.05)
    _, planned = run_one(workload, "planned", "model", check_rejected=False)
    _, edf = run_one(workload, "edf", "model", check_rejected=False)
    assert planned["plan"] == "none" and "whole number" in planned["plan_reason"]
    assert planned["admitted"] == edf["admitted"]
    assert planned["pipelines"] == edf["pipelines"]
    # A table that serves fewer pipelines than edf's admission guarantees is not used either.
    whole = replace(workload, pipelines=(replace(spec, period_s=0.01),))
    assert table_to_run(whole)[0] is not None
    plan, reason = table_to_run(whole, edf_admits=2)
    assert plan is None and "edf's admission 2" in reason


def test_the_daemon_refuses_planned_and_says_it_runs_edf(tmp_path, zcu104):
    from fpgashare.backends.model import ModelBackend
    from fpgashare.daemon.server import Daemon
    from fpgashare.sched.core.clock import VirtualClock

    with pytest.raises(FpgashareError, match="the daemon, whose pipelines come and go, runs edf"):
        Daemon(ModelBackend(zcu104), tmp_path / "p.sock", clock=VirtualClock(), scheduler="planned")


@settings(max_examples=4, deadline=None)
@given(st.sampled_from(["fast9", "template_match"]), st.integers(1, 3), SEEDS)
def test_a_module_on_a_fused_region_gets_no_table_and_planned_runs_edf(fused, others, seed):
    """A module that takes a fused region occupies every slot of it: a table of one module per
    slot cannot place it, so there is no table (the reason names it) and the run is edf's, where
    a table that ignored the region would start a frame on slots the region holds."""
    from fpgashare.catalogue.platform import load_platform

    platform = load_platform("zcu104-x4")
    rng = random.Random(seed)
    single = [m for m in ("conv3x3", "sobel_mag", "threshold", "erode3x3", "dilate3x3", "median3x3")
              if all(len(platform.footprint(s.index, m)) == 1 for s in platform.slots_for(m))]
    chain = rng.sample(single, others)
    pipelines = (realtime_spec("corners", [fused], 0.01, 0.01, [480, 640], platform),
                 replace(realtime_spec("edges", chain, 0.01, 0.01, [480, 640], platform), offset_s=0.002))
    workload = replace(small_workload(seed), platform=platform, pipelines=pipelines, duration_s=0.05)
    plan, reason = table_to_run(workload, time_limit_s=2.0, streams=platform.streams)
    assert plan is None and f"uses {fused}, which takes a fused region" in reason
    _, planned = run_one(workload, "planned", "model", check_rejected=False)
    _, edf = run_one(workload, "edf", "model", check_rejected=False)
    assert planned["plan"] == "none" and planned["pipelines"] == edf["pipelines"]


class TrafficBoard(ModelBackend):
    """The twin, but every load and frame pass runs over its cycles by the register traffic *X*
    (``control_seconds``: the bound the admission analysis charges; the co-simulated board's
    loads do run over theirs while other streams' work runs)."""

    def start_load(self, slot, module):
        pending = super().start_load(slot, module)
        pending.seconds += control_seconds(self.platform)
        return pending

    def start_frame(self, slots, stages, frame, want_output=True, stream=0):
        pending = super().start_frame(slots, stages, frame, want_output, stream)
        pending.seconds += control_seconds(self.platform)
        return pending


@FEW
@given(SEEDS, st.booleans(), st.booleans())
def test_a_table_holds_when_every_load_and_pass_runs_over_by_its_register_traffic(seed, every_stream, at_t0):
    """The table's lengths carry *X* as the analysis's do, and so does the registration window
    before the first release (every slot loaded once): on a board whose loads and passes each
    take *X* longer than their cycles, every frame of an admitted pipeline is still on time, the
    first ones too (``at_t0``: every pipeline's first frame released at once, with no jitter)."""
    workload = jittery(seed)
    if at_t0:
        workload = replace(workload, pipelines=tuple(replace(p, offset_s=0.0, jitter_s=0.0) if p.realtime else p
                                                     for p in workload.pipelines))
    streams = workload.platform.streams if every_stream else 1
    plan, _ = table_to_run(workload, streams=streams)
    policy = PlannedPolicy(plan)
    assume(plan is not None and (plan.loads or at_t0))
    kept = replace(workload, duration_s=4 * plan.hyperperiod_s,
                   pipelines=tuple(p for p in workload.pipelines if not p.realtime or p.name in plan.admitted))
    board = TrafficBoard(kept.platform, streams=streams if streams > 1 else None)
    engine, summary = run_workload(kept, board, policy, video_streams=streams)
    missed = {n: v for n, v in summary["pipelines"].items() if n in plan.admitted and v["on_time"] != v["submitted"]}
    assert not missed, (missed, sorted({f.reason for f in engine.frames if f.reason}))


@settings(max_examples=4, deadline=None)
@given(st.floats(1.5, 3.0), st.floats(0.0, 1.0), SEEDS)
def test_a_frame_planned_late_in_a_long_window_is_served_before_the_run_stops(period, share, seed):
    """A pass is planned no earlier than its frame's latest arrival: with a jitter longer than the
    run's drain (1 s), the last release's pass comes after it, and the run must still wait for it
    (an admitted frame is owed its whole deadline)."""
    platform = small_workload(seed).platform
    period = round(period, 1)
    spec = realtime_spec("slow", ["conv3x3"], period, 1.0, [120, 160], platform)
    deadline = round(0.95 * period, 4)
    jitter = round(1.15 + share * (deadline - spec.exec_s - 1.2), 4)
    workload = replace(small_workload(seed), platform=platform, duration_s=0.1,
                       pipelines=(replace(spec, deadline_s=deadline, jitter_s=jitter),))
    engine, result = run_one(workload, "planned", "model", check_rejected=False)
    assert isinstance(result["plan"], dict)
    figures = result["pipelines"]["slow"]
    assert figures["submitted"] == figures["on_time"] == 1, [f.reason for f in engine.frames]

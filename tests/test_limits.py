"""The exact limits (runtime/sched/limits/): the optimum bounds every scheduler, the schedule the
model returns is valid by an independent checker, and the floors stay below every run."""

from __future__ import annotations

import sys
from dataclasses import replace

import pytest
from fpgashare.cli.bench import run_one
from fpgashare.errors import FpgashareError
from fpgashare.sched.limits import require_ortools
from fpgashare.sched.limits.bench_limits import Limits, served
from fpgashare.sched.limits.caps import admitted_cap
from fpgashare.sched.limits.exact import calm_schedule, fewest_loads, most_admitted
from fpgashare.sched.limits.jobs import frame_jobs, realtime
from fpgashare.sched.limits.schedule_check import violations
from fpgashare.sched.policies.registry import POLICIES
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from benchmarks.limit_gap import small_workload

SEEDS = st.integers(0, 2**31 - 1)
FEW = settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def tiny(seed: int):
    return small_workload(seed, max_pipelines=3)


def solve(workload, prefix: bool = False):
    jobs = frame_jobs(workload)
    names = [p.name for p in realtime(workload)]
    return jobs, names, most_admitted(jobs, workload.platform, names, prefix=prefix, time_limit_s=20.0)


@FEW
@given(SEEDS)
def test_the_exact_schedule_passes_the_independent_checker(seed):
    workload = tiny(seed)
    jobs, _, sol = solve(workload)
    assert sol.schedule is not None
    assert violations(sol.schedule, jobs, workload.platform) == []
    assert len(sol.schedule.admitted) == sol.value


@FEW
@given(SEEDS)
def test_the_optimum_serves_at_least_what_every_scheduler_serves_with_no_miss(seed):
    workload = tiny(seed)
    _, names, sol = solve(workload)
    _, _, prefix = solve(workload, prefix=True)
    most = sol.value if sol.status == "optimal" else sol.bound       # a proved upper bound either way
    longest = prefix.value if prefix.status == "optimal" else prefix.bound
    assert prefix.value <= most
    assert most <= admitted_cap(frame_jobs(workload), realtime(workload), workload.platform).bound
    for name in POLICIES:
        _, result = run_one(workload, name, "model", check_rejected=False)
        ok = served(result)
        assert len(ok) <= most, name
        run_prefix = next((i for i, n in enumerate(names) if n not in ok), len(names))
        assert run_prefix <= longest, name


@FEW
@given(SEEDS)
@example(1158)      # edf's DNN ran in the registration window, which the window bound once left out
@example(671)       # a frame committed early: the wait floor counted idle time from its commit, not its arrival
def test_the_floors_stay_below_every_run(seed):
    workload = tiny(seed)
    limits = Limits(workload, max_frames=None, time_limit_s=20.0, max_modules=None)
    for name in POLICIES:
        for streams in (None, 1):
            engine, result = run_one(workload, name, "model", check_rejected=False, streams=streams)
            figures = limits.scheduler(result, engine)
            assert figures["loads"]["order_floor"] <= figures["loads"]["run"], (name, streams)
            opt = figures["loads"].get("optimum")
            if opt is not None and figures["loads"]["optimum_proved"]:
                assert opt <= figures["loads"]["run_in_horizon"], (name, streams)
            floor = figures["port_wait"]["order_floor_s"]
            if floor is not None:
                assert floor <= figures["port_wait"]["run_s"] + 1e-9, (name, streams)
            if "dnn" in figures:
                assert figures["dnn"]["run_images_per_s"] <= figures["dnn"]["window_bound_images_per_s"] + 0.05


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(SEEDS)
def test_fewest_loads_schedule_is_valid_and_no_more_than_the_admitted_one(seed):
    workload = tiny(seed)
    jobs, names, sol = solve(workload)
    least = fewest_loads(jobs, workload.platform, names, list(sol.schedule.admitted), time_limit_s=20.0)
    assert least.schedule is not None
    assert violations(least.schedule, jobs, workload.platform) == []
    assert least.value <= len(sol.schedule.loads)
    calm = calm_schedule(jobs, workload.platform, names, list(sol.schedule.admitted), least.value, time_limit_s=20.0)
    assert calm.schedule is not None
    assert violations(calm.schedule, jobs, workload.platform) == []
    assert len(calm.schedule.loads) <= least.value


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(SEEDS, st.data())
def test_the_checker_catches_a_broken_schedule(seed, data):
    workload = tiny(seed)
    jobs, _, sol = solve(workload)
    schedule = sol.schedule
    key = data.draw(st.sampled_from(sorted(schedule.starts)))
    job = next(j for j in jobs if j.key == key)
    late = replace(schedule, starts={**schedule.starts, key: job.due})          # ends past its deadline
    assert violations(late, jobs, workload.platform)
    if schedule.loads:
        dropped = replace(schedule, loads=schedule.loads[1:])                  # a change of module, no load
        assert violations(dropped, jobs, workload.platform)
    moved = replace(schedule, uses=tuple(u for u in schedule.uses if u.job != key))
    assert violations(moved, jobs, workload.platform)


def test_a_missing_ortools_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "ortools.sat.python", None)
    with pytest.raises(FpgashareError, match=r"fpgashare\[limits\]"):
        require_ortools()

"""Evicting pipelines (runtime/sched/analysis/evicting_pins.py, EdfPolicy's put-back): the plans
charge what the argument says, a set admitted with evictors misses nothing over many
hyperperiods, and another frame runs with a pin away only while an evictor loads."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import replace

from fpgashare.catalogue.passes import match_slots
from fpgashare.cli.bench import run_one
from fpgashare.sched.analysis.admission import admit
from fpgashare.sched.analysis.evicting_pins import evicting_plans
from fpgashare.sched.analysis.schedulability import _unpinned, slot_compatibility
from fpgashare.sched.limits.jobs import realtime
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchmarks.limit_gap import small_workload

SEEDS = st.integers(0, 2**31 - 1)
LOAD = re.compile(r"load (\S+) -> slot (\d+)")


def with_evictors(seed: int, tries: int = 200):
    """The first generated workload from ``seed`` on whose admission some pipeline evicts pins."""
    for k in range(tries):
        workload = small_workload(seed + k)
        admission = admit(workload, phased=True)
        if admission.contract.evictors:
            return workload, admission
    return None, None


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(SEEDS)
def test_a_plan_charges_its_evictors_the_pins_they_take_and_put_back(seed):
    workload = small_workload(seed)
    platform = workload.platform
    pipelines = realtime(workload)
    ok = slot_compatibility(platform)
    for _, plan, evictors in evicting_plans(pipelines, platform)[:6]:
        pins = Counter(plan.pinned.values())
        pool = [s.index for s in platform.slots if s.index not in plan.pinned]
        assert evictors
        for p in pipelines:
            passes = _unpinned(p, pins)
            if p.name in evictors:
                (rest,) = passes
                assert evictors[p.name] == len(rest) - len(pool) > 0
                assert plan.loads[p.name] == len(rest) + evictors[p.name]
                lendable = [s for s, m in plan.pinned.items() if m not in p.pass_module_counts[0]]
                assert evictors[p.name] <= len(lendable)
            else:
                assert all(match_slots(rest, pool, ok) is not None for rest in passes)
                assert plan.loads[p.name] == sum(len(rest) for rest in passes)


def slot_contents_at(trace, t: float) -> dict[int, str]:
    """What each slot holds at ``t`` by the loads that ended by then."""
    held: dict[int, str] = {}
    for e in sorted((e for e in trace if e.track == "port" and e.end <= t + 1e-12), key=lambda e: e.end):
        m = LOAD.match(e.name)
        if m:
            held[int(m.group(2))] = m.group(1)
    return held


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(SEEDS, st.integers(0, 1000))
def test_a_set_admitted_with_evictors_misses_nothing_and_keeps_its_pins(seed, jitter_seed):
    workload, admission = with_evictors(seed)
    if workload is None:
        return
    long = replace(workload, duration_s=workload.duration_s * 25, seed=jitter_seed)
    engine, result = run_one(long, "edf", "model", check_rejected=False)
    for name in result["admitted"]:
        counts = result["pipelines"][name]
        assert counts["late"] + counts["dropped"] + counts["errors"] == 0, name
    evictors = admission.contract.evictors
    pinned = admission.contract.pinned
    if set(result["admitted"]) != {p.name for p in admission.admitted} or "pinned" not in result.get("contract", {}):
        return                    # several streams: the partitioned plan ran, not this contract
    # A frame of another pipeline starts with a pin away only while an evictor's loads run
    # (it borrows the stream): it then ends before the pin starts to load back. (A DNN batch is
    # no frame: it may run on a pin lent for an idle gap, runtime/sched/policies/pin_lend.py.)
    realtime = {p.name for p in workload.pipelines if p.realtime}
    for e in engine.trace:
        if not e.track.startswith("stream") or (e.args or {}).get("pipeline") in evictors \
                or (e.args or {}).get("pipeline") not in realtime:
            continue
        held = slot_contents_at(engine.trace, e.start)
        for slot, pin in pinned.items():
            if held.get(slot) != pin:
                back = min((p.start for p in engine.trace if p.track == "port" and p.start >= e.start
                            and LOAD.match(p.name) and int(LOAD.match(p.name).group(2)) == slot), default=None)
                assert back is not None and e.end <= back + 1e-12, (e.name, slot, held, pinned)


@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(SEEDS)
def test_bench_reports_the_evictors_its_contract_has(seed):
    workload, admission = with_evictors(seed)
    if workload is None:
        return
    _, result = run_one(workload, "edf", "model", check_rejected=False, streams=1)
    assert result["contract"]["evictors"] == dict(sorted(admission.contract.evictors.items()))

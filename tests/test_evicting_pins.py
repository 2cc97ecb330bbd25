# ruff: noqa: N803, N806  (the analysis's names: S, T, D, J, P per task)
"""Evicting pipelines (runtime/sched/analysis/evicting_pins.py, EdfPolicy's put-back): the plans
charge what the argument says, a set admitted with evictors misses nothing over many
hyperperiods, and another frame runs with a pin away only while an evictor loads. The put-back
counts after the evictor's own deadline (a job's *tail*, processor_demand.py): checked against a
simulation of non-preemptive EDF with tails written apart from the test, and end to end on sets
only that credit admits."""

from __future__ import annotations

import heapq
import random
import re
from collections import Counter
from dataclasses import replace
from pathlib import Path
from unittest.mock import patch

import numpy as np
import pytest
from fpgashare.backends.model import ModelBackend
from fpgashare.catalogue.passes import match_slots
from fpgashare.catalogue.platform import load_platform
from fpgashare.catalogue.workload import PipelineSpec, Workload, realtime_spec
from fpgashare.cli.bench import run_one
from fpgashare.sched.analysis import evicting_pins
from fpgashare.sched.analysis.admission import admit
from fpgashare.sched.analysis.evicting_pins import evicting_plans
from fpgashare.sched.analysis.phased_demand import hyperperiod
from fpgashare.sched.analysis.processor_demand import demand_check, release_test
from fpgashare.sched.analysis.residency import slot_compatibility, unpinned_stages
from fpgashare.sched.limits.jobs import realtime
from fpgashare.sched.policies.edf import EdfPolicy
from fpgashare.sched.sources.periodic import run_workload
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
            passes = unpinned_stages(p, pins)
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
    # A frame of another pipeline that uses a pin starts with it away only while an evictor's loads
    # run (it borrows the stream): it then ends before the pin starts to load back. (A DNN batch is
    # no frame: it may run on a pin lent for an idle gap, runtime/sched/policies/pin_lend.py; a frame
    # that does not use the pin may run while it is owed to the evictor's next frame,
    # runtime/sched/policies/put_back_skip.py.)
    uses = {p.name: p.module_counts for p in workload.pipelines if p.realtime}
    for e in engine.trace:
        if not e.track.startswith("stream") or (e.args or {}).get("pipeline") in evictors \
                or (e.args or {}).get("pipeline") not in uses:
            continue
        held = slot_contents_at(engine.trace, e.start)
        for slot, pin in pinned.items():
            if held.get(slot) != pin and pin in uses[e.args["pipeline"]]:
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


# ---- the put-back after the evictor's deadline (processor_demand's ``tail``) ---------------------

PERIODS_MS = (5, 10, 20, 40)


def _tasks_with_tails(seed: int, n: int):
    """A seeded task set whose jobs may end in a tail (an evictor's put-back): periods from
    PERIODS_MS, deadlines up to the period, tight costs, a tail on about half the tasks of up to
    the whole job, jitter half the time, offsets anywhere in the period."""
    rng = random.Random(seed)
    T = np.array([rng.choice(PERIODS_MS) / 1e3 for _ in range(n)])
    D = np.array([rng.uniform(0.3, 1.0) * t for t in T])
    S = np.array([rng.uniform(0.05, 0.7) * d for d in D])
    tail = np.array([rng.uniform(0.1, 0.9) * s if rng.random() < 0.5 else 0.0 for s in S])
    J = np.array([rng.uniform(0.0, 0.2) * d if rng.random() < 0.5 else 0.0 for d in D])
    P = np.array([round(rng.uniform(0.0, t), 4) for t in T])
    return S, tail, T, D, J, P


def _np_edf_with_tails_misses(S, tail, T, D, J, P, horizon_s: float, rng: random.Random) -> bool:
    """Non-preemptive EDF on one processor, written apart from the test: each job is its frame
    (S - tail, which must end by the deadline) and then its tail (no deadline), run at once after
    the frame with nothing in between, as edf puts an evictor's pins back. Releases at P + k·T plus
    a random part of J (or its ends), frames and tails a random part of their bound (or all)."""
    jobs = []
    for i in range(len(S)):
        k = 0
        while P[i] + k * T[i] < horizon_s:
            r = P[i] + k * T[i] + rng.choice((0.0, 1.0, rng.random())) * J[i]
            scale = rng.choice((1.0, 1.0, rng.uniform(0.5, 1.0)))
            jobs.append((r, r + D[i], (S[i] - tail[i]) * scale, tail[i] * rng.choice((1.0, 1.0, rng.random()))))
            k += 1
    jobs.sort()
    ready: list[tuple[float, float, float, float]] = []
    now, i = 0.0, 0
    while i < len(jobs) or ready:
        if not ready and jobs[i][0] > now:
            now = jobs[i][0]
        while i < len(jobs) and jobs[i][0] <= now:
            heapq.heappush(ready, (jobs[i][1], jobs[i][0], jobs[i][2], jobs[i][3]))
            i += 1
        deadline, _, frame, after = heapq.heappop(ready)
        now += frame
        if now > deadline + 1e-12:
            return True
        now += after
    return False


def _horizon(T, P, check) -> float:
    return float(P.max()) + 3 * hyperperiod(T) + check.horizon_s


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 10**9), st.integers(1, 4), st.booleans())
def test_a_set_the_test_passes_with_tails_never_misses_under_non_preemptive_edf(seed, n, phased):
    S, tail, T, D, J, P = _tasks_with_tails(seed, n)
    check = release_test(S, T, D, J, P if phased else None, 0.0, tail=tail)
    if not check.ok or not np.isfinite(check.horizon_s):
        return
    rng = random.Random(seed)
    for _ in range(4):
        assert not _np_edf_with_tails_misses(S, tail, T, D, J, P, _horizon(T, P, check), rng), (S, tail, T, D, J, P)


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 10**9), st.integers(1, 4), st.booleans())
def test_the_credit_is_at_most_one_tail_in_any_window(seed, n, phased):
    """Between none (tails charged as any job) and the longest tail: one frame's put-back."""
    S, tail, T, D, J, P = _tasks_with_tails(seed, n)
    known = P if phased else None
    whole = release_test(S, T, D, J, known, 0.0)
    credited = release_test(S, T, D, J, known, 0.0, tail=tail)
    assert credited.ok or not whole.ok
    if np.isfinite(whole.slack_s):
        assert whole.slack_s - 1e-12 <= credited.slack_s <= whole.slack_s + float(tail.max()) + 1e-12


def _passes_with_every_tail_dropped(S, tail, T, D, J, horizon_s: float) -> bool:
    """The unsound credit, phase-free: every frame's demand without its tail in every window (as if
    no put-back ever delayed another frame), the blocking with whole jobs."""
    steps = [D[i] - J[i] + T[i] * np.arange(int(horizon_s / T[i]) + 2) for i in range(S.size)]
    for t in np.unique(np.concatenate([D, *steps])):
        if t < D.min() or t > horizon_s:
            continue
        frames = np.where(t >= D, np.floor((t - D + J) / T + 1e-9) + 1.0, 0.0)
        if frames @ (S - tail) + max((S[j] for j in range(S.size) if D[j] > t), default=0.0) > t + 1e-12:
            return False
    return True


def test_crediting_every_window_with_every_tail_is_caught_by_the_simulation():
    """The simulation tells the credit apart from the unsound one that drops every tail from every
    window's demand: some set that the test refuses and only the unsound credit passes misses,
    released all at once with no jitter (one release pattern the sets allow)."""
    for seed in range(2000):
        S, tail, T, D, J, P = _tasks_with_tails(seed, 3)
        check = demand_check(S, T, D, J, 0.0, tail=tail)
        if not tail.any() or check.ok or not np.isfinite(check.horizon_s) \
                or not _passes_with_every_tail_dropped(S, tail, T, D, J, check.horizon_s):
            continue
        at_once = np.zeros_like(P)
        rng = random.Random(seed)
        if any(_np_edf_with_tails_misses(S, tail, T, D, 0.0 * J, at_once, _horizon(T, at_once, check), rng)
               for _ in range(4)):
            return
    raise AssertionError("no set that only the unsound credit passes missed in the simulation")


def test_a_tail_longer_than_its_job_is_refused_with_a_clear_error():
    S, T, D, J = (np.array(v) for v in ([1e-3], [0.01], [0.01], [0.0]))
    with pytest.raises(ValueError, match="tail"):
        demand_check(S, T, D, J, 0.0, tail=np.array([2e-3]))


def with_put_back_credit(seed: int, tries: int = 80):
    """The first generated workload from ``seed`` whose one-stream admission takes a pipeline only
    with the put-back after the evictor's deadline (admitted with the credit, refused without)."""
    for k in range(tries):
        workload = small_workload(seed + k)
        with_credit = admit(workload, phased=True)
        if not with_credit.contract.evictors:
            continue
        with patch.object(evicting_pins, "put_back_tails", lambda p, e, load_s: np.zeros(len(p))):
            without = admit(workload, phased=True)
        if len(with_credit.admitted) > len(without.admitted):
            return workload, with_credit
    return None, None


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(SEEDS, st.integers(0, 1000))
def test_a_set_admitted_only_with_the_put_back_credit_misses_nothing_on_the_engine(seed, jitter_seed):
    """End to end on one stream, over 25 hyperperiods with fresh jitter: edf's dispatch puts the
    pins back after the evictor's frame and before anything else, which the credit relies on."""
    workload, admission = with_put_back_credit(seed)
    if workload is None:
        return
    long = replace(workload, duration_s=workload.duration_s * 25, seed=jitter_seed)
    _, result = run_one(long, "edf", "model", check_rejected=False, streams=1)
    assert set(result["admitted"]) == {p.name for p in admission.admitted}
    for name in result["admitted"]:
        counts = result["pipelines"][name]
        assert counts["late"] + counts["dropped"] + counts["errors"] == 0, (seed, name, counts)


def _tasks_at_the_edges(rng: random.Random, n: int):
    """A task set pushed to the credit's edges: tails up to the whole job, jitter up to the slack
    the frame leaves (deadline less its part before the tail), and often two tasks with the same
    period, deadline and phase (a plain frame tied with an evictor's)."""
    T = np.array([rng.choice(PERIODS_MS) / 1e3 for _ in range(n)])
    D = np.array([rng.uniform(0.2, 1.0) * t for t in T])
    S = np.array([rng.uniform(0.05, 0.9) * d for d in D])
    tail = np.array([rng.choice((rng.uniform(0.3, 1.0), 1.0)) * s if rng.random() < 0.6 else 0.0 for s in S])
    J = np.array([rng.choice((rng.uniform(0.0, 0.9), 0.0)) * (D[i] - (S[i] - tail[i])) for i in range(n)])
    P = np.array([round(rng.uniform(0.0, t), 4) for t in T])
    if n >= 2 and rng.random() < 0.4:
        a, b = rng.sample(range(n), 2)
        T[b], D[b], P[b] = T[a], D[a], P[a]
        S[b] = min(S[b], 0.9 * D[b])
        tail[b] = min(tail[b], S[b])
        J[b] = min(J[b], 0.5 * D[b])
    return S, tail, T, D, J, P


def _critical_instant(rng: random.Random, n: int) -> np.ndarray:
    """Phases for the phase-free test's worst case: every task released at once, one of them a
    moment earlier (so it may start first and block the rest, its tail with it)."""
    P = np.full(n, rng.choice((1e-6, 1e-5, 1e-4)))
    P[rng.randrange(n)] = 0.0
    return P


@settings(max_examples=400, deadline=None)
@given(st.integers(0, 10**9), st.integers(1, 4), st.booleans())
def test_the_credit_holds_at_the_critical_instant_with_jitter_up_to_the_slack(seed, n, phased):
    """The simulation of non-preemptive EDF with tails against the credited test where it is
    hardest to pass: phase-free sets released at their critical instant (random phases rarely hit
    it), jitter at its ends up to the frame's slack, tails up to the whole job, ties between a
    plain frame and an evictor's."""
    rng = random.Random(seed)
    S, tail, T, D, J, P = _tasks_at_the_edges(rng, n)
    check = release_test(S, T, D, J, P if phased else None, 0.0, tail=tail)
    if not check.ok or not np.isfinite(check.horizon_s):
        return
    for _ in range(4):
        at = P if phased else _critical_instant(rng, n)
        assert not _np_edf_with_tails_misses(S, tail, T, D, J, at, _horizon(T, at, check), rng), \
            (S, tail, T, D, J, at)


# ---- rule 9 on the engine: nothing starts beside an evictor with pins away ----------------------

def _loads_beside_put_backs(engine, contract) -> tuple[int, list]:
    """For every frame of an evictor that streams with pins away, the loads other than its
    put-backs that start from its stream's start until its last put-back ends; and how many such
    frames there were."""
    pinned, evictors = contract.pinned, set(contract.evictors)
    port = sorted((e for e in engine.trace if e.track == "port"), key=lambda e: e.start)
    seen, beside = 0, []
    for s in (e for e in engine.trace if e.track.startswith("stream")):
        if (s.args or {}).get("pipeline") not in evictors:
            continue
        held = slot_contents_at(engine.trace, s.start)
        owed = {k for k, pin in pinned.items() if held.get(k) not in (pin, "dnn_tile")}   # (a lent pin: no put-back)
        backs = [next((p for p in port if p.start >= s.end - 1e-12 and p.name == f"load {pinned[k]} -> slot {k}"), None)
                 for k in owed]
        if not owed or None in backs:
            continue                 # no pin taken (or the run ended first)
        seen += 1
        end = max(b.end for b in backs)
        beside += [(s.name, p.name, p.args.get("reason")) for p in port
                   if s.start - 1e-12 <= p.start < end - 1e-12 and all(p is not b for b in backs)]
    return seen, beside


@settings(max_examples=3, deadline=None)
@given(st.integers(0, 10**6))
def test_no_load_starts_beside_an_evictor_that_streams_with_pins_away(jitter_seed):
    """Rule 9 from the evictor's stream start: a DNN lend (or a prefetch) that would end before
    the next release must not start with it, or it could hold the port when the frame ends and
    delay the put-back the analysis charges right after the frame (reproducer: two evictors beside
    a pinned camera and a DNN on the ZCU104; edf once lent a pinned slot to the DNN there)."""
    platform = load_platform("zcu104")

    def camera(name, chain, frame, deadline_s, jitter_s, offset_s):
        return replace(realtime_spec(name, chain, 0.02, deadline_s, list(frame), platform, jitter_s=jitter_s),
                       offset_s=offset_s)

    pipelines = (camera("p0", ["erode3x3"], (720, 1280), 0.00539, 0.00051, 0.0061),
                 camera("p1", ["dilate3x3", "threshold", "fast9", "downscale2x"], (120, 160), 0.00763, 0.001, 0.011),
                 camera("p2", ["erode3x3", "sobel_x", "fast9"], (480, 640), 0.00763, 0.00165, 0.011),
                 PipelineSpec("dnn", "besteffort", model="digits_cnn"))
    workload = Workload(Path("evictors_beside_a_dnn.toml"), platform, jitter_seed, 0.2, pipelines)
    admission = admit(workload, phased=True)
    assert admission.contract.evictors and len(admission.admitted) == 3
    engine, summary = run_workload(workload, ModelBackend(platform), EdfPolicy(), contract=admission.contract)
    seen, beside = _loads_beside_put_backs(engine, admission.contract)
    assert seen and not beside, beside
    assert all(summary["pipelines"][p.name]["late"] + summary["pipelines"][p.name]["dropped"] == 0
               for p in admission.admitted)

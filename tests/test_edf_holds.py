"""edf holding a ready frame back within its hold budget (runtime/sched/policies/hold.py,
runtime/sched/analysis/holds.py): no admitted frame misses however the budgets are used, the
admission decides the same with and without them, and a hold saves loads where frames sharing a
module can run back to back."""

from __future__ import annotations

import heapq
import math
import random
from dataclasses import replace
from pathlib import Path

import numpy as np
from fpgashare.backends.model import ModelBackend
from fpgashare.backends.slot_view import sub_platform
from fpgashare.catalogue.platform import load_platform
from fpgashare.catalogue.workload import Workload, realtime_spec
from fpgashare.cli.bench import run_one
from fpgashare.sched.analysis.admission import admit
from fpgashare.sched.analysis.holds import DNN_KEPT, room
from fpgashare.sched.analysis.processor_demand import demand_check, release_test
from fpgashare.sched.board.stream_plan import plan_streams
from fpgashare.sched.limits import steady_loads
from fpgashare.sched.limits.bench_limits import served
from fpgashare.sched.policies.edf import EdfPolicy
from fpgashare.sched.policies.hold import Holds
from fpgashare.sched.sources.periodic import run_workload
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchmarks.limit_gap import small_workload
from benchmarks.workload_gen import random_workload
from tests.hold_everything import hold_everything
from tests.test_steady_loads import _swap_every_hyperperiod


class HoldEverything(Holds):
    """Every frame not started held for its whole budget (tests/hold_everything.py)."""

    held = hold_everything


class EdfHoldingEverything(EdfPolicy):
    def setup(self, engine) -> None:
        super().setup(engine)
        self.held = HoldEverything()


def _admitted_only(workload: Workload, admitted) -> Workload:
    keep = {p.name for p in admitted}
    return replace(workload, pipelines=tuple(p for p in workload.pipelines if not p.realtime or p.name in keep))


def _assert_on_time_and_within_budget(engine, summary: dict, label: str) -> None:
    for name, p in summary["pipelines"].items():
        assert p["on_time"] == p["submitted"], f"{label}: admitted {name} missed: {p}"
    budgets = engine.contract.holds
    for key, (release, until, last) in engine.policy.held.record.items():
        assert until == release + budgets[key.split("/")[0]], f"{label}: {key} held against another budget"
        assert last < until, f"{label}: {key} held at {last} s, its budget ends at {until} s"


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10**9), st.booleans())
def test_frames_held_for_their_whole_budget_never_make_an_admitted_frame_miss(seed, phased):
    workload = random_workload(seed, max_s=2.0)
    admission = admit(workload, phased=phased)
    engine, summary = run_workload(_admitted_only(workload, admission.admitted), ModelBackend(workload.platform),
                                   EdfHoldingEverything(), contract=admission.contract)
    _assert_on_time_and_within_budget(engine, summary, f"seed {seed}, phased {phased}")


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10**9))
def test_edfs_holds_on_the_bench_path_miss_nothing_and_keep_to_their_budgets(seed):
    workload = small_workload(seed)
    board, result = run_one(workload, "edf", "model", check_rejected=False)
    for engine in getattr(board, "parts", None) or [board]:
        part = {p.name for p in engine.pipelines}
        summary = {"pipelines": {k: v for k, v in result["pipelines"].items() if k in part}}
        _assert_on_time_and_within_budget(engine, summary, f"seed {seed}")


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10**9), st.booleans())
def test_the_hold_budgets_change_no_admission_decision(seed, phased):
    workload = random_workload(seed, max_s=2.0)
    with_holds, without = admit(workload, phased=phased), admit(workload, phased=phased, holds=False)
    assert [p.name for p in with_holds.admitted] == [p.name for p in without.admitted]
    assert with_holds.rejected == without.rejected
    dnn = any(not p.realtime for p in workload.pipelines)
    _assert_same_decisions(with_holds.contract, without.contract, dnn)
    rooms = {p.name: room(p) for p in with_holds.admitted}
    assert all(0.0 < h <= rooms[name] for name, h in with_holds.contract.holds.items())
    streams = workload.platform.streams
    plans = plan_streams(workload, streams, phased=phased), plan_streams(workload, streams, phased=phased, holds=False)
    assert plans[0].admitted == plans[1].admitted and plans[0].rejected == plans[1].rejected
    for a, b in zip(plans[0].partitions, plans[1].partitions, strict=True):
        assert (a.slots, [p.name for p in a.pipelines]) == (b.slots, [p.name for p in b.pipelines])
        _assert_same_decisions(a.verdict.contract, b.verdict.contract, a.dnn)


def _assert_same_decisions(held, plain, dnn: bool) -> None:
    """The contract with holds keeps every decision of the one without: pins, evictors, rules, early
    frames, the load time; its idle load where it had one, and with DNN work (``dnn``) nearly all
    of its DNN blocking."""
    assert (held.pinned, held.evictors, held.pinned_first, held.early, held.load_s) == \
        (plain.pinned, plain.evictors, plain.pinned_first, plain.early, plain.load_s)
    assert held.idle_loads or not plain.idle_loads
    assert not dnn or held.dnn_block_s >= DNN_KEPT * plain.dnn_block_s
    if not held.holds:
        assert held == plain


def _back_to_back() -> Workload:
    """One slot. ``a`` (median3x3) every 20 ms; ``b`` and ``c`` (conv3x3) every 40 ms, ``b``
    released 5 ms after one of a's frames with a 30 ms deadline, ``c`` 5 ms after the next.
    Served as they come, the slot swaps four times a hyperperiod (a, b, a, c); with b held until
    a's next frame has run, b and c run back to back and a's two frames too: two loads."""
    one = sub_platform(load_platform("pynq-z2"), (0,))
    a = replace(realtime_spec("a", ["median3x3"], 0.02, 0.01, [480, 640], one), offset_s=0.010)
    b = replace(realtime_spec("b", ["conv3x3"], 0.04, 0.03, [480, 640], one), offset_s=0.015)
    c = replace(realtime_spec("c", ["conv3x3"], 0.04, 0.01, [480, 640], one), offset_s=0.035)
    return Workload(Path("back_to_back.toml"), one, 1, 0.04, (a, b, c))


def test_a_hold_lets_frames_sharing_a_module_run_back_to_back_with_the_fewest_loads(monkeypatch):
    workload = _back_to_back()
    cyclic = steady_loads.cyclic_optimum(workload, ["a", "b", "c"], time_limit_s=10)
    runs = {}
    for holds in (False, True):
        monkeypatch.setattr(EdfPolicy, "holds", holds)
        engine, result = run_one(steady_loads.steady_workload(workload), "edf", "model", check_rejected=False)
        _assert_on_time_and_within_budget(engine, result, f"holds {holds}")
        runs[holds] = (steady_loads.run_per_hyperperiod(engine, workload.duration_s), len(engine.policy.held.record))
    assert runs[False][1] == 0 and runs[True][1] > 0
    assert runs[True][0] == cyclic["loads"] < runs[False][0]


def test_holds_let_edf_alternate_the_order_from_one_hyperperiod_to_the_next_below_a_cyclic_tables_loads():
    """tests/test_steady_loads.py's swap: a chain on both slots and threshold once a hyperperiod.
    A table repeating every hyperperiod swaps a slot twice in each; edf holding the chain's frame
    while threshold is resident serves threshold first every other hyperperiod, so each swap is
    followed by the frame that needs the module it brought: one load a hyperperiod."""
    workload = _swap_every_hyperperiod()
    cyclic = steady_loads.cyclic_optimum(workload, ["both", "thr"], time_limit_s=10)
    board, result = run_one(steady_loads.steady_workload(workload), "edf", "model", check_rejected=False)
    assert sorted(served(result)) == ["both", "thr"]
    held = 0
    for engine in getattr(board, "parts", None) or [board]:
        _assert_on_time_and_within_budget(engine, {"pipelines": {}}, "swap")
        held += len(engine.policy.held.record)
    assert held > 0
    assert steady_loads.run_per_hyperperiod(board, workload.duration_s) < cyclic["loads"]


def test_a_hold_counts_as_a_shorter_deadline_in_the_demand():
    """One frame of 3 ms every 20 ms, due 10 ms after it arrives: held 8 ms it has 2 ms left, which
    raising its jitter by 8 ms would not see (that task's frame is due 10 ms after its late
    release). Held h, its window is 10 - h long and a frame of another pipeline due after it may
    still block it (the 4 ms frame, due 40 ms after it arrives); its own pipeline's cannot, as its
    hold ends before that pipeline's next frame may arrive (processor_demand._held)."""
    def test(jobs, jitter=0.0, hold=None):
        stream, period, due = (np.array(v) * 1e-3 for v in zip(*jobs, strict=True))
        return demand_check(stream, period, due, np.full(len(jobs), jitter * 1e-3), 0.0,
                            hold=None if hold is None else np.array(hold) * 1e-3).ok

    one = [(3, 20, 10)]
    assert test(one, jitter=8) and not test(one, hold=[8]) and test(one, hold=[7])
    two = [(3, 20, 10), (4, 40, 40)]
    assert test(two) and not test(two, hold=[4, 0]) and test(two, hold=[3, 0])


def _np_edf_with_holds_misses(S, T, D, J, H, P, horizon_s: float, rng: random.Random) -> bool:
    """Non-preemptive EDF on one processor, written apart from the test: frame k of task i arrives
    at P + k·T plus a part of J (none, all, or a random part), is held a part of H (the same three
    ways) and is due D after it arrived; the processor serves the most urgent frame ready."""
    jobs = []
    for i in range(len(S)):
        for k in range(int((horizon_s - P[i]) // T[i]) + 1):
            arrives = P[i] + k * T[i] + rng.choice((0.0, 1.0, rng.random())) * J[i]
            jobs.append((arrives + rng.choice((0.0, 1.0, 1.0, rng.random())) * H[i], arrives + D[i], S[i]))
    jobs.sort()
    ready: list[tuple[float, float]] = []
    now, n = jobs[0][0], 0
    while n < len(jobs) or ready:
        if not ready and jobs[n][0] > now:
            now = jobs[n][0]
        while n < len(jobs) and jobs[n][0] <= now:
            heapq.heappush(ready, (jobs[n][1], jobs[n][2]))
            n += 1
        deadline, cost = heapq.heappop(ready)
        now += cost
        if now > deadline + 1e-12:
            return True
    return False


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1), st.booleans())
def test_a_set_the_demand_test_passes_with_its_holds_at_its_edge_never_misses_under_non_preemptive_edf(seed, phased):
    """The analysis with holds alone (processor_demand.py: deadline D - H and jitter J in the
    demand, D for blocking, J + H for the busy period; J + H in the phased windows), on sets whose
    frames are scaled to where the test just passes, against the simulation above: with known
    phases at those phases, else synchronous, random, and the longest frame arriving just before
    the rest. (Counting a hold as jitter in the demand, or leaving it out of the phased windows,
    admits sets this simulation makes miss.)"""
    rng = random.Random(seed)
    n = rng.randint(1, 4)
    T = np.array([rng.choice((5, 8, 10, 20, 40)) * 1e-3 for _ in range(n)])
    S = np.array([rng.uniform(0.05, 0.5) * t / n for t in T])
    D = np.array([rng.uniform(s, t) for s, t in zip(S, T, strict=True)])
    J = np.array([rng.uniform(0.0, 0.3) * t if rng.random() < 0.5 else 0.0 for t in T])
    H = np.maximum(0.0, np.minimum(D - S, T - J)) * np.array([rng.random() if rng.random() < 0.8 else 0.0
                                                              for _ in range(n)])
    P = np.array([rng.randrange(0, round(t * 1e3)) * 1e-3 for t in T]) if phased else None

    def passes(scale: float) -> bool:
        return bool(np.all(S * scale < D - H)) and release_test(S * scale, T, D, J, P, 0.0, hold=H).ok

    lo, hi = 1e-3, 4.0
    assert passes(lo), "a set a thousand times lighter than drawn passes whatever its holds"
    for _ in range(14):
        lo, hi = ((lo + hi) / 2, hi) if passes((lo + hi) / 2) else (lo, (lo + hi) / 2)
    S = S * lo
    horizon = 3 * math.lcm(*(round(t * 1e3) for t in T)) * 1e-3 + float(T.max())
    for trial in range(12):
        if phased:
            phases = P
        elif trial % 3 == 0:
            phases = np.zeros(n)
        elif trial % 3 == 1:
            phases = np.array([rng.uniform(0.0, t) for t in T])
        else:
            phases = np.full(n, float(T.max()))
            longest = int(np.argmax(S))
            phases[longest] -= J[longest] + H[longest] + rng.uniform(0.0, 1e-5)
        assert not _np_edf_with_holds_misses(S, T, D, J, H, phases, horizon, rng), (S, T, D, J, H, phases)


def test_a_frame_is_held_no_longer_than_until_its_pipelines_next_frame_comes():
    """The budgets end by the instant a pipeline's next frame may come (H <= T - J), but the two
    instants are sums in floating point, and the demand test does not charge a pipeline as the
    blocker of a window it has a frame in (processor_demand._held): were the frame held an ulp past
    its next frame's arrival, that frame could start first and block it, uncharged. A rule that
    ends holds only at ``release + H`` holds the first frame here."""
    from types import SimpleNamespace

    p = SimpleNamespace(name="p", deadline_s=0.010)
    g = SimpleNamespace(name="g", deadline_s=0.020)

    def frame(pipeline, release, seq, modules):
        return SimpleNamespace(pipeline=pipeline, release=release, deadline=release + pipeline.deadline_s,
                               start=None, step=0, arrives=None, key=f"{pipeline.name}/{seq}", modules=modules)

    hold_s = 0.005
    now = math.nextafter(hold_s, 0.0)          # the next frame came an ulp before the first's hold ends
    first, nxt = frame(p, 0.0, 0, {"m"}), frame(p, now, 1, {"m"})
    waiting = frame(g, 0.0, 0, {"x"})           # needs the module p's loads would evict, no load of its own
    engine = SimpleNamespace(
        contract=SimpleNamespace(holds={"p": hold_s}), changing=False, now=now, committed=None,
        placement=SimpleNamespace(find_slots=lambda f, _: ([0], [] if f.pipeline is g else ["m"])),
        slots=SimpleNamespace(slots=[SimpleNamespace(module="x")]), pipelines=[], wake=lambda t: None)
    assert Holds().held(engine, [first, waiting], lambda f: [0]) == [first]     # the rule holds it ...
    assert Holds().held(engine, [first, nxt, waiting], lambda f: [0]) == []     # ... until its next frame comes

"""edf holding a ready frame back within its hold budget (runtime/sched/policies/hold.py,
runtime/sched/analysis/holds.py): no admitted frame misses however the budgets are used, the
admission decides the same with and without them, and a hold saves loads where frames sharing a
module can run back to back."""

from __future__ import annotations

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
from fpgashare.sched.analysis.processor_demand import demand_check
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
    release). Held h, its window is 10 - h long and a frame due after it may still block it (the
    test's blocking judges by the deadlines as they are: its own 3 ms, or the 4 ms frame's)."""
    def test(jobs, jitter=0.0, hold=None):
        stream, period, due = (np.array(v) * 1e-3 for v in zip(*jobs, strict=True))
        return demand_check(stream, period, due, np.full(len(jobs), jitter * 1e-3), 0.0,
                            hold=None if hold is None else np.array(hold) * 1e-3).ok

    one = [(3, 20, 10)]
    assert test(one, jitter=8) and not test(one, hold=[8]) and not test(one, hold=[5]) and test(one, hold=[4])
    two = [(3, 20, 10), (4, 40, 40)]
    assert test(two) and not test(two, hold=[4, 0]) and test(two, hold=[3, 0])

"""Loads in the steady state against the best cyclic schedule (runtime/sched/limits/steady_loads.py)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

from fpgashare.catalogue.platform import load_platform
from fpgashare.catalogue.workload import Workload, realtime_spec
from fpgashare.cli.bench import run_one
from fpgashare.sched.limits import steady_loads
from fpgashare.sched.limits.bench_limits import Limits, served
from fpgashare.sched.policies.edf import EdfPolicy
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from benchmarks.limit_gap import small_workload


def _swap_every_hyperperiod() -> Workload:
    """Two slots; one camera's chain holds both (two conv3x3 stages), another needs threshold.
    Each hyperperiod one slot goes to threshold and back: a run that keeps the order of the frames
    every hyperperiod loads twice a hyperperiod, a one-shot schedule (free first contents, nothing
    after) once."""
    platform = load_platform("pynq-z2")
    both = replace(realtime_spec("both", ["gauss3x3", "sharpen3x3"], 0.04, 0.035, [480, 640], platform),
                   offset_s=0.013)
    thr = replace(realtime_spec("thr", ["threshold"], 0.04, 0.0103, [480, 640], platform), offset_s=0.0163)
    return Workload(Path("swap.toml"), platform, 1, 0.04, (both, thr))


def test_a_slot_swapped_for_another_frame_each_hyperperiod_costs_a_running_schedule_two_loads(monkeypatch):
    # edf without holds serves the frames in the same order every hyperperiod, as a cyclic table
    # does; with holds it alternates the order (tests/test_edf_holds.py)
    monkeypatch.setattr(EdfPolicy, "holds", False)
    workload = _swap_every_hyperperiod()
    one_shot = Limits(workload, max_frames=None).fewest_loads(["both", "thr"])
    cyclic = steady_loads.cyclic_optimum(workload, ["both", "thr"], time_limit_s=10)
    assert one_shot.value == 1 and one_shot.status == "optimal"
    assert cyclic == {"loads": 2, "proved": True}
    engine, result = run_one(steady_loads.steady_workload(workload), "edf", "model", check_rejected=False)
    assert sorted(served(result)) == ["both", "thr"]
    figures = steady_loads.figures(engine, workload, served(result), cyclic)
    assert figures["run_per_hyperperiod"] == 2 and figures["within_1.1"]


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@example(2207039)   # several streams
@example(777)       # the table serves three of five pipelines, whose hyperperiod is half the workload's
@example(179)       # a frame run a hyperperiod after its release: the first hyperperiod skips a load
@given(st.integers(0, 2**31 - 1))
def test_a_run_of_a_cyclic_table_counts_the_tables_loads_a_hyperperiod(seed):
    """planned runs a cyclic table: in its steady state every load of the table runs once a
    hyperperiod, so the count must give the table's loads (an independent source)."""
    base = small_workload(seed)
    workload = replace(base, pipelines=tuple(p for p in base.pipelines if p.realtime))
    engine, result = run_one(steady_loads.steady_workload(workload), "planned", "model", check_rejected=False)
    table = result["plan"]
    assume(table != "none")           # CP-SAT found no table in its time limit: nothing to count
    assert sorted(served(result)) == sorted(table["admitted"]), f"seed {seed}"
    assert steady_loads.run_per_hyperperiod(engine, workload.duration_s) == steady_loads.table_loads(
        table["loads_per_hyperperiod"], table["hyperperiod_ms"] / 1e3, workload.duration_s), f"seed {seed}"


def test_the_count_takes_the_hyperperiods_after_the_lead_in_and_leaves_out_tile_loads():
    def event(start: float, name: str, track: str = "port") -> SimpleNamespace:
        return SimpleNamespace(start=start, name=name, track=track)

    run = SimpleNamespace(t0=1.0, trace=[
        event(1.5, "load a -> slot 0"), event(2.9, "load b -> slot 1"),   # lead-in: not counted
        event(3.0, "load b -> slot 0"), event(3.5, "load dnn_tile -> slot 1"),
        event(3.6, "p/3", "stream 0"), event(4.99, "load a -> slot 0"),
        event(5.0, "load c -> slot 1")])                             # after the two counted
    assert steady_loads.run_per_hyperperiod(run, 1.0, hyperperiods=2) == 1.0

"""``fpgashare bench --limit``: the limits beside every scheduler's figures, in the text report and
the JSON, on generated workloads written as files."""

from __future__ import annotations

import json

from fpgashare.cli.bench import bench, report_lines
from fpgashare.cli.main import main
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchmarks.limit_gap import small_workload
from benchmarks.workload_gen import to_toml


def write(tmp_path, seed: int):
    path = tmp_path / f"small_{seed}.toml"
    path.write_text(to_toml(small_workload(seed, max_pipelines=3)))
    return path


@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                HealthCheck.function_scoped_fixture])
@given(st.integers(0, 2**31 - 1))
def test_every_scheduler_gets_its_limits_and_none_beats_them(tmp_path, seed):
    report = bench(str(write(tmp_path, seed)), ["edf", "fcfs", "fred"], limit=True)
    limits = report["limits"]
    most = limits["admitted"]["subset"] if limits["admitted"]["subset_proved"] else limits["admitted"]["subset_bound"]
    assert set(limits["schedulers"]) == {"edf", "fcfs", "fred"}
    for name, figures in limits["schedulers"].items():
        assert figures["served"] <= most, name
        assert figures["loads"]["order_floor"] <= figures["loads"]["run"], name
    text = "\n".join(report_lines(report))
    assert "most pipelines served with no miss" in text
    assert all(f"  {name}" in text for name in ("edf", "fcfs", "fred"))


def test_the_cli_flag_carries_the_limits_in_json(tmp_path, capsys):
    assert main(["bench", str(write(tmp_path, 7)), "--scheduler", "edf", "--limit", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["limits"]["admitted"]["pipelines"] >= 1
    assert "edf" in report["limits"]["schedulers"]


def _figures(served: int, refused: int, served_all: bool) -> dict:
    """One scheduler's figures in a limit_gap row, with only what the summary reads."""
    return {"served": served, "refused": refused, "served_all": served_all, "misses": 0,
            "loads": {"run": 2, "order_floor": 1, "optimum": None}, "port_wait": {}}


def test_only_schedulers_without_a_guarantee_count_as_a_baseline_beating_edf():
    """A workload where edf refuses a pipeline and only planned (a guaranteed table) serves all is
    not a baseline beating edf; one where fred serves all is, and its long run counts only fred's."""
    from benchmarks.limit_gap import summarize

    def row(seed: int, winner: str) -> dict:
        figs = {"edf": _figures(1, 1, False), "planned": _figures(1, 1, False), "fred": _figures(1, 1, False)}
        figs[winner] = _figures(2, 0, True)
        return {"seed": seed, "proved": True, "optimum": 2, "schedulers": figs,
                "long_run_served_all": [winner]}

    summary = summarize([row(1, "planned"), row(2, "fred")], ["edf", "planned", "fred"])
    beats = summary["baseline_serves_all_while_edf_refuses"]
    assert beats["seeds"] == [2] and beats["over_25_hyperperiods"]["seeds"] == [2]


def test_steady_loads_are_also_summed_over_the_workloads_without_a_dnn():
    """The cyclic table serves the real-time pipelines alone; a run with a DNN also reloads what its
    lends evicted, so the summary gives the comparison again over the workloads without one."""
    from benchmarks.limit_gap import summarize

    def row(seed: int, run: float, table: int, dnn: bool) -> dict:
        figs = _figures(1, 0, True)
        figs["loads"]["steady"] = {"run_per_hyperperiod": run, "cyclic_optimum": table, "cyclic_proved": True,
                                   "ratio": run / table, "within_1.1": run <= 1.1 * table}
        if dnn:
            figs["dnn"] = {"ratio": 0.5, "run_images_per_s": 1.0, "window_bound_images_per_s": 2.0}
        return {"seed": seed, "proved": True, "optimum": 1, "schedulers": {"edf": figs}}

    steady = summarize([row(1, 4.0, 2, True), row(2, 2.0, 2, False), row(3, 3.0, 2, False)], ["edf"])
    steady = steady["schedulers"]["edf"]["steady_loads"]
    assert (steady["compared"], steady["within_1.1"], steady["summed_ratio"]) == (3, 1, 1.5)
    alone = steady["without_dnn"]
    assert (alone["compared"], alone["within_1.1"], alone["summed_ratio"]) == (2, 1, 1.25)


def test_each_scheduler_line_says_what_it_counts_against_what(tmp_path):
    """The loads an exact schedule needs are named as loads of a schedule serving the same
    pipelines, not a bare "vs optimum" a reader cannot tell from the pipelines served."""
    report = bench(str(write(tmp_path, 7)), ["edf", "fcfs"], limit=True)
    lines = {line.split()[0]: line for line in report_lines(report) if line.startswith("  ")
             and line.split()[0] in report["limits"]["schedulers"]}
    assert "vs optimum" not in "\n".join(lines.values())
    for name, figures in report["limits"]["schedulers"].items():
        assert f"served {figures['served']} pipelines with no miss of the most" in lines[name]
        ld = figures["loads"]
        if "optimum" in ld:
            assert (f"real-time loads up to the last deadline {ld['run_in_horizon']} vs {ld['optimum']}"
                    in lines[name]), lines[name]
            assert "the fewest of a schedule serving the same pipelines" in lines[name]

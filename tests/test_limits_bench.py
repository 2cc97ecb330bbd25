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

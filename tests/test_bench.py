"""fpgashare bench: the JSON report's shape, traces and Gantt files, sweeps, bad input."""

from __future__ import annotations

import json
from pathlib import Path

from runtime.cli import main

SUITE = Path(__file__).resolve().parent.parent / "benchmarks" / "workloads" / "nh_720p60_zcu104.toml"


def test_bench_json_trace_and_gantt(tmp_path, capsys):
    trace, gantt = tmp_path / "t.json", tmp_path / "g.png"
    assert main(["bench", str(SUITE), "--scheduler", "edf,rr-bundle", "--json", "--trace", str(trace),
                 "--gantt", str(gantt), "--sweep", "edges"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert [r["scheduler"] for r in report["results"]] == ["edf", "rr-bundle"]
    for r in report["results"]:
        assert set(r) >= {"admitted", "rejected", "pipelines", "totals", "bound", "sweep"}
        assert set(r["totals"]) >= {"reconfigurations", "port_busy_s", "exposed_reconfig_s", "slot_utilization",
                                    "dnn_images", "dnn_images_per_s", "sim_s", "wall_s"}
        for p in r["pipelines"].values():
            assert p["submitted"] == p["on_time"] + p["late"] + p["dropped"] + p["errors"]
        events = json.loads(Path(r["trace"]).read_text())["traceEvents"]
        tracks = {e["args"]["name"] for e in events if e["name"] == "thread_name"}
        assert "port" in tracks and {"slot 0", "pipeline edges"} <= tracks
        assert Path(r["gantt"]).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    edf, rr = report["results"]
    assert edf["sweep"]["max_pipelines"] >= rr["sweep"]["max_pipelines"]


def test_bench_rejects_bad_input(tmp_path, capsys):
    assert main(["bench", str(SUITE), "--scheduler", "edf,lottery"]) == 2
    assert "unknown scheduler 'lottery'" in capsys.readouterr().err
    bad = tmp_path / "w.toml"
    bad.write_text("seed = 1\n")
    assert main(["bench", str(bad)]) == 2
    assert "missing key platform" in capsys.readouterr().err

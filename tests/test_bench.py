"""fpgashare bench: the JSON report's shape, traces and Gantt files, sweeps, bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fpgashare.cli.main import main

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


def test_sweep_defaults_to_the_workload_sweep_key(tmp_path, capsys):
    assert main(["bench", str(SUITE), "--scheduler", "rr-bundle", "--json", "--sweep"]) == 0
    result, = json.loads(capsys.readouterr().out)["results"]
    assert result["sweep"]["pipeline"] == "edges"
    keyless = tmp_path / "w.toml"
    keyless.write_text("\n".join(line for line in SUITE.read_text().splitlines() if not line.startswith("sweep")))
    assert main(["bench", str(keyless), "--sweep"]) == 2
    assert "needs a sweep key" in capsys.readouterr().err


def test_bench_rejects_bad_input(tmp_path, capsys):
    assert main(["bench", str(SUITE), "--scheduler", "edf,lottery"]) == 2
    assert "unknown scheduler 'lottery'" in capsys.readouterr().err
    bad = tmp_path / "w.toml"
    bad.write_text("seed = 1\n")
    assert main(["bench", str(bad)]) == 2
    assert "missing key platform" in capsys.readouterr().err


TINY = '''platform = "zcu104"
seed = 1
duration_s = 0.01
[[pipeline]]
name = "edges"
class = "realtime"
period_ms = 2.0
frame = [120, 160]
stages = ["gauss3x3", "sobel_mag", "threshold"]
[[pipeline]]
name = "thumb"
class = "realtime"
period_ms = 2.0
frame = [120, 160]
stages = ["downscale2x", "box3x3"]
[[pipeline]]
name = "detector"
class = "besteffort"
model = "digits_cnn"
'''


@pytest.mark.rtl
def test_bench_on_the_rtl_agrees_with_the_twin(tmp_path):
    from fpgashare.cli.bench import bench

    path = tmp_path / "tiny.toml"
    path.write_text(TINY)
    sim = bench(str(path), ["edf", "rr-bundle"], backend="sim")["results"]
    model = bench(str(path), ["edf", "rr-bundle"], backend="model", streams=1)["results"]
    for a, b in zip(sim, model, strict=True):
        assert a["pipelines"].keys() == b["pipelines"].keys()
        for name in a["pipelines"]:
            assert a["pipelines"][name]["on_time"] == b["pipelines"][name]["on_time"] == 5
        assert a["totals"]["reconfigurations"] == b["totals"]["reconfigurations"]


TINY_DNN = '''platform = "zcu104"
seed = 2
duration_s = 0.008
[[pipeline]]
name = "edges"
class = "realtime"
period_ms = 4.0
frame = [120, 160]
stages = ["gauss3x3", "sobel_mag"]
[[pipeline]]
name = "detector"
class = "besteffort"
model = "digits_cnn"
'''


@pytest.mark.rtl
def test_dnn_backfill_on_the_rtl_agrees_with_the_twin(tmp_path):
    """DNN batches through the dnn_tile RTL (tiles programmed over AXI-Stream when a slot is new)
    take the time the twin predicts, so the same slots are lent and the same images counted: on one
    stream (each operation alone through the RTL) and on every stream (co-simulated: the DNN streams
    beside the frames)."""
    from fpgashare.cli.bench import bench

    path = tmp_path / "tiny_dnn.toml"
    path.write_text(TINY_DNN)
    for streams in (1, None):
        sim, = bench(str(path), ["edf"], backend="sim", streams=streams)["results"]
        model, = bench(str(path), ["edf"], backend="model", streams=streams)["results"]
        assert sim["pipelines"]["edges"]["on_time"] == model["pipelines"]["edges"]["on_time"] == 2
        assert sim["totals"]["reconfigurations"] == model["totals"]["reconfigurations"]
        assert model["totals"]["dnn_images"] > 0
        assert sim["totals"]["dnn_images"] == pytest.approx(model["totals"]["dnn_images"], rel=0.02)
        assert len(sim["totals"].get("streams", [{}])) == len(model["totals"].get("streams", [{}]))


def test_scorecard_reports_every_acceptance_number():
    from benchmarks.scheduler_scorecard import score

    row = score(SUITE.parent / "nh_720p60_pynq_z2.toml")
    assert row["edf_admitted_misses"] == 0
    assert row["rejected"] == ["thumb"] and row["rejected_set_misses"] > 0
    assert set(row["sweeps"]) == {"edges", "thumb"}
    edges = row["sweeps"]["edges"]
    assert edges["edf"] == 1 and edges["rr-bundle"] == 0 and edges["edf_over_rr_bundle"] == "inf"
    assert edges["stream_cap"] == 0              # thumb and edges together overfill the one stream
    assert 0 <= row["stalled_fraction"] <= row["exposed_fraction"] <= 1

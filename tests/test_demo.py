"""fpgashare demo end to end on the twin (the README's first command runs it on the RTL): the app
processes through the daemon, nothing missed, the digit reader scored against what the video
printed, the summary's shape, the files it writes, bad arguments."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fpgashare.cli import main


def test_demo_runs_three_apps_and_writes_its_files(tmp_path, capsys):
    assert main(["demo", "--backend", "model", "--frames", "6", "--size", "240x320", "--out", str(tmp_path),
                 "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    pipelines = summary["pipelines"]
    assert set(pipelines) == {"edges", "motion", "digits"} and summary["size"] == [240, 320]
    assert pipelines["edges"]["frames"] == pipelines["edges"]["on_time"] == 6
    assert pipelines["motion"]["frames"] == pipelines["motion"]["on_time"] == 5
    assert pipelines["digits"]["class"] == "besteffort" and pipelines["digits"]["frames"] > 0
    for p in pipelines.values():
        assert set(p) >= {"class", "frames", "on_time", "late", "dropped", "latency_ms_p99"}
    assert set(summary["totals"]) >= {"reconfigurations", "port_busy_s", "slot_utilization", "dnn_images_per_s"}
    ops = summary["totals"]["wall_by_operation"]
    assert ops["frames"]["count"] >= 11 and ops["loads"]["count"] == summary["totals"]["reconfigurations"]
    fabric = summary["totals"]["fabric"]
    assert 0 < fabric["slots_computing"] <= fabric["slots_computing_or_loading"] <= 1
    reader = summary["digit_reader"]                     # six printed digits a frame, scored on their truth
    assert reader["printed"] == 36 and reader["accuracy"] >= 0.95
    files = summary["files"]
    assert set(files) == {"trace", "gantt", "video"}
    tracks = {e["args"]["name"] for e in json.loads(Path(files["trace"]).read_text())["traceEvents"]
              if e["name"] == "thread_name"}
    assert {"port", "pipeline edges", "pipeline motion"} <= tracks
    assert Path(files["gantt"]).read_bytes()[:4] == b"\x89PNG" and Path(files["video"]).stat().st_size > 0


@pytest.mark.rtl
def test_demo_on_the_rtl_misses_nothing(tmp_path, capsys):
    """The README's command on the simulated board, shorter: every real-time frame on time."""
    assert main(["demo", "--frames", "3", "--size", "240x320", "--out", str(tmp_path), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["backend"] == "sim"
    for name, p in summary["pipelines"].items():
        assert p["late"] == p["dropped"] == 0, name
    assert summary["digit_reader"]["accuracy"] >= 0.95
    assert summary["totals"]["wall_by_operation"]["loads"]["count"] > 0


def test_demo_runs_the_apps_it_is_given(tmp_path, capsys):
    assert main(["demo", "--backend", "model", "--frames", "3", "--size", "240x320", "--apps",
                 "colour_track,corners", "--out", str(tmp_path), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert set(summary["pipelines"]) == {"colour", "corners"} and "digit_reader" not in summary
    assert all(p["on_time"] == p["frames"] == 3 for p in summary["pipelines"].values())


def test_demo_refuses_bad_arguments(tmp_path, capsys):
    assert main(["demo", "--frames", "1", "--out", str(tmp_path)]) == 2
    assert "--frames must be at least 2" in capsys.readouterr().err
    assert main(["demo", "--size", "480x641", "--out", str(tmp_path)]) == 2
    assert "multiples of 4" in capsys.readouterr().err
    assert main(["demo", "--apps", "edge_detect,paint", "--out", str(tmp_path)]) == 2
    assert "paint unknown" in capsys.readouterr().err

"""fpgashare demo end to end on the twin (the README's first command runs it on the RTL): the app
processes through the daemon, nothing missed, the digit reader scored against what the video
printed, the summary's shape, the files it writes, bad arguments."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fpgashare.cli.main import main


def test_demo_runs_four_apps_and_writes_its_files(tmp_path, capsys):
    assert main(["demo", "--backend", "model", "--frames", "6", "--size", "240x320", "--out", str(tmp_path),
                 "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    pipelines = summary["pipelines"]
    assert set(pipelines) == {"edges", "motion", "colour", "digits"} and summary["size"] == [240, 320]
    assert summary["platform"] == "zcu104-x4"           # four pixels per clock, every chain on it
    dilation = summary["dilation"]                       # chosen from the host's measured cost, said why
    assert dilation["wall_s_per_board_s"] >= dilation["floor"] and dilation["admitted"] and dilation["reason"]
    assert pipelines["edges"]["frames"] == pipelines["edges"]["on_time"] == 6
    assert pipelines["colour"]["frames"] == pipelines["colour"]["on_time"] == 6
    assert pipelines["motion"]["frames"] == pipelines["motion"]["on_time"] == 5
    assert pipelines["digits"]["class"] == "besteffort" and pipelines["digits"]["frames"] > 0
    for p in pipelines.values():
        assert set(p) >= {"class", "frames", "on_time", "late", "dropped", "latency_ms_p99"}
    assert set(summary["totals"]) >= {"reconfigurations", "port_busy_s", "slot_utilization", "dnn_images_per_s"}
    totals = summary["totals"]       # the workload's own loads for the order its frames ran: a floor
    assert 0 < totals["loads_order_floor"] <= totals["reconfigurations"] - totals["loads_for_dnn"]
    ops = summary["totals"]["wall_by_operation"]
    assert ops["frames"]["count"] >= 17 and ops["loads"]["count"] == summary["totals"]["reconfigurations"]
    fabric = summary["totals"]["fabric"]
    assert 0 < fabric["slots_computing"] <= fabric["slots_computing_or_loading"] <= 1
    reader = summary["digit_reader"]                     # six printed digits a frame, scored on their truth
    assert reader["printed"] == 36 and reader["accuracy"] >= 0.95
    files = summary["files"]
    assert set(files) == {"trace", "gantt", "video"}
    tracks = {e["args"]["name"] for e in json.loads(Path(files["trace"]).read_text())["traceEvents"]
              if e["name"] == "thread_name"}
    assert {"port", "pipeline edges", "pipeline motion", "pipeline colour"} <= tracks
    assert {f"stream {k}" for k in range(len(summary["streams"]["carried"]))} <= tracks
    _on_the_streams(summary)
    _counts_read_as_words(summary)
    assert Path(files["gantt"]).read_bytes()[:4] == b"\x89PNG" and Path(files["video"]).stat().st_size > 0


def _counts_read_as_words(summary: dict) -> None:
    """The text report's counts agree with their noun: one blob, two blobs."""
    from fpgashare.cli.demo import report_lines

    for n, words in ((1, "1 blob called no digit"), (2, "2 blobs called no digit")):
        summary["digit_reader"]["not_digits"] = n
        assert words in "\n".join(report_lines(summary))


def _on_the_streams(summary: dict) -> None:
    """The demo's daemon uses at most two streams, partitioned as the apps register (the planner
    bench uses decides how many), and every app's work is carried by one of them."""
    carried = summary["streams"]["carried"]
    assert 1 <= len(carried) <= 2 and set(carried) <= {"stream 0", "stream 1"}
    assert {p for pipelines in carried.values() for p in pipelines} == {"edges", "motion", "colour", "digits"}


@pytest.mark.rtl
def test_the_readme_demo_on_the_rtl(tmp_path):
    """The README's demo as ``fpgashare demo`` runs it (640x480, its default 30 frames, edges + motion +
    colour tracking + digits on the shell in RTL at four pixels per clock, two streams), the vision apps'
    frames dumped: every real-time frame on time and on the fabric, every output equal to OpenCV's on
    the same input (the colour tracker's centroids from the moments registers), the printed digits
    read, the fabric busy."""
    import cv2
    import numpy as np
    from fpgashare.apps import colour_track, edge_detect, motion
    from fpgashare.backends.simrun import resolve_chain
    from fpgashare.catalogue.vision_ref import chain_reference
    from fpgashare.cli.demo import APPS, DEMO_FRAMES, DEMO_PLATFORM, DEMO_SIZE, app_modules, run_demo

    n = DEMO_FRAMES
    summary = run_demo(DEMO_PLATFORM, tmp_path, DEMO_FRAMES, "sim", progress=False, size=DEMO_SIZE, apps=APPS,
                       dump=True)
    assert summary["backend"] == "sim" and summary["size"] == [480, 640] and summary["frames"] == n
    assert summary["platform"] == "zcu104-x4"
    assert sorted(summary["modules"]) == app_modules(APPS)
    # the board's dilation chosen from the host's measured cost: every chain whole on the fabric with
    # the host twice as slow as measured (runtime/daemon/host_dilation.py), however loaded the host
    assert summary["dilation"]["admitted"] and summary["dilation"]["wall_s_per_board_s"] >= 8
    pipelines = summary["pipelines"]
    assert pipelines["edges"]["frames"] == pipelines["edges"]["on_time"] == n
    assert pipelines["motion"]["frames"] == pipelines["motion"]["on_time"] == n - 1
    assert pipelines["digits"]["dropped"] == 0 and pipelines["digits"]["frames"] == summary["totals"]["dnn_images"]
    apps = summary["apps"]
    assert pipelines["colour"]["frames"] == pipelines["colour"]["on_time"] == n
    # the whole chains on the fabric
    assert {apps[a]["cpu_stages"] for a in ("edge_detect", "motion", "colour_track")} == {"-"}
    assert apps["colour_track"]["from_registers"] == str(n)
    assert apps["digits"]["cpu"] == "0"
    files = summary["files"]
    edges = np.load(files["dump_edge_detect"])
    stages = resolve_chain(edge_detect.CHAIN, {})
    assert len(edges["inputs"]) == n
    for frame, out in zip(edges["inputs"], edges["outputs"], strict=True):
        assert np.array_equal(out, chain_reference(stages, frame))
    moved = np.load(files["dump_motion"])
    stages = resolve_chain(motion.CHAIN, motion.PARAMS)
    assert len(moved["inputs"]) == n - 1
    for gray, previous, out in zip(moved["inputs"], moved["previous"], moved["outputs"], strict=True):
        assert np.array_equal(out, chain_reference(stages, np.dstack([gray, previous])))
    tracked = np.load(files["dump_colour_track"])
    assert len(tracked["inputs"]) == n
    for rgb, mask, centre in zip(tracked["inputs"], tracked["masks"], tracked["centroids"], strict=True):
        want = cv2.inRange(cv2.cvtColor(rgb, cv2.COLOR_RGB2HSV), colour_track.HSV_LO, colour_track.HSV_HI)
        assert np.array_equal(mask, want)
        m = cv2.moments(want, binaryImage=True)
        if m["m00"]:
            assert tuple(centre) == (m["m10"] / m["m00"], m["m01"] / m["m00"])
        else:                                             # the ball out of view
            assert np.isnan(centre).all()
    assert int(apps["colour_track"]["tracked"]) >= 1
    assert summary["digit_reader"]["printed"] == 6 * n and summary["digit_reader"]["accuracy"] >= 0.95
    totals = summary["totals"]
    assert totals["wall_by_operation"]["loads"]["count"] == totals["reconfigurations"] > 0
    # Over the span the Gantt shows: at four pixels per clock a 640x480 pass takes 0.4 ms, so the
    # slots compute a few per cent of the time and loads fill most of the rest (README, "The demo").
    fabric = totals["fabric"]
    assert fabric["slots_computing"] > 0.02 and fabric["slots_computing_or_loading"] >= 0.1
    assert fabric["port_loading"] >= 0.2
    assert Path(files["gantt"]).read_bytes()[:4] == b"\x89PNG"
    _on_the_streams(summary)


def test_demo_runs_the_apps_it_is_given(tmp_path, capsys):
    # fast9 fits no ZCU104 slot at four pixels per clock: it runs in zcu104-x4's fused region.
    assert main(["demo", "--backend", "model", "--frames", "3", "--apps", "corners", "--out", str(tmp_path),
                 "--json"]) == 0
    corners = json.loads(capsys.readouterr().out)["pipelines"]["corners"]
    assert corners["on_time"] == corners["frames"] == 3
    assert main(["demo", "--backend", "model", "--frames", "3", "--size", "240x320", "--apps",
                 "colour_track,corners", "--platform", "zcu104", "--out", str(tmp_path), "--json"]) == 0
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


def test_help_states_the_defaults_the_demo_runs(capsys):
    from fpgashare.cli.demo import DEMO_FRAMES, DEMO_STREAMS

    with pytest.raises(SystemExit):
        main(["demo", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert f"frames of the synthetic video (default {DEMO_FRAMES})" in text
    assert f"uses at once (default {DEMO_STREAMS})" in text

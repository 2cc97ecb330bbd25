"""The example apps against a daemon on the model backend: outputs equal OpenCV on the same frames,
and stages the fabric cannot take run on the daemon's CPU (the apps register with
``fallback="cpu"`` and say which stages ran there) without changing the answer."""

from __future__ import annotations

import cv2
import numpy as np
import pytest
from fpgashare.apps import colour_track, corners, edge_detect, motion, template_track
from fpgashare.backends.simrun import resolve_chain
from fpgashare.catalogue.vision_ref import chain_reference, fast9_keypoints
from fpgashare.client import connect

from tests.test_daemon import RunningDaemon


@pytest.fixture
def video(tmp_path):
    """Six frames of the demo's video (moving shapes and digits), as the apps read it."""
    from fpgashare.cli.demo_video import make_video

    return make_video(tmp_path / "shapes.avi", 6)


def _run(app, sock, video, tmp_path, capsys, size="120x160", extra=()):
    dump = tmp_path / f"{app.__name__}.npz"
    assert app.main(["--video", str(video), "--socket", str(sock), "--size", size, "--dump", str(dump),
                     "--out", str(tmp_path / "out.mp4"), *extra]) == 0
    summary = dict(item.split("=", 1) for item in capsys.readouterr().out.split())
    data = np.load(dump)
    return summary, data["inputs"], data["outputs"]


def test_edge_detect_equals_opencv(tmp_path, video, capsys):
    sock = tmp_path / "s.sock"
    with RunningDaemon(sock, dilation=10.0):
        summary, inputs, outputs = _run(edge_detect, sock, video, tmp_path, capsys)
    stages = resolve_chain(edge_detect.CHAIN, {})
    assert summary["frames"] == "6" and summary["on_time"] == "6" and summary["cpu_stages"] == "-"
    for frame, out in zip(inputs, outputs, strict=True):
        assert np.array_equal(out, chain_reference(stages, frame))
    assert (tmp_path / "out.mp4").stat().st_size > 0


def test_edge_detect_runs_in_passes_on_the_two_slot_board(tmp_path, video, capsys):
    """Four stages, two slots: the daemon runs each frame in two passes through memory, so no stage
    falls back to the CPU, and the output is OpenCV's."""
    sock = tmp_path / "s.sock"
    with RunningDaemon(sock, dilation=10.0, platform="pynq-z2"):
        summary, inputs, outputs = _run(edge_detect, sock, video, tmp_path, capsys)
        with connect(sock) as fpga:
            assert fpga.status()["pipelines"] == {}                  # the app's pipeline ended with it
    assert summary["cpu_stages"] == "-"
    stages = resolve_chain(edge_detect.CHAIN, {})
    for frame, out in zip(inputs, outputs, strict=True):
        assert np.array_equal(out, chain_reference(stages, frame))


@pytest.mark.parametrize(("board", "lacking"), [("zcu104", "sobel_mag"), ("pynq-z2", "rgb2gray")])
def test_edge_detect_on_a_board_lacking_a_module_runs_it_on_the_daemons_cpu(tmp_path, video, capsys, board,
                                                                            lacking):
    """The app unchanged; the daemon places the missing module's stage on its CPU, the app says so,
    and every frame is OpenCV's and on time."""
    from tests.test_cpu_fallback import without_modules

    sock = tmp_path / "s.sock"
    with RunningDaemon(sock, dilation=10.0, platform=without_modules(tmp_path, board, {lacking})):
        summary, inputs, outputs = _run(edge_detect, sock, video, tmp_path, capsys)
    assert lacking in summary["cpu_stages"].split(",")
    assert summary["frames"] == summary["on_time"] == "6"
    stages = resolve_chain(edge_detect.CHAIN, {})
    for frame, out in zip(inputs, outputs, strict=True):
        assert np.array_equal(out, chain_reference(stages, frame))


def _motion_reference(gray: np.ndarray, previous: np.ndarray) -> np.ndarray:
    diff = cv2.absdiff(gray, previous)
    mask = cv2.threshold(diff, motion.PARAMS["threshold"]["THRESH"], 255, cv2.THRESH_BINARY)[1]
    mask = cv2.erode(mask, np.ones((3, 3), np.uint8), borderType=cv2.BORDER_REPLICATE)
    return cv2.resize(mask, (mask.shape[1] // 2, mask.shape[0] // 2), interpolation=cv2.INTER_AREA)


def test_motion_runs_the_whole_chain_on_the_fpga(tmp_path, video, capsys):
    sock = tmp_path / "s.sock"
    with RunningDaemon(sock, dilation=10.0):
        summary, grays, masks = _run(motion, sock, video, tmp_path, capsys)
    previous = np.load(tmp_path / f"{motion.__name__}.npz")["previous"]
    assert summary["frames"] == "5" and summary["on_time"] == "5" and summary["cpu_stages"] == "-"
    for gray, prev, mask in zip(grays, previous, masks, strict=True):
        assert np.array_equal(mask, _motion_reference(gray, prev))
    assert masks.shape[1:] == (60, 80) and masks.any()


def test_motion_runs_in_passes_on_two_slots(tmp_path, video, capsys):
    """Four stages on the two-slot board: two passes through memory, nothing on the CPU."""
    sock = tmp_path / "s.sock"
    with RunningDaemon(sock, dilation=10.0, platform="pynq-z2"):
        summary, grays, masks = _run(motion, sock, video, tmp_path, capsys)
    previous = np.load(tmp_path / f"{motion.__name__}.npz")["previous"]
    assert summary["cpu_stages"] == "-" and summary["on_time"] == summary["frames"]
    for gray, prev, mask in zip(grays, previous, masks, strict=True):
        assert np.array_equal(mask, _motion_reference(gray, prev))


@pytest.mark.parametrize("board", ["zcu104", "pynq-z2"])
def test_colour_track_mask_and_centroid_equal_opencv(tmp_path, video, capsys, board):
    sock = tmp_path / "s.sock"
    with RunningDaemon(sock, dilation=10.0, platform=board):
        summary, inputs, _ = _run(colour_track, sock, video, tmp_path, capsys)
    data = np.load(tmp_path / f"{colour_track.__name__}.npz")
    assert summary["frames"] == "6" and summary["on_time"] == "6" and summary["cpu_stages"] == "-"
    assert int(summary["tracked"]) >= 4          # the ball is in view most of the six frames
    assert summary["from_registers"] == "6"      # each centroid from the moments module's registers
    for rgb, mask, centre in zip(inputs, data["masks"], data["centroids"], strict=True):
        want = cv2.inRange(cv2.cvtColor(rgb, cv2.COLOR_RGB2HSV), colour_track.HSV_LO, colour_track.HSV_HI)
        assert np.array_equal(mask, want)
        m = cv2.moments(want, binaryImage=True)
        if m["m00"]:
            assert tuple(centre) == (m["m10"] / m["m00"], m["m01"] / m["m00"])
        else:
            assert np.isnan(centre).all()


@pytest.mark.parametrize("board", ["zcu104", "pynq-z2"])
def test_corners_equal_opencv_fast(tmp_path, video, capsys, board):
    sock = tmp_path / "s.sock"
    with RunningDaemon(sock, dilation=10.0, platform=board):
        summary, inputs, _ = _run(corners, sock, video, tmp_path, capsys)
    responses = np.load(tmp_path / f"{corners.__name__}.npz")["responses"]
    assert summary["frames"] == "6" and summary["on_time"] == "6" and summary["cpu_stages"] == "-"
    total = 0
    for rgb, response in zip(inputs, responses, strict=True):
        gray = cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY)
        want = {(int(k.pt[0]), int(k.pt[1]), int(k.response))
                for k in cv2.FastFeatureDetector_create(20, True).detect(gray)}
        assert fast9_keypoints(response) == want
        total += len(want)
    assert int(summary["corners"]) == total > 0



@pytest.mark.parametrize("board", ["zcu104", "pynq-z2"])
def test_template_track_finds_what_opencv_finds(tmp_path, video, capsys, board):
    """Where the first frame's 7x7 patch matches best in every frame, from template_match's registers
    (on the PYNQ-Z2, whose slots cannot hold it, the daemon runs that stage on its CPU): the least
    sum of squared differences and its place, as cv2.matchTemplate(TM_SQDIFF) + minMaxLoc give them."""
    from fpgashare.catalogue.vision_ref import template_best

    sock = tmp_path / "s.sock"
    with RunningDaemon(sock, dilation=10.0, platform=board):
        summary, inputs, _ = _run(template_track, sock, video, tmp_path, capsys)
    data = np.load(tmp_path / f"{template_track.__name__}.npz")
    template = data["template"][0]
    assert summary["frames"] == summary["on_time"] == summary["tracked"] == "6"
    assert summary["cpu_stages"] == ("-" if board == "zcu104" else "template_match")
    for n, (rgb, (x, y, best)) in enumerate(zip(inputs, data["places"], strict=True)):
        gray = cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY)
        assert template_best(gray, template) == {"BEST": best, "BEST_X": x, "BEST_Y": y}
        scores = cv2.matchTemplate(gray, template, cv2.TM_SQDIFF)
        least, _, where, _ = cv2.minMaxLoc(scores)
        assert abs(best - least) <= 1e-6 * max(least, 1) + 64      # OpenCV's float sums round
        if np.count_nonzero(scores <= least + 64) == 1:               # a unique best place
            assert (x, y) == where
        if n == 0:
            assert best == 0                                          # the template is cut from this frame

def test_app_options_are_checked(tmp_path, video, capsys):
    sock = tmp_path / "s.sock"
    with RunningDaemon(sock, dilation=10.0):
        assert colour_track.main(["--video", "x.avi", "--socket", str(sock), "--hsv-lo", "1,2"]) == 2
        assert "give H,S,V as three integers" in capsys.readouterr().err
        assert corners.main(["--video", "x.avi", "--socket", str(sock), "--threshold", "300"]) == 2
        assert "--threshold 300" in capsys.readouterr().err
        assert template_track.main(["--video", str(video), "--socket", str(sock), "--size", "120x160",
                                    "--at", "155,10"]) == 2
        assert "--at 155,10: a 7x7 template must lie inside the 160x120 frame" in capsys.readouterr().err


def test_apps_name_bad_input(tmp_path, capsys):
    sock = tmp_path / "s.sock"
    with RunningDaemon(sock, dilation=10.0):
        assert edge_detect.main(["--video", str(tmp_path / "none.avi"), "--socket", str(sock)]) == 2
        assert "cannot open" in capsys.readouterr().err
        assert edge_detect.main(["--video", "x.avi", "--socket", str(sock), "--size", "big"]) == 2
        assert "--size must be ROWSxCOLS" in capsys.readouterr().err
    assert edge_detect.main(["--video", "x.avi", "--socket", str(sock)]) == 2
    assert "cannot reach the fpgashare daemon" in capsys.readouterr().err


@pytest.fixture
def digit_video(tmp_path):
    """Frames with a few white digits drawn on dark ground, moving a little."""
    path = tmp_path / "digits.avi"
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"MJPG"), 30, (160, 120))
    for k in range(3):
        frame = np.full((120, 160, 3), 10, np.uint8)
        for i, digit in enumerate("307"):
            cv2.putText(frame, digit, (15 + 50 * i + 2 * k, 80), cv2.FONT_HERSHEY_SIMPLEX, 1.6, (255, 255, 255), 4)
        writer.write(frame)
    writer.release()
    return path


@pytest.mark.parametrize("board", ["zcu104", "pynq-z2"])
def test_digits_reads_crops_with_the_dnn_tiles(tmp_path, digit_video, capsys, board):
    import json

    from fpgashare.apps import digits
    from fpgashare.dnn.models import printed_digits
    from fpgashare.dnn.reference import logits

    sock = tmp_path / "s.sock"
    with RunningDaemon(sock, dilation=10.0, platform=board):
        summary, _, _ = _run(digits, sock, digit_video, tmp_path, capsys,
                             extra=["--readings", str(tmp_path / "readings.json")])
    data = np.load(tmp_path / f"{digits.__name__}.npz")
    assert summary["frames"] == "3" and summary["digits"] == "9" and summary["cpu"] == "0"
    assert np.array_equal(data["logits"], logits(printed_digits(), data["crops"]))    # bit for bit
    readings = json.loads((tmp_path / "readings.json").read_text())
    assert [r["label"] for r in readings] == [3, 0, 7] * 3                               # read right
    assert [r["frame"] for r in readings] == [0] * 3 + [1] * 3 + [2] * 3


def test_digits_falls_back_to_the_cpu_without_dnn_tiles(tmp_path, digit_video, capsys, caplog):
    from fpgashare.apps import digits

    from tests.test_cpu_fallback import without_modules

    sock = tmp_path / "s.sock"
    with RunningDaemon(sock, dilation=10.0, platform=str(without_modules(tmp_path, "pynq-z2", {"dnn_tile"}))):
        summary, _, _ = _run(digits, sock, digit_video, tmp_path, capsys)
    assert summary["cpu"] == summary["digits"] == "9"
    assert "the daemon runs printed_digits on its CPU" in caplog.text


@pytest.mark.parametrize("app", ["colour_track", "corners", "digits", "edge_detect", "motion", "template_track"])
def test_help_describes_the_app_in_whole_sentences(app, capsys):
    """--help opens with the module docstring's first paragraph, whole, not cut at its first line."""
    import importlib

    module = importlib.import_module(f"fpgashare.apps.{app}")
    with pytest.raises(SystemExit):
        module.main(["--help"])
    first = " ".join(module.__doc__.split("\n\n")[0].split())
    assert first in " ".join(capsys.readouterr().out.split())

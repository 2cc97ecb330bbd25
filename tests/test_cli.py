"""The command line: sim run equals OpenCV; inspect's verdicts and exit codes; bad input."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from fpgashare.catalogue.modules import resolve_stage
from fpgashare.catalogue.vision_ref import chain_reference
from fpgashare.cli.main import main

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.rtl
def test_sim_run_equals_opencv(tmp_path, capsys):
    import cv2

    frame = np.random.default_rng(4).integers(0, 256, (37, 53), dtype=np.uint8)
    cv2.imwrite(str(tmp_path / "in.png"), frame)
    code = main(["sim", "run", "--platform", str(REPO / "bitstreams" / "pynq-z2.toml"), "--chain", "box3x3,threshold",
                 "--set", "threshold.THRESH=90", "--set", "threshold.TYPE=3",
                 "--in", str(tmp_path / "in.png"), "--out", str(tmp_path / "out.png"), "--json"])
    assert code == 0
    info = json.loads(capsys.readouterr().out)
    assert {"pixels", "load_cycles", "compute_cycles", "wall_s", "slots"} <= set(info)
    assert info["pixels"] == 37 * 53 and set(info["slots"]) == {"box3x3", "threshold"}
    assert sorted(info["slots"].values()) == ["composable/pr_0", "composable/pr_1"]     # a slot each
    stages = [resolve_stage("box3x3"), resolve_stage("threshold", {"THRESH": 90, "TYPE": 3})]
    got = cv2.imread(str(tmp_path / "out.png"), cv2.IMREAD_UNCHANGED)
    assert np.array_equal(got, chain_reference(stages, frame))


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--chain", "gauss3x3,fft"], "unknown module or preset 'fft'"),
        (["--chain", "template_match"], "platform has no module 'template_match'"),
        (["--chain", "gauss3x3", "--set", "gauss3x3.BOGUS=1"], "has no register 'BOGUS'"),
        (["--chain", "gauss3x3", "--set", "threshold.THRESH=1"], "not a stage of the chain"),
        (["--chain", "gauss3x3", "--set", "gauss3x3.K0=x"], "'x' is not an integer"),
        (["--chain", "sobel_mag,rgb2gray"], "must be the first stage"),
    ],
)
def test_sim_run_bad_arguments(tmp_path, capsys, args, message):
    import cv2

    cv2.imwrite(str(tmp_path / "in.png"), np.zeros((16, 16), np.uint8))
    code = main(["sim", "run", "--platform", "pynq-z2", *args, "--in", str(tmp_path / "in.png"),
                 "--out", str(tmp_path / "o.png")])
    assert code == 2
    assert message in capsys.readouterr().err


def test_sim_run_bad_images(tmp_path, capsys):
    (tmp_path / "junk.png").write_bytes(b"not an image")
    assert main(["sim", "run", "--platform", "pynq-z2", "--chain", "gauss3x3", "--in",
                 str(tmp_path / "junk.png"), "--out", str(tmp_path / "o.png")]) == 2
    assert "not an image OpenCV can read" in capsys.readouterr().err
    assert main(["sim", "run", "--platform", "pynq-z2", "--chain", "gauss3x3", "--in",
                 str(tmp_path / "missing.png"), "--out", str(tmp_path / "o.png")]) == 2
    assert "no such file" in capsys.readouterr().err


def test_inspect_reports_and_rejects(tmp_path, capsys):
    assert main(["bitstream", "build", "pynq-z2", "--out", str(tmp_path)]) == 0
    capsys.readouterr()
    good = tmp_path / "composable_pr_1__sobel_mag.bit"
    assert main(["bitstream", "inspect", str(good), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert (info["slot"], info["module"], info["frames"], info["verdict"]) == \
        ("composable/pr_1", "sobel_mag", 1650, "OK")
    assert info["expected_load_s"] == pytest.approx(166683 * 4 / 400e6)
    data = bytearray(good.read_bytes())
    data[len(data) - 300_000] ^= 0x10
    bad = tmp_path / "bad.bit"
    bad.write_bytes(bytes(data))
    assert main(["bitstream", "inspect", str(bad)]) == 1
    assert "CRC_MISMATCH" in capsys.readouterr().err
    (tmp_path / "empty.bit").write_bytes(b"")
    assert main(["bitstream", "inspect", str(tmp_path / "empty.bit")]) == 2
    assert "header magic is missing" in capsys.readouterr().err
    assert main(["bitstream", "inspect", str(tmp_path / "nope.bit")]) == 2
    assert "cannot read" in capsys.readouterr().err

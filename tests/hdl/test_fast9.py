"""fast9: the keypoints and responses of cv2.FastFeatureDetector_create(THRESH, nonmaxSuppression=True)
on random, blurred and sparse frames of odd and even sizes (smaller than the circle too), with input
gaps and output backpressure."""

from __future__ import annotations

import os

import cocotb
import cv2
import numpy as np
import pytest
from fpgashare.catalogue.modules import resolve_stage
from fpgashare.catalogue.vision_ref import fast9_keypoints, stage_reference

from tests.hdl.vision_tb import VisionTB, run_module


def make_frame(rng: np.random.Generator, n: int, rows: int, cols: int) -> np.ndarray:
    image = rng.integers(0, 256, (rows, cols), dtype=np.uint8)
    if n % 3 == 1:
        image = cv2.GaussianBlur(image, (5, 5), 0)
    if n % 3 == 2:
        image = ((rng.random((rows, cols)) < 0.1) * 200 + 20).astype(np.uint8)
    return image


@cocotb.test(timeout_time=100, timeout_unit="ms")
async def matches_opencv(dut):
    tb = VisionTB(dut, seed=131)
    await tb.reset()
    rng = np.random.default_rng(131)
    sizes = [(17, 9), (7, 7), (3, 2), (1, 5), (31, 12), (24, 33), (40, 41), (9, 60)]
    for n, (rows, cols) in enumerate(sizes):
        tb.set_pressure(input_gaps=0.3 * (n % 2), output_stalls=0.4 * ((n + 1) % 2))
        frame = make_frame(rng, n, rows, cols)
        threshold = int(rng.integers(0, 50))
        stage = resolve_stage("fast9", {"THRESH": threshold})
        await tb.program(stage, rows, cols)
        got = await tb.run_frame(frame, (rows, cols))
        want = {(int(k.pt[0]), int(k.pt[1]), int(k.response))
                for k in cv2.FastFeatureDetector_create(threshold, True).detect(frame)}
        assert fast9_keypoints(got) == want, f"{rows}x{cols} t={threshold}"
        assert np.array_equal(got, stage_reference(stage, frame))
    assert await tb.read_reg(4) == len(sizes), "FRAMES counter"
    assert await tb.read_reg(3) == 0, "no framing error expected"


@cocotb.test(timeout_time=600, timeout_unit="ms", skip=os.environ.get("FAST9_BIG") != "1")
async def full_hd_frame(dut):
    tb = VisionTB(dut, seed=132)
    await tb.reset()
    tb.set_pressure(input_gaps=0.1, output_stalls=0.1)
    frame = cv2.GaussianBlur(np.random.default_rng(132).integers(0, 256, (1080, 1920), dtype=np.uint8), (3, 3), 0)
    stage = resolve_stage("fast9", {"THRESH": 20})
    await tb.program(stage, 1080, 1920)
    got = await tb.run_frame(frame, (1080, 1920))
    assert np.array_equal(got, stage_reference(stage, frame))


@pytest.mark.rtl
@pytest.mark.parametrize("nppc", [1, 4])
def test_fast9_rtl(nppc):
    tests, failed = run_module("fast9", __name__, nppc, env={"FAST9_BIG": os.environ.get("FAST9_BIG", "0")})
    assert tests >= 1 and failed == 0

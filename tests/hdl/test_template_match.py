"""template_match: BEST, BEST_X, BEST_Y equal cv2.minMaxLoc(cv2.matchTemplate(frame, template,
cv2.TM_SQDIFF)) after each frame (the numpy golden in exact integers), on random, textured and
flat frames of odd sizes (smaller than the template too), with input gaps and output
backpressure; the pixels pass through unchanged."""

from __future__ import annotations

import os

import cocotb
import cv2
import numpy as np
import pytest
from fpgashare.catalogue.modules import TEMPLATE_SIDE, resolve_stage, template_registers
from fpgashare.catalogue.vision_ref import template_best

from tests.hdl.vision_tb import VisionTB, run_module


async def read_best(tb: VisionTB) -> dict[str, int]:
    kind = resolve_stage("template_match").kind
    return {reg: await tb.read_reg(kind.reg_index(reg)) for reg in ("BEST", "BEST_X", "BEST_Y")}


def make_case(rng: np.random.Generator, n: int, rows: int, cols: int) -> tuple[np.ndarray, np.ndarray]:
    """A frame and a template: cut from the frame and disturbed a little, or random, or flat (ties)."""
    frame = rng.integers(0, 256, (rows, cols), dtype=np.uint8)
    if n % 3 == 1:
        frame = cv2.GaussianBlur(frame, (5, 5), 0)
    t = TEMPLATE_SIDE
    if n % 3 == 2 or rows < t or cols < t:
        return frame, rng.integers(0, 256, (t, t), dtype=np.uint8)
    y, x = int(rng.integers(0, rows - t + 1)), int(rng.integers(0, cols - t + 1))
    template = frame[y:y + t, x:x + t].astype(np.int16) + rng.integers(-3, 4, (t, t))
    return frame, np.clip(template, 0, 255).astype(np.uint8)


def check_opencv(frame: np.ndarray, template: np.ndarray, best: dict[str, int]) -> None:
    """Where the minimum is unique, OpenCV's location is the golden's (its float scores may round)."""
    if min(frame.shape) < TEMPLATE_SIDE:
        return
    scores = cv2.matchTemplate(frame, template, cv2.TM_SQDIFF)
    _, _, (x, y), _ = cv2.minMaxLoc(scores)
    exact = np.lib.stride_tricks.sliding_window_view(frame.astype(np.int64), template.shape)
    exact = ((exact - template.astype(np.int64)) ** 2).sum(axis=(2, 3))
    if np.count_nonzero(exact <= exact.min() + 2) == 1:
        assert (x, y) == (best["BEST_X"], best["BEST_Y"])


@cocotb.test(timeout_time=200, timeout_unit="ms")
async def matches_opencv(dut):
    tb = VisionTB(dut, seed=141)
    await tb.reset()
    rng = np.random.default_rng(141)
    sizes = [(17, 9), (7, 7), (6, 20), (3, 2), (31, 12), (24, 33), (13, 41), (9, 60), (20, 18)]
    for n, (rows, cols) in enumerate(sizes):
        tb.set_pressure(input_gaps=0.3 * (n % 2), output_stalls=0.4 * ((n + 1) % 2))
        frame, template = make_case(rng, n, rows, cols)
        if n == 8:
            frame[:], template[:] = 9, 9          # every position scores 0: the first one wins
        stage = resolve_stage("template_match", template_registers(template))
        await tb.program(stage, rows, cols)
        got = await tb.run_frame(frame, (rows, cols))
        assert np.array_equal(got, frame), "pixels must pass through"
        best = await read_best(tb)
        assert best == template_best(frame, template), (rows, cols)
        check_opencv(frame, template, best)
    assert await tb.read_reg(4) == len(sizes), "FRAMES counts completed frames"
    assert await tb.read_reg(3) == 0


@cocotb.test(timeout_time=900, timeout_unit="ms", skip=os.environ.get("TEMPLATE_BIG") != "1")
async def full_hd_frame(dut):
    tb = VisionTB(dut, seed=142)
    await tb.reset()
    tb.set_pressure(input_gaps=0.1, output_stalls=0.1)
    frame, template = make_case(np.random.default_rng(142), 1, 1080, 1920)
    stage = resolve_stage("template_match", template_registers(template))
    await tb.program(stage, 1080, 1920)
    got = await tb.run_frame(frame, (1080, 1920))
    assert np.array_equal(got, frame)
    best = await read_best(tb)
    assert best == template_best(frame, template)
    check_opencv(frame, template, best)


@pytest.mark.rtl
@pytest.mark.parametrize("nppc", [1, 4])
def test_template_match_rtl(nppc):
    tests, failed = run_module("template_match", __name__, nppc,
                               env={"TEMPLATE_BIG": os.environ.get("TEMPLATE_BIG", "0")})
    assert tests >= 1 and failed == 0

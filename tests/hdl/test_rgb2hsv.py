"""rgb2hsv: bit-exact with cv2.cvtColor(COLOR_RGB2HSV) on random frames and on colours chosen to hit
every branch (grays, each channel the maximum, ties), with input gaps and output backpressure."""

from __future__ import annotations

import cocotb
import numpy as np
import pytest
from fpgashare.catalogue.modules import resolve_stage
from fpgashare.catalogue.vision_ref import stage_reference

from tests.hdl.vision_tb import VisionTB, run_module


def corner_colours() -> np.ndarray:
    """Colours at the edges of the rule: grays, pure primaries, two-way and three-way maximum ties."""
    values = [0, 1, 2, 127, 128, 254, 255]
    grid = np.array([(r, g, b) for r in values for g in values for b in values], dtype=np.uint8)
    return grid.reshape(-1, 7, 3)     # 49 rows of 7 pixels


@cocotb.test(timeout_time=40, timeout_unit="ms")
async def matches_opencv(dut):
    tb = VisionTB(dut, seed=81)
    await tb.reset()
    rng = np.random.default_rng(81)
    stage = resolve_stage("rgb2hsv")
    frames = [corner_colours()] + [rng.integers(0, 256, (rows, cols, 3), dtype=np.uint8)
                                   for rows, cols in [(9, 17), (1, 1), (8, 8), (5, 13), (31, 12)]]
    for n, frame in enumerate(frames):
        tb.set_pressure(input_gaps=0.3 * (n % 2), output_stalls=0.4 * ((n + 1) % 2))
        await tb.program(stage, *frame.shape[:2])
        got = await tb.run_frame(frame, (*frame.shape[:2], 3))
        want = stage_reference(stage, frame)
        bad = np.argwhere(np.any(got != want, axis=-1))[:5]
        assert np.array_equal(got, want), \
            f"{frame.shape}: at {bad.tolist()} got {got[tuple(bad.T)]} want {want[tuple(bad.T)]}"
    assert await tb.read_reg(4) == len(frames)


@pytest.mark.rtl
@pytest.mark.parametrize("nppc", [1, 4])
def test_rgb2hsv_rtl(nppc):
    # At 4 pixels per beat each pixel takes a 32-bit lane of a 128-bit beat.
    tests, failed = run_module("rgb2hsv", __name__, nppc, parameters={"DATA_W": 24}, lane_bits=32)
    assert tests == 1 and failed == 0

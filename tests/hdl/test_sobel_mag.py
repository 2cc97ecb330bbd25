"""sobel_mag: |Gx|+|Gy| saturated, bit-exact against OpenCV's Sobel, with backpressure."""

from __future__ import annotations

import random

import cocotb
import numpy as np
import pytest
from fpgashare.catalogue.modules import resolve_stage
from fpgashare.catalogue.vision_ref import stage_reference

from tests.hdl.vision_tb import VisionTB, run_module, sizes_to_test


@cocotb.test(timeout_time=20, timeout_unit="ms")
async def matches_opencv(dut):
    tb = VisionTB(dut, seed=21)
    await tb.reset()
    rng = np.random.default_rng(21)
    stage = resolve_stage("sobel_mag")
    sizes = sizes_to_test(random.Random(21), 4)
    for n, (rows, cols) in enumerate(sizes):
        tb.set_pressure(input_gaps=0.25 * (n % 3 == 1), output_stalls=0.35 * (n % 3 == 2))
        frame = rng.integers(0, 256, (rows, cols), dtype=np.uint8)
        if n == 1:
            frame[:, ::2] = 255  # steep edges saturate |Gx| + |Gy|
            frame[:, 1::2] = 0
        await tb.program(stage, rows, cols)
        got = await tb.run_frame(frame, (rows, cols))
        assert np.array_equal(got, stage_reference(stage, frame)), f"{rows}x{cols}"
    assert await tb.read_reg(4) == len(sizes)


@pytest.mark.rtl
@pytest.mark.parametrize("nppc", [1, 4])
def test_sobel_mag_rtl(nppc):
    tests, failed = run_module("sobel_mag", __name__, nppc)
    assert tests == 1 and failed == 0

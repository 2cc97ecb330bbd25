"""downscale2x: 2x2 mean equal to cv2.resize INTER_AREA (odd edges cropped), with backpressure."""

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
    tb = VisionTB(dut, seed=41)
    await tb.reset()
    rng = np.random.default_rng(41)
    stage = resolve_stage("downscale2x")
    sizes = [s for s in sizes_to_test(random.Random(41), 6) if s[0] >= 2 and s[1] >= 2]
    for n, (rows, cols) in enumerate(sizes):
        tb.set_pressure(input_gaps=0.3 * (n % 2), output_stalls=0.5 * ((n + 1) % 2))
        frame = rng.integers(0, 256, (rows, cols), dtype=np.uint8)
        await tb.program(stage, rows, cols)
        out_shape = stage.kind.output_shape(rows, cols)
        got = await tb.run_frame(frame, out_shape)
        assert np.array_equal(got, stage_reference(stage, frame)), f"{rows}x{cols}"
    assert await tb.read_reg(4) == len(sizes)
    assert await tb.read_reg(3) == 0


@pytest.mark.rtl
@pytest.mark.parametrize("nppc", [1, 4])
def test_downscale2x_rtl(nppc):
    tests, failed = run_module("downscale2x", __name__, nppc)
    assert tests == 1 and failed == 0

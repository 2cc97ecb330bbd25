"""rgb2gray: bit-exact with cv2.cvtColor(COLOR_RGB2GRAY); the 14-bit legacy rule via registers."""

from __future__ import annotations

import cocotb
import numpy as np
import pytest
from fpgashare.catalogue.modules import resolve_stage
from fpgashare.catalogue.vision_ref import stage_reference

from tests.hdl.vision_tb import VisionTB, run_module


@cocotb.test(timeout_time=20, timeout_unit="ms")
async def matches_opencv(dut):
    tb = VisionTB(dut, seed=51)
    await tb.reset()
    rng = np.random.default_rng(51)
    stages = [resolve_stage("rgb2gray"),
              resolve_stage("rgb2gray", {"CR": 4899, "CG": 9617, "CB": 1868, "SHIFT": 14})]
    for n, (rows, cols) in enumerate([(9, 17), (1, 1), (8, 8), (5, 13)]):
        for stage in stages:
            tb.set_pressure(input_gaps=0.3 * (n % 2), output_stalls=0.3 * ((n + 1) % 2))
            frame = rng.integers(0, 256, (rows, cols, 3), dtype=np.uint8)
            frame[0, 0] = (255, 255, 255)
            await tb.program(stage, rows, cols)
            got = await tb.run_frame(frame, (rows, cols))
            assert np.array_equal(got, stage_reference(stage, frame)), f"{rows}x{cols} {dict(stage.regs)}"


@pytest.mark.rtl
@pytest.mark.parametrize("nppc", [1, 4])
def test_rgb2gray_rtl(nppc):
    # At 4 pixels per beat each pixel takes a 32-bit lane of a 128-bit beat.
    tests, failed = run_module("rgb2gray", __name__, nppc, parameters={"DATA_W": 24}, lane_bits=32)
    assert tests == 1 and failed == 0

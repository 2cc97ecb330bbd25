"""absdiff: |a - b| of the two frames in one beat, bit-exact with cv2.absdiff, with input gaps and
output backpressure."""

from __future__ import annotations

import random

import cocotb
import numpy as np
import pytest
from fpgashare.catalogue.modules import resolve_stage
from fpgashare.catalogue.vision_ref import stage_reference

from tests.hdl.vision_tb import VisionTB, run_module, sizes_to_test


@cocotb.test(timeout_time=40, timeout_unit="ms")
async def matches_opencv(dut):
    tb = VisionTB(dut, seed=111)
    await tb.reset()
    rng = np.random.default_rng(111)
    stage = resolve_stage("absdiff")
    sizes = sizes_to_test(random.Random(111), 4)
    for n, (rows, cols) in enumerate(sizes):
        tb.set_pressure(input_gaps=0.3 * (n % 2), output_stalls=0.4 * ((n + 1) % 2))
        frame = rng.integers(0, 256, (rows, cols, 2), dtype=np.uint8)
        frame[0, 0] = (0, 255)
        frame[-1, -1] = (255, 0)
        await tb.program(stage, rows, cols)
        got = await tb.run_frame(frame, (rows, cols))
        assert np.array_equal(got, stage_reference(stage, frame)), f"{rows}x{cols}"
    assert await tb.read_reg(4) == len(sizes)


@pytest.mark.rtl
@pytest.mark.parametrize("nppc", [1, 4])
def test_absdiff_rtl(nppc):
    # At 4 pixels per beat each pixel takes a 32-bit lane of a 128-bit beat.
    tests, failed = run_module("absdiff", __name__, nppc, parameters={"DATA_W": 16}, lane_bits=32)
    assert tests == 1 and failed == 0

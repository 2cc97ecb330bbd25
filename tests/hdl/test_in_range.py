"""in_range: bit-exact with cv2.inRange on 3-channel frames for random bounds (including empty and
single-value ranges), with input gaps and output backpressure."""

from __future__ import annotations

import cocotb
import numpy as np
import pytest
from fpgashare.catalogue.modules import resolve_stage
from fpgashare.catalogue.vision_ref import stage_reference

from tests.hdl.vision_tb import VisionTB, run_module


@cocotb.test(timeout_time=40, timeout_unit="ms")
async def matches_opencv(dut):
    tb = VisionTB(dut, seed=91)
    await tb.reset()
    rng = np.random.default_rng(91)
    for n in range(10):
        tb.set_pressure(input_gaps=0.3 * (n % 2), output_stalls=0.4 * ((n + 1) % 2))
        rows, cols = int(rng.integers(1, 14)), int(rng.integers(1, 20))
        bounds = {}
        for k in range(3):
            lo, hi = sorted(int(v) for v in rng.integers(0, 256, 2))
            if n == 3 and k == 1:
                lo, hi = hi + 1 if hi < 255 else 255, lo      # empty range: nothing is in it
            if n == 4:
                lo = hi = 128                                  # a single value
            bounds[f"LO{k}"], bounds[f"HI{k}"] = lo, hi
        stage = resolve_stage("in_range", bounds)
        # Coarse levels so that many pixels sit exactly on a bound.
        frame = rng.choice(np.arange(0, 256, 16, dtype=np.uint8), size=(rows, cols, 3))
        frame[0, 0] = [bounds["LO0"], bounds["LO1"], bounds["LO2"]]
        await tb.program(stage, rows, cols)
        got = await tb.run_frame(frame, (rows, cols))
        assert np.array_equal(got, stage_reference(stage, frame)), f"{rows}x{cols} {bounds}"
    assert await tb.read_reg(4) == 10


@pytest.mark.rtl
@pytest.mark.parametrize("nppc", [1, 4])
def test_in_range_rtl(nppc):
    # At 4 pixels per beat each pixel takes a 32-bit lane of a 128-bit beat.
    tests, failed = run_module("in_range", __name__, nppc, parameters={"DATA_W": 24}, lane_bits=32)
    assert tests == 1 and failed == 0

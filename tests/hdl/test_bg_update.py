"""bg_update: b' = b + ((x - b) >> K) bit-exact with the numpy golden for every K, and the
background kept between frames (each frame's output is the next frame's background), with input
gaps and output backpressure."""

from __future__ import annotations

import cocotb
import numpy as np
import pytest
from fpgashare.catalogue.modules import resolve_stage
from fpgashare.catalogue.vision_ref import bg_update_reference, stage_reference

from tests.hdl.vision_tb import VisionTB, run_module


@cocotb.test(timeout_time=40, timeout_unit="ms")
async def every_k_matches_numpy(dut):
    tb = VisionTB(dut, seed=121)
    await tb.reset()
    rng = np.random.default_rng(121)
    for k in range(16):
        tb.set_pressure(input_gaps=0.3 * (k % 2), output_stalls=0.4 * ((k + 1) % 2))
        rows, cols = int(rng.integers(1, 10)), int(rng.integers(1, 17))
        stage = resolve_stage("bg_update", {"K": k})
        frame = rng.integers(0, 256, (rows, cols, 2), dtype=np.uint8)
        frame[0, 0] = (0, 255)
        await tb.program(stage, rows, cols)
        got = await tb.run_frame(frame, (rows, cols))
        assert np.array_equal(got, stage_reference(stage, frame)), f"K={k} {rows}x{cols}"


@cocotb.test(timeout_time=40, timeout_unit="ms")
async def background_follows_a_sequence(dut):
    tb = VisionTB(dut, seed=122)
    await tb.reset()
    tb.set_pressure(input_gaps=0.2, output_stalls=0.2)
    rng = np.random.default_rng(122)
    rows, cols, k = 7, 11, 2
    stage = resolve_stage("bg_update", {"K": k})
    background = want = rng.integers(0, 256, (rows, cols), dtype=np.uint8)
    for _ in range(5):
        x = rng.integers(0, 256, (rows, cols), dtype=np.uint8)
        await tb.program(stage, rows, cols)
        background = await tb.run_frame(np.dstack([x, background]), (rows, cols))
        want = bg_update_reference(x, want, k)
        assert np.array_equal(background, want)


@pytest.mark.rtl
@pytest.mark.parametrize("nppc", [1, 4])
def test_bg_update_rtl(nppc):
    # At 4 pixels per beat each pixel takes a 32-bit lane of a 128-bit beat.
    tests, failed = run_module("bg_update", __name__, nppc, parameters={"DATA_W": 16}, lane_bits=32)
    assert tests == 2 and failed == 0

"""conv3x3: every preset and random kernels bit-exact against OpenCV/numpy, with backpressure."""

from __future__ import annotations

import random

import cocotb
import numpy as np
import pytest
from fpgashare.catalogue.modules import PRESETS, resolve_stage
from fpgashare.catalogue.vision_ref import conv3x3_reference, stage_reference

from tests.hdl.vision_tb import VisionTB, run_module, sizes_to_test


@cocotb.test(timeout_time=20, timeout_unit="ms")
async def presets_match_opencv(dut):
    tb = VisionTB(dut, seed=11)
    await tb.reset()
    rng = np.random.default_rng(11)
    for n, (rows, cols) in enumerate(sizes_to_test(random.Random(11), 3)):
        for name in PRESETS:
            tb.set_pressure(input_gaps=0.3 * (n % 2), output_stalls=0.4 * ((n + 1) % 2))
            stage = resolve_stage(name)
            frame = rng.integers(0, 256, (rows, cols), dtype=np.uint8)
            await tb.program(stage, rows, cols)
            got = await tb.run_frame(frame, (rows, cols))
            want = stage_reference(stage, frame)
            assert np.array_equal(got, want), f"{name} {rows}x{cols}: {np.argwhere(got != want)[:5]}"


@cocotb.test(timeout_time=20, timeout_unit="ms")
async def random_kernels_and_saturation(dut):
    tb = VisionTB(dut, seed=12)
    await tb.reset()
    rng = np.random.default_rng(12)
    tb.set_pressure(input_gaps=0.2, output_stalls=0.2)
    for _ in range(6):
        rows, cols = int(rng.integers(3, 14)), int(rng.integers(3, 20))
        overrides = {f"K{n}": int(rng.integers(-128, 128)) for n in range(9)}
        overrides.update(MUL=int(rng.integers(1, 300)), SHIFT=int(rng.integers(0, 12)),
                         FLAGS=int(rng.integers(0, 2)))
        stage = resolve_stage("conv3x3", overrides)
        # Extremes as well as noise: flat 0 and 255 regions drive the accumulator to its corners.
        frame = rng.choice([0, 255, 128, 1], size=(rows, cols)).astype(np.uint8)
        frame[rows // 2:] = rng.integers(0, 256, (rows - rows // 2, cols), dtype=np.uint8)
        await tb.program(stage, rows, cols)
        got = await tb.run_frame(frame, (rows, cols))
        assert np.array_equal(got, conv3x3_reference(frame, stage.regs)), overrides
    assert await tb.read_reg(4) == 6, "FRAMES counter"
    assert await tb.read_reg(3) == 0, "no framing error expected"


@cocotb.test(timeout_time=20, timeout_unit="ms")
async def framing_error_is_flagged(dut):
    tb = VisionTB(dut, seed=13)
    await tb.reset()
    stage = resolve_stage("gauss3x3")
    await tb.program(stage, 4, 8)
    # Rows of 6 pixels (one beat of 4 at NPPC 4) where 8 (two beats) are expected: TLAST comes early.
    cols = 6 if tb.nppc == 1 else tb.nppc
    frame = np.arange(4 * cols, dtype=np.uint8).reshape(4, cols)
    for r in range(4):
        await tb.source.send(frame[r].tobytes())
    await tb.source.wait()
    assert (await tb.read_reg(3)) & 1 == 1


@pytest.mark.rtl
@pytest.mark.parametrize("nppc", [1, 4])
def test_conv3x3_rtl(nppc):
    tests, failed = run_module("conv3x3", __name__, nppc)
    assert tests == 3 and failed == 0, f"{failed} of {tests} cocotb tests failed"

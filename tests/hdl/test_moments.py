"""moments: m00, m10, m01 registers equal cv2.moments(mask, binaryImage=True) after each frame, the
pixels pass through unchanged, with input gaps and output backpressure."""

from __future__ import annotations

import random

import cocotb
import cv2
import numpy as np
import pytest
from fpgashare.catalogue.modules import resolve_stage
from fpgashare.catalogue.vision_ref import binary_moments

from tests.hdl.vision_tb import VisionTB, run_module, sizes_to_test


async def read_moments(tb: VisionTB) -> dict[str, int]:
    kind = resolve_stage("moments").kind
    words = {reg: await tb.read_reg(kind.reg_index(reg)) for reg in ("M00", "M10_LO", "M10_HI", "M01_LO", "M01_HI")}
    return {"M00": words["M00"], "M10": words["M10_LO"] | words["M10_HI"] << 32,
            "M01": words["M01_LO"] | words["M01_HI"] << 32}


@cocotb.test(timeout_time=60, timeout_unit="ms")
async def matches_opencv(dut):
    tb = VisionTB(dut, seed=101)
    await tb.reset()
    rng = np.random.default_rng(101)
    stage = resolve_stage("moments")
    sizes = [*sizes_to_test(random.Random(101), 4), (60, 97)]
    for n, (rows, cols) in enumerate(sizes):
        tb.set_pressure(input_gaps=0.3 * (n % 2), output_stalls=0.4 * ((n + 1) % 2))
        # Any nonzero value counts as 1: a mask of 0/255 with some other nonzero values mixed in.
        frame = np.where(rng.random((rows, cols)) < 0.4, 255, 0).astype(np.uint8)
        frame[rng.random((rows, cols)) < 0.1] = 3
        if n == 2:
            frame[:] = 0                                     # an empty mask: all moments 0
        await tb.program(stage, rows, cols)
        got = await tb.run_frame(frame, (rows, cols))
        assert np.array_equal(got, frame), "pixels must pass through"
        regs = await read_moments(tb)
        assert regs == binary_moments(frame), (rows, cols)
        cv = cv2.moments(frame, binaryImage=True)
        assert (regs["M00"], regs["M10"], regs["M01"]) == (cv["m00"], cv["m10"], cv["m01"])
    assert await tb.read_reg(4) == len(sizes), "FRAMES counts completed frames"
    assert await tb.read_reg(3) == 0


@pytest.mark.rtl
@pytest.mark.parametrize("nppc", [1, 4])
def test_moments_rtl(nppc):
    tests, failed = run_module("moments", __name__, nppc)
    assert tests == 1 and failed == 0

"""threshold: every cv2.threshold type on random frames and thresholds, with backpressure."""

from __future__ import annotations

import cocotb
import numpy as np
import pytest
from fpgashare.catalogue.modules import THRESHOLD_TYPES, resolve_stage
from fpgashare.catalogue.vision_ref import stage_reference

from tests.hdl.vision_tb import VisionTB, run_module


@cocotb.test(timeout_time=20, timeout_unit="ms")
async def all_types_match_opencv(dut):
    tb = VisionTB(dut, seed=31)
    await tb.reset()
    rng = np.random.default_rng(31)
    for n, (name, typ) in enumerate(THRESHOLD_TYPES.items()):
        for thresh in (0, int(rng.integers(1, 255)), 255):
            tb.set_pressure(input_gaps=0.3 * (n % 2), output_stalls=0.3 * ((n + 1) % 2))
            rows, cols = int(rng.integers(1, 12)), int(rng.integers(1, 20))
            stage = resolve_stage("threshold", {"TYPE": typ, "THRESH": thresh,
                                                "MAXVAL": int(rng.integers(0, 256))})
            frame = rng.integers(0, 256, (rows, cols), dtype=np.uint8)
            await tb.program(stage, rows, cols)
            got = await tb.run_frame(frame, (rows, cols))
            assert np.array_equal(got, stage_reference(stage, frame)), f"{name} t={thresh}"
    assert await tb.read_reg(3) == 0


@cocotb.test(timeout_time=2, timeout_unit="ms")
async def bad_type_passes_through_and_is_flagged(dut):
    tb = VisionTB(dut, seed=32)
    await tb.reset()
    stage = resolve_stage("threshold", {"TYPE": 7})
    frame = np.arange(24, dtype=np.uint8).reshape(3, 8)
    await tb.program(stage, 3, 8)
    got = await tb.run_frame(frame, (3, 8))
    assert np.array_equal(got, frame)
    assert (await tb.read_reg(3)) & 2


@pytest.mark.rtl
@pytest.mark.parametrize("nppc", [1, 4])
def test_threshold_rtl(nppc):
    tests, failed = run_module("threshold", __name__, nppc)
    assert tests == 2 and failed == 0

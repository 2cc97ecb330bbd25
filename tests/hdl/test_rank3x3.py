"""rank3x3 (erode3x3, dilate3x3, median3x3): bit-exact with cv2.erode/dilate (3x3 rect,
BORDER_REPLICATE) and cv2.medianBlur(3) on random frames of odd and even sizes, with input gaps and
output backpressure; one build per RANK."""

from __future__ import annotations

import os
import random

import cocotb
import numpy as np
import pytest
from fpgashare.catalogue.modules import resolve_stage
from fpgashare.catalogue.vision_ref import stage_reference

from tests.hdl.vision_tb import VisionTB, run_module, sizes_to_test

#: RANK parameter -> the catalogue module that bitstream is.
KIND_BY_RANK = {0: "erode3x3", 8: "dilate3x3", 4: "median3x3"}


def _kind() -> str:
    return KIND_BY_RANK[int(os.environ["RANK3X3_RANK"])]


@cocotb.test(timeout_time=40, timeout_unit="ms")
async def matches_opencv(dut):
    kind = _kind()
    tb = VisionTB(dut, seed=71)
    await tb.reset()
    rng = np.random.default_rng(71)
    stage = resolve_stage(kind)
    sizes = sizes_to_test(random.Random(71), 4)
    for n, (rows, cols) in enumerate(sizes):
        tb.set_pressure(input_gaps=0.3 * (n % 2), output_stalls=0.4 * ((n + 1) % 2))
        # Few distinct values make ties (equal pixels in a window) common.
        frame = rng.integers(0, 256, (rows, cols), dtype=np.uint8)
        if n % 3 == 2:
            frame = rng.choice([0, 7, 255], size=(rows, cols)).astype(np.uint8)
        await tb.program(stage, rows, cols)
        got = await tb.run_frame(frame, (rows, cols))
        want = stage_reference(stage, frame)
        assert np.array_equal(got, want), f"{kind} {rows}x{cols}: {np.argwhere(got != want)[:5]}"
    assert await tb.read_reg(4) == len(sizes), "FRAMES counter"
    assert await tb.read_reg(3) == 0, "no framing error expected"
    assert (await tb.read_reg(0)) >> 16 == stage.kind.module_id


@cocotb.test(timeout_time=400, timeout_unit="ms", skip=os.environ.get("RANK3X3_BIG") != "1")
async def full_hd_frame(dut):
    kind = _kind()
    tb = VisionTB(dut, seed=72)
    await tb.reset()
    tb.set_pressure(input_gaps=0.1, output_stalls=0.1)
    frame = np.random.default_rng(72).integers(0, 256, (1080, 1920), dtype=np.uint8)
    stage = resolve_stage(kind)
    await tb.program(stage, 1080, 1920)
    got = await tb.run_frame(frame, (1080, 1920))
    assert np.array_equal(got, stage_reference(stage, frame)), kind


@pytest.mark.rtl
@pytest.mark.parametrize("nppc", [1, 4])
@pytest.mark.parametrize("rank", sorted(KIND_BY_RANK))
def test_rank3x3_rtl(rank, nppc):
    module_id = resolve_stage(KIND_BY_RANK[rank]).kind.module_id
    env = {"RANK3X3_RANK": str(rank), "RANK3X3_BIG": os.environ.get("RANK3X3_BIG", "0")}
    tests, failed = run_module("rank3x3", __name__, nppc, {"RANK": rank, "MODULE_ID": module_id}, env)
    assert tests >= 1 and failed == 0, f"{failed} of {tests} cocotb tests failed"

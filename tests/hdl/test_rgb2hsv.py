"""rgb2hsv: bit-exact with cv2.cvtColor(COLOR_RGB2HSV) on random frames and on colours chosen to hit
every branch (grays, each channel the maximum, ties), with input gaps and output backpressure."""

from __future__ import annotations

import cocotb
import numpy as np
import pytest
from cocotbext.axi import AxiStreamFrame
from fpgashare.modules import resolve_stage
from fpgashare.vision_ref import stage_reference

from tests.hdl.vision_tb import VisionTB


async def run_frame_rgb_out(tb: VisionTB, frame: np.ndarray) -> np.ndarray:
    """Like VisionTB.run_frame, but the output keeps three bytes per pixel."""
    rows, cols = frame.shape[:2]
    for r in range(rows):
        data = frame[r].tobytes()
        await tb.source.send(AxiStreamFrame(data, tuser=[1 if (r == 0 and i < 3) else 0 for i in range(len(data))]))
    out = np.zeros((rows, cols, 3), dtype=np.uint8)
    for r in range(rows):
        got = await tb.sink.recv()
        beats = np.frombuffer(bytes(got.tdata), dtype=np.uint8).reshape(-1, tb.sink.byte_lanes)
        assert beats.shape[0] == cols, f"output row {r}: {beats.shape[0]} pixels, expected {cols}"
        out[r] = beats[:, :3]
    return out


def corner_colours() -> np.ndarray:
    """Colours at the edges of the rule: grays, pure primaries, two-way and three-way maximum ties."""
    values = [0, 1, 2, 127, 128, 254, 255]
    grid = np.array([(r, g, b) for r in values for g in values for b in values], dtype=np.uint8)
    return grid.reshape(-1, 7, 3)     # 49 rows of 7 pixels


@cocotb.test(timeout_time=40, timeout_unit="ms")
async def matches_opencv(dut):
    tb = VisionTB(dut, seed=81)
    await tb.reset()
    rng = np.random.default_rng(81)
    stage = resolve_stage("rgb2hsv")
    frames = [corner_colours()] + [rng.integers(0, 256, (rows, cols, 3), dtype=np.uint8)
                                   for rows, cols in [(9, 17), (1, 1), (8, 8), (5, 13), (31, 12)]]
    for n, frame in enumerate(frames):
        tb.set_pressure(input_gaps=0.3 * (n % 2), output_stalls=0.4 * ((n + 1) % 2))
        await tb.program(stage, *frame.shape[:2])
        got = await run_frame_rgb_out(tb, frame)
        want = stage_reference(stage, frame)
        bad = np.argwhere(np.any(got != want, axis=-1))[:5]
        assert np.array_equal(got, want), \
            f"{frame.shape}: at {bad.tolist()} got {got[tuple(bad.T)]} want {want[tuple(bad.T)]}"
    assert await tb.read_reg(4) == len(frames)


@pytest.mark.rtl
def test_rgb2hsv_rtl():
    from fpgashare.hdl_sim.build import run_cocotb

    tests, failed = run_cocotb("rgb2hsv", __name__, parameters={"DATA_W": 24})
    assert tests == 1 and failed == 0

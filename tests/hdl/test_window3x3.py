"""window3x3: every output is the 3x3 neighbourhood of cv2.BORDER_REPLICATE, in raster order, with
row/frame markers, under random input gaps and output stalls; (H+1)*(W+1) steps per frame. One-pixel
rows (the line buffers' registered read forwarding the word just written) and rows of MAX_W included."""

from __future__ import annotations

import random

import cocotb
import numpy as np
import pytest
from cocotb.triggers import ReadOnly, RisingEdge

from tests.hdl.vision_tb import clock_and_reset


def windows(frame: np.ndarray) -> np.ndarray:
    """[H, W, 9] neighbourhoods, row-major p00..p22, edges replicated."""
    p = np.pad(frame, 1, mode="edge")
    h, w = frame.shape
    return np.stack([p[r:r + h, c:c + w] for r in range(3) for c in range(3)], axis=-1)


async def run_frame(dut, frame: np.ndarray, rng: random.Random, gaps: float, stalls: float) -> list:
    h, w = frame.shape
    dut.cfg_width.value, dut.cfg_height.value = w, h
    flat = frame.reshape(-1)
    sent, got, cycles = 0, [], 0
    while len(got) < h * w:
        offer = sent < flat.size and rng.random() >= gaps
        dut.s_valid.value = int(offer)
        if offer:
            dut.s_pixel.value = int(flat[sent])
            dut.s_last.value = int(sent % w == w - 1)
        ready = rng.random() >= stalls
        dut.m_ready.value = int(ready)
        await ReadOnly()
        take = offer and int(dut.s_ready.value)
        if int(dut.m_valid.value) and ready:
            got.append((int(dut.m_window.value), int(dut.m_last.value), int(dut.m_user.value), int(dut.m_eof.value)))
        await RisingEdge(dut.clk)
        sent += take
        cycles += 1
        assert cycles < 40 * (h + 2) * (w + 2), "frame did not finish"
    dut.s_valid.value = 0
    return got


@cocotb.test(timeout_time=50, timeout_unit="ms")
async def replicate_windows(dut):
    await clock_and_reset(dut)
    rng = random.Random(11)
    nprng = np.random.default_rng(11)
    for n, (h, w) in enumerate([(1, 1), (2, 3), (9, 17), (5, 2), (12, 8), (4, 1), (3, 64)]):
        frame = nprng.integers(0, 256, (h, w), dtype=np.uint8)
        got = await run_frame(dut, frame, rng, gaps=0.3 * (n % 2), stalls=0.4 * ((n + 1) % 2))
        want = windows(frame).reshape(-1, 9)
        for k, (win, last, user, eof) in enumerate(got):
            pixels = [(win >> (8 * (8 - i))) & 0xFF for i in range(9)]
            assert pixels == want[k].tolist(), f"{h}x{w} window {k}"
            assert last == (k % w == w - 1) and user == (k == 0) and eof == (k == h * w - 1)
    assert int(dut.framing_err.value) == 0


@pytest.mark.rtl
def test_window3x3_rtl():
    from fpgashare.hdl_sim.build import run_cocotb

    tests, failed = run_cocotb("window3x3", __name__, parameters={"MAX_W": 64})
    assert tests == 1 and failed == 0

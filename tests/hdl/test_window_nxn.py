"""window_nxn: every output lane is the NxN neighbourhood of cv2.BORDER_REPLICATE, in raster order,
with row/frame markers, under random input gaps and output stalls, for N = 3 and 7 at 1 and 4 pixels
per beat. Widths that are not a multiple of the beat carry junk in the last beat's spare lanes (the
module must ignore it); one-beat rows (the registered read forwarding the word just written) and rows
of MAX_W are included. Parameters come from the environment (FPGASHARE_WIN_N, NPPC)."""

from __future__ import annotations

import os
import random

import cocotb
import numpy as np
import pytest
from cocotb.triggers import ReadOnly, RisingEdge

from tests.hdl.vision_tb import clock_and_reset

MAX_W = 64


def windows(frame: np.ndarray, n: int) -> np.ndarray:
    """[H, W, n*n] neighbourhoods, row-major, edges replicated."""
    r = n // 2
    p = np.pad(frame, r, mode="edge")
    h, w = frame.shape
    return np.stack([p[a:a + h, b:b + w] for a in range(n) for b in range(n)], axis=-1)


def beats_of(frame: np.ndarray, nppc: int, rng: np.random.Generator) -> list[tuple[int, bool]]:
    """(tdata, tlast) per beat: rows padded to whole beats with random junk."""
    h, w = frame.shape
    nb = -(-w // nppc)
    padded = rng.integers(0, 256, (h, nb * nppc), dtype=np.uint8)
    padded[:, :w] = frame
    out = []
    for r in range(h):
        for b in range(nb):
            word = int.from_bytes(padded[r, b * nppc:(b + 1) * nppc].tobytes(), "little")
            out.append((word, b == nb - 1))
    return out


async def run_frame(dut, frame: np.ndarray, n: int, nppc: int, rng: random.Random, gaps: float,
                    stalls: float) -> list:
    h, w = frame.shape
    nb = -(-w // nppc)
    dut.cfg_width.value, dut.cfg_height.value = w, h
    beats = beats_of(frame, nppc, np.random.default_rng(rng.randrange(1 << 30)))
    sent, got, cycles = 0, [], 0
    while len(got) < h * nb:
        offer = sent < len(beats) and rng.random() >= gaps
        dut.s_valid.value = int(offer)
        if offer:
            dut.s_pixel.value, last = beats[sent]
            dut.s_last.value = int(last)
        ready = rng.random() >= stalls
        dut.m_ready.value = int(ready)
        await ReadOnly()
        take = offer and int(dut.s_ready.value)
        if int(dut.m_valid.value) and ready:
            got.append((int(dut.m_window.value), int(dut.m_last.value), int(dut.m_user.value), int(dut.m_eof.value)))
        await RisingEdge(dut.clk)
        sent += take
        cycles += 1
        assert cycles < 40 * (h + n) * (nb + n), "frame did not finish"
    dut.s_valid.value = 0
    return got


@cocotb.test(timeout_time=200, timeout_unit="ms")
async def replicate_windows(dut):
    n, nppc = int(os.environ["FPGASHARE_WIN_N"]), int(os.environ["NPPC"])
    await clock_and_reset(dut)
    rng = random.Random(11 + n + nppc)
    nprng = np.random.default_rng(11)
    sizes = [(1, 1), (2, 3), (9, 17), (5, 2), (12, 8), (4, 1), (3, MAX_W), (7, 13), (2, 6)]
    for s, (h, w) in enumerate(sizes):
        frame = nprng.integers(0, 256, (h, w), dtype=np.uint8)
        got = await run_frame(dut, frame, n, nppc, rng, gaps=0.3 * (s % 2), stalls=0.4 * ((s + 1) % 2))
        nb = -(-w // nppc)
        want = windows(frame, n)
        nn = n * n
        for k, (win, last, user, eof) in enumerate(got):
            row, beat = divmod(k, nb)
            for lane in range(nppc):
                col = beat * nppc + lane
                if col >= w:
                    continue  # a spare lane: unspecified
                bits = win >> (lane * nn * 8)
                pixels = [(bits >> (8 * (nn - 1 - i))) & 0xFF for i in range(nn)]
                assert pixels == want[row, col].tolist(), f"N={n} NPPC={nppc} {h}x{w} pixel ({row}, {col})"
            assert last == (beat == nb - 1) and user == (k == 0) and eof == (k == h * nb - 1)
    assert int(dut.framing_err.value) == 0


@pytest.mark.rtl
@pytest.mark.parametrize("n,nppc", [(3, 1), (3, 4), (7, 1), (7, 4)])
def test_window_nxn_rtl(n, nppc):
    from fpgashare.hdl_sim.cocotb_build import run_cocotb

    tests, failed = run_cocotb("window_nxn", __name__, parameters={"N": n, "NPPC": nppc, "MAX_W": MAX_W},
                               extra_env={"FPGASHARE_WIN_N": str(n), "NPPC": str(nppc)})
    assert tests == 1 and failed == 0

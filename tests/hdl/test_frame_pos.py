"""frame_pos: each accepted beat's row and beat-in-row, row and frame ends, for frames of random
sizes (rows padded to whole beats of NPPC pixels) with gaps between beats; a width written during a
frame leaves that frame's size alone; an early or late TLAST sets the sticky framing error."""

from __future__ import annotations

import os
import random

import cocotb
import pytest
from cocotb.triggers import ReadOnly, RisingEdge

from tests.hdl.vision_tb import clock_and_reset


class Model:
    """What frame_pos should report: the frame size is taken when the frame begins."""

    def __init__(self, nppc: int) -> None:
        self.nppc = nppc
        self.x = self.y = 0
        self.w = self.h = 0

    def outputs(self, cfg_w: int, cfg_h: int) -> dict[str, int]:
        if self.x == 0 and self.y == 0:
            self.w, self.h = cfg_w, cfg_h
        beats = -(-self.w // self.nppc)
        row_end = self.x == beats - 1
        return {"x": self.x, "y": self.y, "width": self.w, "height": self.h, "row_beats": beats,
                "row_end": int(row_end), "frame_end": int(row_end and self.y == self.h - 1)}

    def take(self, out: dict[str, int]) -> None:
        if out["frame_end"]:
            self.x = self.y = 0
        elif out["row_end"]:
            self.x, self.y = 0, self.y + 1
        else:
            self.x += 1


async def run_frames(dut, model: Model, rng: random.Random, frames: list[tuple[int, int]], bad_last: bool) -> None:
    """Offer each frame's beats with random gaps, checking the outputs every cycle against the model."""
    for n, (rows, cols) in enumerate(frames):
        cfg_w = cols
        beats = rows * -(-cols // model.nppc)
        sent = 0
        while sent < beats:
            if n == 1 and sent == beats // 2:
                cfg_w = cols + 3                         # written mid-frame: this frame keeps its width
            take = rng.random() < 0.7
            want = model.outputs(cfg_w, rows)
            dut.cfg_width.value, dut.cfg_height.value = cfg_w, rows
            dut.take.value = int(take)
            dut.last.value = want["row_end"] ^ int(bad_last and sent == beats - 2)
            await ReadOnly()
            got = {k: int(getattr(dut, k).value) for k in want}
            assert got == want, (n, sent, got, want)
            await RisingEdge(dut.clk)
            if take:
                model.take(want)
                sent += 1
    dut.take.value = 0


@cocotb.test(timeout_time=20, timeout_unit="ms")
async def counts_rows_and_beats(dut):
    nppc = int(os.environ.get("FRAME_POS_NPPC", "1"))
    dut.take.value, dut.last.value = 0, 0
    dut.cfg_width.value, dut.cfg_height.value = 8, 2
    await clock_and_reset(dut)
    rng = random.Random(7)
    model = Model(nppc)
    frames = [(3, 5), (4, 9), (1, 1), (2, 4 * nppc + 1), (5, 2)]
    await run_frames(dut, model, rng, frames, bad_last=False)
    assert int(dut.framing_err.value) == 0
    await run_frames(dut, model, rng, [(3, 7)], bad_last=True)
    await ReadOnly()
    assert int(dut.framing_err.value) == 1


@pytest.mark.rtl
@pytest.mark.parametrize("nppc", [1, 4])
def test_frame_pos_rtl(nppc):
    from fpgashare.hdl_sim.cocotb_build import run_cocotb

    tests, failed = run_cocotb("frame_pos", __name__, parameters={"NPPC": nppc},
                               extra_env={"FRAME_POS_NPPC": str(nppc)})
    assert tests == 1 and failed == 0

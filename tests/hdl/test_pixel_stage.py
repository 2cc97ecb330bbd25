"""pixel_stage: every accepted beat's result comes out once, in order, with its TLAST/TUSER, under
random input gaps and output stalls, at full rate when nothing stalls."""

from __future__ import annotations

import random

import cocotb
import pytest
from cocotb.triggers import ReadOnly, RisingEdge

from tests.hdl.vision_tb import clock_and_reset


@cocotb.test(timeout_time=2, timeout_unit="ms")
async def order_markers_and_rate(dut):
    await clock_and_reset(dut)
    rng = random.Random(3)
    sent, got = [], []
    for phase, (gaps, stalls) in enumerate(((0.0, 0.0), (0.3, 0.5))):
        before = len(got)
        for _ in range(400):
            offer = rng.random() >= gaps and len(sent) < 300 * (phase + 1)
            beat = (rng.getrandbits(8), rng.getrandbits(1), rng.getrandbits(1))
            dut.s_valid.value = int(offer)
            dut.s_pixel.value, dut.s_last.value, dut.s_user.value = beat
            ready = rng.random() >= stalls
            dut.m_tready.value = int(ready)
            await ReadOnly()
            if offer and int(dut.s_ready.value):
                sent.append(beat)
            if int(dut.m_tvalid.value) and ready:
                got.append((int(dut.m_tdata.value), int(dut.m_tlast.value), int(dut.m_tuser.value)))
            await RisingEdge(dut.clk)
        if phase == 0:
            assert len(got) - before >= 298          # one beat per cycle when nothing stalls
    dut.s_valid.value = 0
    dut.m_tready.value = 1
    for _ in range(4):
        await ReadOnly()
        if int(dut.m_tvalid.value):
            got.append((int(dut.m_tdata.value), int(dut.m_tlast.value), int(dut.m_tuser.value)))
        await RisingEdge(dut.clk)
    assert got == sent


@pytest.mark.rtl
def test_pixel_stage_rtl():
    from fpgashare.hdl_sim.cocotb_build import run_cocotb

    tests, failed = run_cocotb("pixel_stage", __name__, parameters={"DATA_W": 8})
    assert tests == 1 and failed == 0

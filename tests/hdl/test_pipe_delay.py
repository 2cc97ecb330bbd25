"""pipe_delay: q is d of exactly LATENCY cycles ago (zeros after reset); LATENCY 0 is a wire."""

from __future__ import annotations

import random

import cocotb
import pytest
from cocotb.triggers import ReadOnly, RisingEdge, Timer

from tests.hdl.vision_tb import clock_and_reset


@cocotb.test(timeout_time=1, timeout_unit="ms")
async def delays_by_latency(dut):
    latency, width = int(dut.LATENCY.value), int(dut.W.value)
    dut.d.value = 0
    await clock_and_reset(dut)
    rng = random.Random(latency)
    history = [0] * max(latency, 1)
    for _ in range(300):
        value = rng.getrandbits(width)
        dut.d.value = value
        if latency == 0:
            await Timer(1, unit="ns")
            assert int(dut.q.value) == value
            await RisingEdge(dut.clk)
            continue
        await ReadOnly()
        assert int(dut.q.value) == history[-latency]
        await RisingEdge(dut.clk)
        history.append(value)


@pytest.mark.rtl
@pytest.mark.parametrize("latency", [0, 1, 4])
def test_pipe_delay_rtl(latency):
    from fpgashare.hdl_sim.cocotb_build import run_cocotb

    tests, failed = run_cocotb("pipe_delay", __name__, parameters={"W": 10, "LATENCY": latency})
    assert tests == 1 and failed == 0

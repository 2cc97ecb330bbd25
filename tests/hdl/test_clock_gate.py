"""clock_gate: the gated clock pulses only in cycles whose enable was set while the clock was low,
and an enable change while the clock is high never cuts or starts a pulse (no glitch)."""

from __future__ import annotations

import random

import cocotb
import pytest
from cocotb.clock import Clock
from cocotb.triggers import FallingEdge, ReadOnly, RisingEdge, Timer


@cocotb.test(timeout_time=1, timeout_unit="ms")
async def pulses_follow_latched_enable(dut):
    Clock(dut.clk, 10, unit="ns").start()
    rng = random.Random(5)
    dut.en.value = 0
    await FallingEdge(dut.clk)
    seen_on = seen_off = 0
    for _ in range(200):
        en = rng.random() < 0.5
        dut.en.value = int(en)                    # set while the clock is low
        await RisingEdge(dut.clk)
        await ReadOnly()
        assert int(dut.gclk.value) == int(en)
        seen_on += en
        seen_off += not en
        await Timer(2, unit="ns")
        dut.en.value = int(not en)                # flip while high: the pulse must not change
        await Timer(1, unit="ns")
        assert int(dut.gclk.value) == int(en)
        await FallingEdge(dut.clk)
        await ReadOnly()
        assert int(dut.gclk.value) == 0
        await Timer(1, unit="ns")
    assert seen_on and seen_off


@pytest.mark.rtl
def test_clock_gate_rtl():
    from fpgashare.hdl_sim.cocotb_build import run_cocotb

    tests, failed = run_cocotb("clock_gate", __name__)
    assert tests == 1 and failed == 0

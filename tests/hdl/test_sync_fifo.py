"""sync_fifo: order kept under random push/pop, ready/valid track the fill level, overflow flags a
write attempted while full; depths that are and are not powers of two."""

from __future__ import annotations

import random
from collections import deque

import cocotb
import pytest
from cocotb.triggers import ReadOnly, RisingEdge

from tests.hdl.vision_tb import clock_and_reset


@cocotb.test(timeout_time=5, timeout_unit="ms")
async def random_push_pop_against_a_queue(dut):
    depth, width = int(dut.DEPTH.value), int(dut.W.value)
    await clock_and_reset(dut)
    rng = random.Random(depth)
    model: deque[int] = deque()
    seen_full = seen_overflow = 0
    for _ in range(3000):
        push, pop = rng.random() < 0.55, rng.random() < 0.45
        data = rng.getrandbits(width)
        dut.s_valid.value = int(push)
        dut.s_data.value = data
        dut.m_ready.value = int(pop)
        await ReadOnly()
        assert int(dut.s_ready.value) == (len(model) < depth)
        assert int(dut.m_valid.value) == (len(model) > 0)
        assert int(dut.overflow.value) == (push and len(model) == depth)
        seen_full += len(model) == depth
        seen_overflow += int(dut.overflow.value)
        popped = pop and model
        if popped:
            assert int(dut.m_data.value) == model[0]
        pushed = push and len(model) < depth
        await RisingEdge(dut.clk)
        if popped:
            model.popleft()
        if pushed:
            model.append(data)
    assert seen_full and seen_overflow  # the test reached the corners it checks


@pytest.mark.rtl
@pytest.mark.parametrize("depth", [1, 3, 4])
def test_sync_fifo_rtl(depth):
    from fpgashare.hdl_sim.cocotb_build import run_cocotb

    tests, failed = run_cocotb("sync_fifo", __name__, parameters={"W": 12, "DEPTH": depth})
    assert tests == 1 and failed == 0

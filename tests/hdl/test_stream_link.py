"""stream_link: data intact under backpressure, credits never overflow, bandwidth and latency as
configured (one flit of LANE_W bits per cycle with enough credits; LATENCY cycles to arrive)."""

from __future__ import annotations

import random

import cocotb
import pytest
from cocotb.triggers import ClockCycles, ReadOnly, RisingEdge
from cocotbext.axi import AxiStreamBus, AxiStreamSink, AxiStreamSource

from tests.hdl.vision_tb import clock_and_reset, random_pauses


@cocotb.test(timeout_time=20, timeout_unit="ms")
async def data_and_credits_under_backpressure(dut):
    await clock_and_reset(dut)
    rng = random.Random(7)
    src = AxiStreamSource(AxiStreamBus.from_prefix(dut, "s_axis"), dut.clk, dut.rst, byte_lanes=1)
    snk = AxiStreamSink(AxiStreamBus.from_prefix(dut, "m_axis"), dut.clk, dut.rst, byte_lanes=1)
    src.set_pause_generator(random_pauses(rng, 0.2))
    snk.set_pause_generator(random_pauses(rng, 0.5))
    frames = [[rng.getrandbits(32) for _ in range(rng.randint(1, 40))] for _ in range(20)]
    for f in frames:
        await src.send(f)
    for f in frames:
        got = await snk.recv()
        assert list(got.tdata) == f
    assert int(dut.credit_error.value) == 0


@cocotb.test(timeout_time=20, timeout_unit="ms")
async def bandwidth_and_latency(dut):
    await clock_and_reset(dut)
    lane, data_w = int(dut.LANE_W.value), int(dut.DATA_W.value)
    latency, credits = int(dut.LATENCY.value), int(dut.CREDITS.value)
    nflits = -(-data_w // lane)
    dut.m_axis_tready.value = 1
    dut.s_axis_tvalid.value = 1
    dut.s_axis_tdata.value = 0x5A5A5A5A
    dut.s_axis_tlast.value = 1
    dut.s_axis_tuser.value = 0
    # Latency: the first beat's last flit leaves LATENCY cycles after it is sent.
    sent_at = arrived_at = None
    for cycle in range(200):
        await ReadOnly()
        if sent_at is None and int(dut.s_axis_tready.value):
            sent_at = cycle
        if arrived_at is None and int(dut.m_axis_tvalid.value):
            arrived_at = cycle
            break
        await RisingEdge(dut.clk)
    assert arrived_at - sent_at == latency
    # Bandwidth: flits per cycle over a long window, limited by the lane or by the credit loop.
    await RisingEdge(dut.clk)
    start = int(dut.flits_sent.value)
    window = 4000
    await ClockCycles(dut.clk, window)
    rate = (int(dut.flits_sent.value) - start) / window
    expected = min(1.0, credits / (2 * latency + 1))
    assert abs(rate - expected) <= 0.01 * expected, f"{rate:.4f} flits/cycle, expected {expected:.4f}"
    dut._log.info("link: %d-bit lane, %d flits/beat, %.3f flits/cycle = %.1f bits/cycle",
                  lane, nflits, rate, rate * lane)
    assert int(dut.credit_error.value) == 0


CONFIGS = {
    "full_rate": {"DATA_W": 32, "LANE_W": 8, "LATENCY": 3, "CREDITS": 8},
    "credit_bound": {"DATA_W": 32, "LANE_W": 16, "LATENCY": 6, "CREDITS": 4},
    "wide_lane": {"DATA_W": 32, "LANE_W": 32, "LATENCY": 1, "CREDITS": 4},
}


@pytest.mark.rtl
@pytest.mark.parametrize("config", list(CONFIGS))
def test_stream_link_rtl(config):
    from fpgashare.hdl_sim.cocotb_build import run_cocotb

    tests, failed = run_cocotb("stream_link", __name__, parameters=CONFIGS[config])
    assert tests == 2 and failed == 0

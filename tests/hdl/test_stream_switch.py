"""stream_switch: each sink shows exactly its routed source (data, valid, last, user), the routed
source sees that sink's ready, unrouted sources see ready low, a disabled or nonexistent route
shows nothing."""

from __future__ import annotations

import random

import cocotb
import pytest
from cocotb.triggers import Timer

NSRC, NSNK, SEL_W = 4, 3, 4


@cocotb.test(timeout_time=1, timeout_unit="ms")
async def routes_and_backpressure(dut):
    rng = random.Random(9)
    for _ in range(300):
        # A source feeds at most one sink (the runtime guarantees it), so pick distinct sources.
        sources = rng.sample(range(NSRC + 2), NSNK)               # NSRC, NSRC+1 do not exist
        enabled = [rng.random() < 0.8 for _ in range(NSNK)]
        route = sum(((int(en) << SEL_W) | src) << (k * (SEL_W + 1))
                    for k, (src, en) in enumerate(zip(sources, enabled, strict=True)))
        data = [rng.getrandbits(32) for _ in range(NSRC)]
        valid, last, user = (rng.getrandbits(NSRC) for _ in range(3))
        ready = rng.getrandbits(NSNK)
        dut.route.value = route
        for i in range(NSRC):
            dut.s_tdata[i].value = data[i]
        dut.s_tvalid.value, dut.s_tlast.value, dut.s_tuser.value = valid, last, user
        dut.m_tready.value = ready
        await Timer(1, unit="ns")
        want_ready = 0
        for k, (src, en) in enumerate(zip(sources, enabled, strict=True)):
            live = en and src < NSRC
            assert int(dut.m_tdata[k].value) == (data[src] if live else 0)
            for name, bits in (("m_tvalid", valid), ("m_tlast", last), ("m_tuser", user)):
                assert (int(getattr(dut, name).value) >> k & 1) == (live and bits >> src & 1), name
            if live:
                want_ready |= (ready >> k & 1) << src
        assert int(dut.s_tready.value) == want_ready


@pytest.mark.rtl
def test_stream_switch_rtl():
    from fpgashare.hdl_sim.cocotb_build import run_cocotb

    tests, failed = run_cocotb("stream_switch", __name__,
                               parameters={"DATA_W": 32, "NSRC": NSRC, "NSNK": NSNK, "SEL_W": SEL_W})
    assert tests == 1 and failed == 0

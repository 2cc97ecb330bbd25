"""axil_demux: every access reaches the port named by address[15:12] with the low byte of the
address, data and strobes; its response comes back; a missing port or a nonzero address[11:8]
answers DECERR without reaching any port."""

from __future__ import annotations

import random

import cocotb
import pytest
from cocotb.triggers import FallingEdge
from cocotbext.axi import AxiLiteBus, AxiLiteMaster
from cocotbext.axi.constants import AxiResp

from tests.hdl.axil_slaves import AxilSlaves
from tests.hdl.vision_tb import clock_and_reset

NPORTS = 3


async def ports(dut, log: list) -> None:
    """NPORTS always-ready slaves: writes answer OKAY; reads return 0xC0DE_0000 | port << 8 | addr."""
    slaves = AxilSlaves(dut, NPORTS, log, strobes=True)
    while True:
        await slaves.sample()
        await FallingEdge(dut.clk)   # leave the read-only phase before driving
        slaves.drive()


@cocotb.test(timeout_time=2, timeout_unit="ms")
async def routes_by_address(dut):
    dut.m_axil_bvalid.value = 0
    dut.m_axil_rvalid.value = 0
    await clock_and_reset(dut)
    log: list = []
    cocotb.start_soon(ports(dut, log))
    axil = AxiLiteMaster(AxiLiteBus.from_prefix(dut, "s_axil"), dut.clk, dut.rst)
    rng = random.Random(4)
    for _ in range(30):
        port, offset = rng.randrange(NPORTS), rng.randrange(64) * 4
        value = rng.getrandbits(32)
        log.clear()
        assert (await axil.write(0x1000 * port + offset, value.to_bytes(4, "little"))).resp == AxiResp.OKAY
        assert log == [("w", port, offset, value, 0xF)]
        log.clear()
        read = await axil.read(0x1000 * port + offset, 4)
        assert read.resp == AxiResp.OKAY
        assert int.from_bytes(read.data, "little") == 0xC0DE_0000 | port << 8 | offset
        assert log == [("r", port, offset)]
    for bad in (0x1000 * NPORTS, 0xF000, 0x0100, 0x1A04):
        log.clear()
        assert (await axil.write(bad, b"\1\2\3\4")).resp == AxiResp.DECERR
        assert (await axil.read(bad, 4)).resp == AxiResp.DECERR
        assert log == []


@pytest.mark.rtl
def test_axil_demux_rtl():
    from fpgashare.hdl_sim.cocotb_build import run_cocotb

    tests, failed = run_cocotb("axil_demux", __name__, parameters={"NPORTS": NPORTS})
    assert tests == 1 and failed == 0

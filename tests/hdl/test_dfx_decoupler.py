"""dfx_decoupler: while decoupled the static side sees idle streams and SLVERR on AXI-Lite whatever
the partition drives; coupled, everything passes; a transaction in flight when decouple rises
still gets the partition's own response (nothing lost or invented)."""

from __future__ import annotations

import cocotb
import pytest
from cocotb.triggers import ClockCycles, ReadOnly, RisingEdge
from cocotbext.axi import AxiLiteBus, AxiLiteMaster
from cocotbext.axi.constants import AxiResp

from tests.hdl.vision_tb import clock_and_reset

JUNK = 0xBAD0_BAD0


def partition_drives_junk(dut) -> None:
    """What a half-configured partition does: every output asserted, data garbage."""
    dut.rp_s_axis_tready.value = 1
    dut.rp_m_axis_tvalid.value = 1
    dut.rp_m_axis_tdata.value = JUNK
    dut.rp_m_axis_tlast.value = 1
    dut.rp_m_axis_tuser.value = 1


async def partition_axil(dut, read_delay: int) -> None:
    """A partition's AXI-Lite slave: OKAY, reads return 0x600D_0000 | araddr after read_delay."""
    dut.rp_axil_awready.value = 0
    dut.rp_axil_wready.value = 0
    dut.rp_axil_bvalid.value = 0
    dut.rp_axil_bresp.value = 0
    dut.rp_axil_arready.value = 0
    dut.rp_axil_rvalid.value = 0
    dut.rp_axil_rresp.value = 0
    while True:
        await RisingEdge(dut.clk)
        await ReadOnly()
        aw = int(dut.rp_axil_awvalid.value) and int(dut.rp_axil_wvalid.value)
        ar = int(dut.rp_axil_arvalid.value)
        addr = int(dut.rp_axil_araddr.value)
        await RisingEdge(dut.clk)
        if aw:
            dut.rp_axil_awready.value = 1
            dut.rp_axil_wready.value = 1
            await RisingEdge(dut.clk)
            dut.rp_axil_awready.value = 0
            dut.rp_axil_wready.value = 0
            dut.rp_axil_bvalid.value = 1
            while True:
                await RisingEdge(dut.clk)
                if int(dut.rp_axil_bready.value):
                    break
            dut.rp_axil_bvalid.value = 0
        elif ar:
            dut.rp_axil_arready.value = 1
            await RisingEdge(dut.clk)
            dut.rp_axil_arready.value = 0
            await ClockCycles(dut.clk, read_delay)
            dut.rp_axil_rdata.value = 0x600D_0000 | addr
            dut.rp_axil_rvalid.value = 1
            while True:
                await RisingEdge(dut.clk)
                if int(dut.rp_axil_rready.value):
                    break
            dut.rp_axil_rvalid.value = 0


@cocotb.test(timeout_time=2, timeout_unit="ms")
async def streams_are_isolated_while_decoupled(dut):
    dut.decouple.value = 1
    partition_drives_junk(dut)
    dut.s_axis_tvalid.value = 1
    dut.s_axis_tdata.value = 0x1234
    dut.m_axis_tready.value = 1
    await clock_and_reset(dut)
    for _ in range(5):
        await ReadOnly()
        assert int(dut.decouple_status.value) == 1
        assert int(dut.m_axis_tvalid.value) == 0 and int(dut.m_axis_tdata.value) == 0
        assert int(dut.m_axis_tlast.value) == 0 and int(dut.m_axis_tuser.value) == 0
        assert int(dut.s_axis_tready.value) == 0     # the static side's beat is not swallowed
        assert int(dut.rp_s_axis_tvalid.value) == 0  # and the partition sees no beat
        assert int(dut.rp_m_axis_tready.value) == 0
        await RisingEdge(dut.clk)
    dut.decouple.value = 0
    await ReadOnly()
    assert int(dut.m_axis_tvalid.value) == 1 and int(dut.m_axis_tdata.value) == JUNK
    assert int(dut.s_axis_tready.value) == 1 and int(dut.rp_s_axis_tvalid.value) == 1
    assert int(dut.rp_s_axis_tdata.value) == 0x1234


@cocotb.test(timeout_time=2, timeout_unit="ms")
async def axil_answers_slverr_while_decoupled(dut):
    dut.decouple.value = 1
    await clock_and_reset(dut)
    cocotb.start_soon(partition_axil(dut, read_delay=0))
    axil = AxiLiteMaster(AxiLiteBus.from_prefix(dut, "s_axil"), dut.clk, dut.rst)
    assert (await axil.write(0x10, b"\1\2\3\4")).resp == AxiResp.SLVERR
    read = await axil.read(0x10, 4)
    assert read.resp == AxiResp.SLVERR and read.data == b"\0\0\0\0"
    dut.decouple.value = 0
    await ClockCycles(dut.clk, 2)
    assert (await axil.write(0x10, b"\1\2\3\4")).resp == AxiResp.OKAY
    read = await axil.read(0x24, 4)
    assert read.resp == AxiResp.OKAY and int.from_bytes(read.data, "little") == 0x600D_0024


@cocotb.test(timeout_time=2, timeout_unit="ms")
async def read_in_flight_survives_decouple(dut):
    dut.decouple.value = 0
    await clock_and_reset(dut)
    cocotb.start_soon(partition_axil(dut, read_delay=20))
    axil = AxiLiteMaster(AxiLiteBus.from_prefix(dut, "s_axil"), dut.clk, dut.rst)
    pending = cocotb.start_soon(axil.read(0x08, 4))
    while not int(dut.rp_axil_arready.value):
        await RisingEdge(dut.clk)
    await ClockCycles(dut.clk, 3)
    dut.decouple.value = 1                     # the partition still owes the response
    read = await pending
    assert read.resp == AxiResp.OKAY and int.from_bytes(read.data, "little") == 0x600D_0008
    read = await axil.read(0x08, 4)            # the next access is answered by the decoupler
    assert read.resp == AxiResp.SLVERR


@pytest.mark.rtl
def test_dfx_decoupler_rtl():
    from fpgashare.hdl_sim.cocotb_build import run_cocotb

    tests, failed = run_cocotb("dfx_decoupler", __name__)
    assert tests == 3 and failed == 0

"""axil_regfile: reset values, byte strobes, read-only registers, one-cycle write strobes, and
DECERR past the last register, through cocotbext-axi's AXI-Lite master."""

from __future__ import annotations

import cocotb
import pytest
from cocotb.triggers import RisingEdge
from cocotbext.axi import AxiLiteBus, AxiLiteMaster
from cocotbext.axi.constants import AxiResp

from tests.hdl.vision_tb import clock_and_reset

NREGS = 6
RO_MASK = 0b100100                                   # registers 2 and 5 are read-only
RESET_VALS = sum((0x1111_0000 * (i + 1) & 0xFFFF_FFFF) << (32 * i) for i in range(NREGS))


def reset_val(i: int) -> int:
    return (RESET_VALS >> (32 * i)) & 0xFFFF_FFFF


async def count_strobes(dut, counts: list[int]) -> None:
    while True:
        await RisingEdge(dut.clk)
        value = int(dut.wr_stb.value)
        for i in range(NREGS):
            counts[i] += value >> i & 1


@cocotb.test(timeout_time=2, timeout_unit="ms")
async def registers_behave(dut):
    dut.ro_values.value = sum((0xC0DE_0000 | i) << (32 * i) for i in range(NREGS))
    await clock_and_reset(dut)
    axil = AxiLiteMaster(AxiLiteBus.from_prefix(dut, "s_axil"), dut.clk, dut.rst)
    strobes = [0] * NREGS
    cocotb.start_soon(count_strobes(dut, strobes))

    for i in range(NREGS):
        want = (0xC0DE_0000 | i) if RO_MASK >> i & 1 else reset_val(i)
        assert await axil.read_dword(4 * i) == want, f"reset value of register {i}"

    await axil.write_dword(4 * 1, 0xDEAD_BEEF)
    assert await axil.read_dword(4 * 1) == 0xDEAD_BEEF
    await axil.write(4 * 3 + 1, b"\xAB")             # one byte lane: only bits [15:8] change
    assert await axil.read_dword(4 * 3) == (reset_val(3) & 0xFFFF_00FF) | 0xAB00

    await axil.write_dword(4 * 2, 0x1234_5678)       # read-only: ignored, answered OKAY
    assert await axil.read_dword(4 * 2) == 0xC0DE_0002
    assert int(dut.regs.value) >> 64 & 0xFFFF_FFFF == reset_val(2)

    write = await axil.write(4 * NREGS, b"\0\0\0\0")
    assert write.resp == AxiResp.DECERR
    read = await axil.read(4 * NREGS, 4)
    assert read.resp == AxiResp.DECERR

    await RisingEdge(dut.clk)
    assert strobes == [0, 1, 1, 1, 0, 0]           # one pulse per accepted write, RO ones too
    assert int(dut.regs.value) >> 32 & 0xFFFF_FFFF == 0xDEAD_BEEF


@pytest.mark.rtl
def test_axil_regfile_rtl():
    from fpgashare.hdl_sim.cocotb_build import run_cocotb

    tests, failed = run_cocotb("axil_regfile", __name__, parameters={
        "NREGS": NREGS, "ADDR_W": 8, "RESET_VALS": RESET_VALS, "RO_MASK": RO_MASK})
    assert tests == 1 and failed == 0

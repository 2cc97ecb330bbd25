"""axil_fabric: the processor's accesses reach the shell's register file (port 0) and the slots' windows
(slot k at 0x1000 * (k + 1)); a CFG_CTRL write arms one load into the slot it names, DEBUG's bit 0 is
the decoupler bypass, a route written becomes its sink's physical route, read-only registers read the
word the shell answers for the pending read; and nothing the fabric drives towards the shell moves but
at a rising edge, whatever its inputs from the shell do in between (what lets a simulation evaluate it
on its own, hdl_sim/harness/fabric_pins.h)."""

from __future__ import annotations

import random

import cocotb
import pytest
from cocotb.triggers import FallingEdge, ReadOnly, RisingEdge
from cocotbext.axi import AxiLiteBus, AxiLiteMaster
from cocotbext.axi.constants import AxiResp

from tests.hdl.axil_slaves import AxilSlaves
from tests.hdl.vision_tb import clock_and_reset

NUM_SLOTS = 2
NUM_STREAMS = 1
# fpgashare_pkg's register map
REG_CFG_CTRL, REG_DEBUG, REG_ROUTE_OUT, REG_ROUTE_ERR = 4, 9, 10, 13
SLOT_REG_BASE, SLOT_REG_STRIDE, SLOT_ROUTE = 16, 4, 1
TO_SHELL = ("m_axil_awaddr", "m_axil_awvalid", "m_axil_wdata", "m_axil_wstrb", "m_axil_wvalid", "m_axil_bready",
            "m_axil_araddr", "m_axil_arvalid", "m_axil_rready", "rd_en", "rd_index", "arm", "arm_slot", "bypass",
            "route", "route_words", "route_err")


def ro_answer(index: int) -> int:
    return 0xA500_0000 | index


async def shell_side(dut, log: list, rng: random.Random) -> None:
    """The slots' windows (always ready; reads return 0xC0DE_0000 | slot << 8 | addr) and the read-only
    word, driven at falling edges; the read-only word is noise but while a read is pending."""
    slaves = AxilSlaves(dut, NUM_SLOTS, log)
    while True:
        await slaves.sample()
        if int(dut.arm.value):
            log.append(("arm", int(dut.arm_slot.value)))
        rd_en, rd_index = int(dut.rd_en.value), int(dut.rd_index.value)
        await FallingEdge(dut.clk)
        slaves.drive()
        dut.ro_word.value = ro_answer(rd_index) if rd_en else rng.getrandbits(32)


async def outputs_move_only_at_edges(dut, moved: list) -> None:
    """Record every falling edge at which an output towards the shell differs from just after the rising edge."""
    while True:
        await RisingEdge(dut.clk)
        await ReadOnly()
        before = [str(getattr(dut, name).value) for name in TO_SHELL]
        await FallingEdge(dut.clk)
        await ReadOnly()
        if [str(getattr(dut, name).value) for name in TO_SHELL] != before:
            moved.append(before)


@cocotb.test(timeout_time=2, timeout_unit="ms")
async def registers_windows_and_routes(dut):
    dut.m_axil_bvalid.value = 0
    dut.m_axil_rvalid.value = 0
    dut.ro_word.value = 0
    await clock_and_reset(dut)
    rng = random.Random(7)
    log: list = []
    moved: list = []
    cocotb.start_soon(shell_side(dut, log, rng))
    cocotb.start_soon(outputs_move_only_at_edges(dut, moved))
    axil = AxiLiteMaster(AxiLiteBus.from_prefix(dut, "s_axil"), dut.clk, dut.rst)

    async def write(reg_addr: int, value: int) -> None:
        assert (await axil.write(reg_addr, value.to_bytes(4, "little"))).resp == AxiResp.OKAY

    async def read(reg_addr: int) -> int:
        got = await axil.read(reg_addr, 4)
        assert got.resp == AxiResp.OKAY
        return int.from_bytes(got.data, "little")

    for _ in range(12):   # the slots' windows
        slot, offset, value = rng.randrange(NUM_SLOTS), rng.randrange(64) * 4, rng.getrandbits(32)
        log.clear()
        await write(0x1000 * (slot + 1) + offset, value)
        assert log == [("w", slot, offset, value)]
        log.clear()
        assert await read(0x1000 * (slot + 1) + offset) == 0xC0DE_0000 | slot << 8 | offset
        assert log == [("r", slot, offset)]

    await write(4 * REG_DEBUG, 1)
    assert int(dut.bypass.value) == 1 and await read(4 * REG_DEBUG) == 1
    await write(4 * REG_DEBUG, 0)
    assert int(dut.bypass.value) == 0

    log.clear()
    await write(4 * REG_CFG_CTRL, 3)
    assert log == [("arm", 3)]   # one pulse, naming the slot

    for index in (0, 7, SLOT_REG_BASE + 2):   # read-only registers answer the shell's word for them
        assert await read(4 * index) == ro_answer(index)

    # slot 0 takes stream 0's input, the stream's output takes slot 1: routes {live, physical source}
    await write(4 * (SLOT_REG_BASE + SLOT_ROUTE), 1 << 31)
    await write(4 * REG_ROUTE_OUT, 1 << 31 | 2)
    route = int(dut.route.value)
    assert route & 0x1F == 0x10 and route >> 10 & 0x1F == 0x12
    words = int(dut.route_words.value)
    assert words & 0xFFFF_FFFF == 1 << 31 and words >> 64 & 0xFFFF_FFFF == 1 << 31 | 2
    # slot 0 in a second stream while the stream's output is stream 0's: refused, said in ROUTE_ERR
    await write(4 * (SLOT_REG_BASE + SLOT_REG_STRIDE + SLOT_ROUTE), 1 << 31 | 1 << 8 | 1)
    assert int(dut.route_err.value) != 0
    await write(4 * REG_ROUTE_ERR, 0)
    assert int(dut.route_err.value) == 0
    assert moved == []


@pytest.mark.rtl
def test_axil_fabric_rtl():
    from fpgashare.hdl_sim.cocotb_build import run_cocotb

    tests, failed = run_cocotb("axil_fabric", __name__, parameters={"NUM_SLOTS": NUM_SLOTS, "NUM_STREAMS": NUM_STREAMS})
    assert tests == 1 and failed == 0

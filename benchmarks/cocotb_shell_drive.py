"""cocotb side of benchmarks/rtl_throughput.py: the same shell RTL driven one pin write per cycle.

Loads the chain's bitstreams and streams pixels with a Python step per cycle, then writes the
measured rates to the JSON file named by FPGASHARE_BENCH_OUT.
"""

from __future__ import annotations

import json
import os
import time

import cocotb
import numpy as np
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, ReadOnly, RisingEdge
from cocotbext.axi import AxiLiteBus, AxiLiteMaster
from fpgashare.bitstream.registry import build_config
from fpgashare.catalogue.modules import register_words, resolve_stage
from fpgashare.catalogue.platform import load_platform

CHAIN = ("gauss3x3", "sobel_mag", "threshold")


@cocotb.test()
async def drive_per_cycle(dut):
    platform = load_platform(os.environ["FPGASHARE_BENCH_PLATFORM"])
    pixels = int(os.environ.get("FPGASHARE_BENCH_PIXELS", "20000"))
    rows, cols = 480, 640
    Clock(dut.clk, 10, unit="ns").start()
    axil = AxiLiteMaster(AxiLiteBus.from_prefix(dut, "s_axil"), dut.clk, dut.rst)
    dut.s_axis_tvalid.value = 0
    dut.s_axis_cfg_tvalid.value = 0
    dut.m_axis_tready.value = 1
    dut.rst.value = 1
    await ClockCycles(dut.clk, 4)
    dut.rst.value = 0
    await ClockCycles(dut.clk, 2)
    stages = [resolve_stage(n) for n in CHAIN]
    load_words = 0
    start = time.perf_counter()
    for k, stage in enumerate(stages):
        words = build_config(platform, platform.slots[k], stage.kind.name)
        await axil.write_dword(4 * 4, k)
        dut.s_axis_cfg_tvalid.value = 1
        for i, w in enumerate(words.tolist()):
            dut.s_axis_cfg_tdata.value = w
            dut.s_axis_cfg_tlast.value = int(i == len(words) - 1)
            await RisingEdge(dut.clk)  # the port is always ready while armed
        dut.s_axis_cfg_tvalid.value = 0
        load_words += len(words)
    load_s = time.perf_counter() - start
    await ClockCycles(dut.clk, 4)
    status = await axil.read_dword(5 * 4)
    assert (status & 3) == 2, f"load failed: status 0x{status:x}"
    source = 0
    for k in range(len(stages)):
        await axil.write_dword((17 + 4 * k) * 4, (1 << 31) | source)
        source = k + 1
    await axil.write_dword(10 * 4, (1 << 31) | source)
    for k, stage in enumerate(stages):
        for index, value in register_words(stage, rows, cols):
            await axil.write_dword(0x1000 * (k + 1) + 4 * index, value)
    frame = np.random.default_rng(0).integers(0, 256, rows * cols, dtype=np.uint32)
    sent = received = 0
    start = time.perf_counter()
    dut.s_axis_tvalid.value = 1
    while sent < pixels:
        dut.s_axis_tdata.value = int(frame[sent])
        dut.s_axis_tlast.value = int(sent % cols == cols - 1)
        dut.s_axis_tuser.value = int(sent == 0)
        await ReadOnly()
        fired = bool(dut.s_axis_tready.value)
        received += int(dut.m_axis_tvalid.value)
        await RisingEdge(dut.clk)
        sent += int(fired)
    stream_s = time.perf_counter() - start
    dut.s_axis_tvalid.value = 0
    with open(os.environ["FPGASHARE_BENCH_OUT"], "w") as f:
        json.dump({"pixels": sent, "stream_s": stream_s, "load_words": load_words, "load_s": load_s,
                   "received": received}, f)

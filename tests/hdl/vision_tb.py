"""Shared cocotb testbench for the vision modules: clock, AXI-Stream BFMs, AXI-Lite master.

Pixels per beat come from the environment (NPPC, default 1; ``run_module`` sets it with the RTL
parameters). At NPPC > 1 a gray row goes as ceil(W / NPPC) beats, pixel 0 in the low byte, the last
beat's spare lanes filled with junk (as a DMA reading a padded row stride would), and the output's
spare lanes are ignored. A multi-channel frame at NPPC > 1 puts pixel k's channels in the beat's
32-bit lane k, junk in the lane's spare bytes; gray results come back packed in the low NPPC bytes,
multi-channel ones in 32-bit lanes.
"""

from __future__ import annotations

import itertools
import os
import random

import numpy as np
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles
from cocotbext.axi import (
    AxiLiteBus,
    AxiLiteMaster,
    AxiStreamBus,
    AxiStreamFrame,
    AxiStreamSink,
    AxiStreamSource,
)
from fpgashare.catalogue.modules import Stage, register_words


async def clock_and_reset(dut, cycles: int = 4) -> None:
    """Start a 100 MHz clock on ``dut.clk`` and hold ``dut.rst`` for ``cycles`` cycles."""
    Clock(dut.clk, 10, unit="ns").start()
    dut.rst.value = 1
    await ClockCycles(dut.clk, cycles)
    dut.rst.value = 0
    await ClockCycles(dut.clk, 2)


def random_pauses(rng: random.Random, duty: float):
    """An endless pause pattern: True (pause) with probability ``duty``."""
    while True:
        yield rng.random() < duty


class VisionTB:
    """Drives one vision module: program registers, stream frames in, collect frames out."""

    def __init__(self, dut, seed: int = 1) -> None:
        self.dut = dut
        self.nppc = int(os.environ.get("NPPC", "1"))
        self.rng = random.Random(seed)
        Clock(dut.clk, 10, unit="ns").start()
        self.source = AxiStreamSource(AxiStreamBus.from_prefix(dut, "s_axis"), dut.clk, dut.rst)
        self.sink = AxiStreamSink(AxiStreamBus.from_prefix(dut, "m_axis"), dut.clk, dut.rst)
        self.axil = AxiLiteMaster(AxiLiteBus.from_prefix(dut, "s_axil"), dut.clk, dut.rst)

    async def reset(self) -> None:
        self.dut.rst.value = 1
        await ClockCycles(self.dut.clk, 4)
        self.dut.rst.value = 0
        await ClockCycles(self.dut.clk, 2)

    def set_pressure(self, input_gaps: float, output_stalls: float) -> None:
        """Random input gaps and output backpressure; 0 disables either."""
        for bfm, duty in ((self.source, input_gaps), (self.sink, output_stalls)):
            if duty:
                bfm.set_pause_generator(random_pauses(self.rng, duty))
            else:
                bfm.clear_pause_generator()
                bfm.pause = False  # clearing leaves the last generated value in place

    async def write_reg(self, index: int, value: int) -> None:
        await self.axil.write_dword(index * 4, value & 0xFFFFFFFF)

    async def read_reg(self, index: int) -> int:
        return await self.axil.read_dword(index * 4)

    async def program(self, stage: Stage, rows: int, cols: int) -> None:
        for index, value in register_words(stage, rows, cols):
            await self.write_reg(index, value)

    def _junk(self, *shape: int) -> np.ndarray:
        return np.frombuffer(self.rng.randbytes(int(np.prod(shape))), np.uint8).reshape(shape).copy()

    async def run_frame(self, frame: np.ndarray, out_shape: tuple[int, ...]) -> np.ndarray:
        """Send ``frame`` row by row (TLAST per row, TUSER on the first pixel); return the output
        (``out_shape`` with a third entry: that many channels per output pixel)."""
        rows, cols = frame.shape[:2]
        flat = frame.reshape(rows, -1)
        lanes = frame.shape[2] if frame.ndim == 3 else 1
        if self.nppc > 1:
            beats = -(-cols // self.nppc)
            if frame.ndim == 3:      # a 32-bit lane per pixel
                padded = self._junk(rows, beats * self.nppc, 4)
                padded[:, :cols, :frame.shape[2]] = frame
                flat, lanes = padded.reshape(rows, -1), 4 * self.nppc
            else:
                padded = self._junk(rows, beats * self.nppc)
                padded[:, :cols] = frame
                flat, lanes = padded, self.nppc
        for r in range(rows):
            data = flat[r].tobytes()
            # cocotbext-axi takes TUSER per byte lane: mark every lane of the first beat.
            tuser = [1 if (r == 0 and i < lanes) else 0 for i in range(len(data))]
            await self.source.send(AxiStreamFrame(data, tuser=tuser))
        out = np.zeros(out_shape, dtype=np.uint8)
        out_cols = out_shape[1]
        channels = out_shape[2] if len(out_shape) == 3 else 1
        width = self.sink.byte_lanes
        for r in range(out_shape[0]):
            got = await self.sink.recv()
            data = np.frombuffer(bytes(got.tdata), dtype=np.uint8)
            beats = -(-out_cols // self.nppc)
            assert data.size == beats * width, f"output row {r}: {data.size} bytes, expected {beats * width}"
            per_beat = data.reshape(beats, width)
            if channels > 1:      # pixel k's channels in the beat's 32-bit lane k (the whole beat at NPPC 1)
                pixels = per_beat.reshape(beats * self.nppc, -1)[:, :channels]
            else:                 # NPPC pixels packed in the low bytes; wider beats zero-extend them
                pixels = per_beat[:, :self.nppc].reshape(-1)
            # The last beat's spare lanes are unspecified.
            row = pixels[:out_cols]
            assert len(row) == out_cols, f"output row {r}: {len(row)} pixels, expected {out_cols}"
            if r == 0:
                first = got.tuser[0] if isinstance(got.tuser, list) else got.tuser
                assert first == 1, "TUSER missing on the first output pixel"
            out[r] = row
        return out


def sizes_to_test(rng: random.Random, count: int) -> list[tuple[int, int]]:
    """Odd and even small sizes, always including 17x9 (cols x rows) and a minimum-size frame."""
    fixed = [(9, 17), (8, 8), (3, 2), (1, 5), (12, 31)]
    extra = [(rng.randint(1, 24), rng.randint(1, 40)) for _ in range(count)]
    return list(itertools.islice(itertools.chain(fixed, extra), len(fixed) + count))


def run_module(toplevel: str, test_module: str, nppc: int, parameters: dict | None = None,
               env: dict[str, str] | None = None, lane_bits: int = 8) -> tuple[int, int]:
    """Build and run a vision module's cocotb tests at ``nppc`` pixels per beat (DATA_W lane_bits *
    NPPC: 8 for gray pixels, 32 for a multi-channel module's lanes)."""
    from fpgashare.hdl_sim.cocotb_build import run_cocotb

    params = dict(parameters or {})
    if nppc > 1:
        params.update(NPPC=nppc, DATA_W=lane_bits * nppc)
    return run_cocotb(toplevel, test_module, params, extra_env={**(env or {}), "NPPC": str(nppc)})

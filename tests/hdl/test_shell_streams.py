"""The shell with several video streams (shell.sv, route_table.sv), driven per cycle by cocotb.

On a ZCU104-shaped shell (4 slots, partitions shrunk to 4 frames so loads are short) with 2 and with
4 streams: frames on different streams through different modules, at once, are each bit-exact with
OpenCV and each takes exactly the cycles it takes alone (inputs with gaps, outputs with stalls, drawn
per stream and cycle so they are the same in both runs); a partial load into a third slot through
the configuration port during them disturbs neither, and the loaded module then works; route writes
that would share a slot between streams, or name a stream the shell lacks, are refused - ROUTE_ERR
says why, the route registers keep their words - while the frames run, and the frames do not notice.
"""

from __future__ import annotations

import os
import random
from dataclasses import dataclass, field

import cocotb
import numpy as np
import pytest
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, ReadOnly, RisingEdge
from cocotbext.axi import AxiLiteBus, AxiLiteMaster
from fpgashare.backends.shell_map import (
    MODULE_WINDOW,
    REG_CFG_CTRL,
    REG_CFG_STATUS,
    REG_ROUTE_ERR,
    REG_STREAMS,
    ROUTE_ENABLE,
    ROUTE_ERR_SHARED,
    ROUTE_ERR_STREAM,
    route_out_reg,
    route_word,
    slot_module_of,
    slot_reg,
)
from fpgashare.bitstream.registry import build_config
from fpgashare.catalogue.modules import KINDS, register_words, resolve_stage
from fpgashare.catalogue.platform import load_platform, manifest_at_pixels_per_clock
from fpgashare.catalogue.vision_ref import chain_reference

ROWS, COLS = 16, 24
MODULES = ("conv3x3", "threshold", "sobel_mag", "downscale2x")
GAP, STALL = 0.1, 0.2      #: chance per cycle that a stream's input waits, that its output is not taken
LOADED = 2                 #: the slot loaded while the streams run
#: per shell stream count: stream -> (slots of its chain, stages in them)
PLANS = {
    2: {0: ([0, 3], ["gauss3x3", "downscale2x"]), 1: ([1], ["threshold"])},
    4: {0: ([0], ["gauss3x3"]), 1: ([1], ["threshold"]), 3: ([3], ["downscale2x"])},
}


def small_manifest(dest_dir, streams: int):
    """The ZCU104 manifest with four of its modules, partitions of 4 frames, and ``streams`` streams."""
    path = manifest_at_pixels_per_clock("zcu104", 1, dest_dir / "zcu104-streams.toml", modules=MODULES)
    text = path.read_text().replace("frames = 2800", "frames = 4")
    text = text.replace("\nstreams = 4 ", f"\nstreams = {streams} ", 1)
    path.write_text(text)
    return load_platform(path)


@dataclass
class Job:
    """One frame on one stream: what goes in, what came out, and when."""

    stream: int
    beats: np.ndarray
    cols: int                   #: beats per input row
    out_shape: tuple[int, int]
    rng: random.Random
    i_in: int = 0
    out: list[int] = field(default_factory=list)
    first: int | None = None    #: cycle of the first input beat taken
    last: int | None = None     #: cycle of the last output beat taken
    framing_errors: int = 0

    @property
    def n_out(self) -> int:
        return self.out_shape[0] * self.out_shape[1]

    @property
    def done(self) -> bool:
        return len(self.out) >= self.n_out

    @property
    def cycles(self) -> int:
        return self.last - self.first + 1


def _slice(value: int, index: int, width: int) -> int:
    return (value >> (index * width)) & ((1 << width) - 1)


async def run(dut, streams: int, jobs: list[Job], cfg: np.ndarray | None = None, limit: int = 20000) -> int:
    """Drive every job's stream (and ``cfg`` into the configuration port) until all outputs are in;
    the cycles it took. Each job draws its gap and stall from its own generator every cycle, so a
    job sees the same pattern whether or not others run."""
    by_stream = {j.stream: j for j in jobs}
    n_cfg = 0 if cfg is None else len(cfg)
    i_cfg = cycle = 0
    while not all(j.done for j in jobs) or i_cfg < n_cfg:
        if cycle >= limit:
            raise AssertionError(f"streams not done after {limit} cycles: {[(j.i_in, len(j.out)) for j in jobs]}")
        drive = {}
        for s in range(streams):
            job = by_stream.get(s)
            if job is None:
                drive[s] = (0, 0, 0, 0, 1)
                continue
            gap, stall = job.rng.random() < GAP, job.rng.random() < STALL
            live = job.i_in < len(job.beats)
            i = min(job.i_in, len(job.beats) - 1)
            drive[s] = (int(job.beats[i]), int(live and not gap), int(i % job.cols == job.cols - 1), int(i == 0),
                        int(not stall))
        dut.s_axis_tdata.value, dut.s_axis_tvalid.value, dut.s_axis_tlast.value, dut.s_axis_tuser.value, \
            dut.m_axis_tready.value = drive[0]
        more = [sum(drive[s][f] << ((s - 1) * (32 if f == 0 else 1)) for s in range(1, streams)) for f in range(5)]
        dut.s_axis_more_tdata.value, dut.s_axis_more_tvalid.value, dut.s_axis_more_tlast.value, \
            dut.s_axis_more_tuser.value, dut.m_axis_more_tready.value = more
        cfg_on = i_cfg < n_cfg
        dut.s_axis_cfg_tvalid.value = int(cfg_on)
        if cfg_on:
            dut.s_axis_cfg_tdata.value = int(cfg[i_cfg])
            dut.s_axis_cfg_tlast.value = int(i_cfg == n_cfg - 1)
        await ReadOnly()
        in_ready = int(dut.s_axis_tready.value) | int(dut.s_axis_more_tready.value) << 1
        out_valid = int(dut.m_axis_tvalid.value) | int(dut.m_axis_more_tvalid.value) << 1
        out_last = int(dut.m_axis_tlast.value) | int(dut.m_axis_more_tlast.value) << 1
        out_user = int(dut.m_axis_tuser.value) | int(dut.m_axis_more_tuser.value) << 1
        out_data = int(dut.m_axis_tdata.value) | int(dut.m_axis_more_tdata.value) << 32
        cfg_fire = cfg_on and bool(dut.s_axis_cfg_tready.value)
        for s, job in by_stream.items():
            _, valid, _, _, ready = drive[s]
            if valid and in_ready >> s & 1:
                job.first = cycle if job.first is None else job.first
                job.i_in += 1
            if ready and out_valid >> s & 1:
                n = len(job.out)
                want_last = n % job.out_shape[1] == job.out_shape[1] - 1
                job.framing_errors += int(bool(out_last >> s & 1) != want_last)
                job.framing_errors += int(bool(out_user >> s & 1) != (n == 0))
                job.out.append(_slice(out_data, s, 32))
                job.last = cycle
        await RisingEdge(dut.clk)
        i_cfg += int(cfg_fire)
        cycle += 1
    dut.s_axis_tvalid.value = 0
    dut.s_axis_more_tvalid.value = 0
    dut.s_axis_cfg_tvalid.value = 0
    return cycle


class Shell:
    """AXI-Lite access to the shell's registers and its modules'."""

    def __init__(self, dut, platform) -> None:
        self.dut, self.platform = dut, platform
        self.axil = AxiLiteMaster(AxiLiteBus.from_prefix(dut, "s_axil"), dut.clk, dut.rst)
        self.n = len(platform.slots)

    async def read(self, index: int) -> int:
        return await self.axil.read_dword(4 * index)

    async def write(self, index: int, value: int) -> None:
        await self.axil.write_dword(4 * index, value)

    async def load(self, slot: int, module: str) -> None:
        words = build_config(self.platform, self.platform.slots[slot], module)
        await self.write(REG_CFG_CTRL, slot)
        await run(self.dut, self.platform.streams, [], words)
        await ClockCycles(self.dut.clk, 8)
        await self.check_loaded(slot, module)

    async def check_loaded(self, slot: int, module: str) -> None:
        status = await self.read(REG_CFG_STATUS)
        assert status & 3 == 2 and (status >> 8) & 0xFF == 0, f"load of {module} into slot {slot}: 0x{status:x}"
        assert slot_module_of(await self.read(slot_reg(slot, 0))) == KINDS[module].module_id

    async def route(self, stream: int, chain: list[int]) -> None:
        source = 0
        for slot in chain:
            await self.write(slot_reg(slot, 1), route_word(source, stream))
            source = slot + 1
        await self.write(route_out_reg(stream, self.n), ROUTE_ENABLE | source)

    async def program(self, slot: int, stage, rows: int, cols: int) -> None:
        for index, value in register_words(stage, rows, cols):
            await self.axil.write_dword(MODULE_WINDOW * (slot + 1) + 4 * index, value)

    async def route_words(self) -> list[int]:
        regs = [slot_reg(k, 1) for k in range(self.n)] + [route_out_reg(s, self.n)
                                                            for s in range(self.platform.streams)]
        return [await self.read(r) for r in regs]


def make_jobs(plan: dict, frames: dict[int, np.ndarray]) -> list[Job]:
    jobs = []
    for stream, (_, names) in plan.items():
        stages = [resolve_stage(n) for n in names]
        golden = chain_reference(stages, frames[stream])
        jobs.append(Job(stream, frames[stream].astype(np.uint32).reshape(-1), COLS, golden.shape,
                        random.Random(1000 + stream)))
    return jobs


def check_bit_exact(plan: dict, frames: dict[int, np.ndarray], jobs: list[Job], label: str) -> None:
    for job in jobs:
        stages = [resolve_stage(n) for n in plan[job.stream][1]]
        golden = chain_reference(stages, frames[job.stream])
        out = (np.array(job.out[:job.n_out], dtype=np.uint32) & 0xFF).astype(np.uint8).reshape(golden.shape)
        assert np.array_equal(out, golden), f"{label}: stream {job.stream} differs from OpenCV"
        assert job.framing_errors == 0 and len(job.out) == job.n_out, f"{label}: stream {job.stream} framing"


@cocotb.test(timeout_time=200, timeout_unit="ms")
async def streams_run_at_once_bit_exact_in_their_own_cycles(dut):
    platform = load_platform(os.environ["FPGASHARE_STREAMS_MANIFEST"])
    streams = platform.streams
    plan = PLANS[streams]
    Clock(dut.clk, 10, unit="ns").start()
    dut.s_axis_tvalid.value = dut.s_axis_more_tvalid.value = dut.s_axis_cfg_tvalid.value = 0
    dut.m_axis_tready.value = dut.m_axis_more_tready.value = 0
    dut.rst.value = 1
    await ClockCycles(dut.clk, 4)
    dut.rst.value = 0
    await ClockCycles(dut.clk, 2)
    shell = Shell(dut, platform)
    assert await shell.read(REG_STREAMS) == streams

    for stream, (slots, names) in plan.items():
        rows, cols = ROWS, COLS
        for slot, name in zip(slots, names, strict=True):
            stage = resolve_stage(name)
            await shell.load(slot, stage.kind.name)
            await shell.program(slot, stage, rows, cols)
            rows, cols = stage.kind.output_shape(rows, cols)   # what the next stage of the chain sees
        await shell.route(stream, slots)
    rng = np.random.default_rng(7)
    frames = {s: rng.integers(0, 256, (ROWS, COLS), dtype=np.uint8) for s in plan}

    alone = {}
    for stream in plan:
        jobs = make_jobs({stream: plan[stream]}, frames)
        await run(dut, streams, jobs)
        check_bit_exact(plan, frames, jobs, f"stream {stream} alone")
        alone[stream] = jobs[0].cycles
        await ClockCycles(dut.clk, 16)
    routes_before = await shell.route_words()

    # All at once, a load into the free slot through the port, and refused route writes meanwhile.
    sobel = build_config(platform, platform.slots[LOADED], "sobel_mag")
    await shell.write(REG_CFG_CTRL, LOADED)
    jobs = make_jobs(plan, frames)
    task = cocotb.start_soon(run(dut, streams, jobs, sobel))
    n = len(platform.slots)
    s0_tail = plan[0][0][-1]
    refused = [
        (slot_reg(1, 1), route_word(s0_tail + 1, 1)),        # stream 1's slot would take stream 0's slot
        (route_out_reg(1, n), ROUTE_ENABLE | (s0_tail + 1)),  # stream 1's output would take stream 0's slot
        (slot_reg(LOADED, 1), route_word(0, streams)),        # a stream the shell does not have
        (slot_reg(0, 1), route_word(0, 1)),                   # stream 0's slot moved to stream 1 while in use
    ]
    for index, value in refused:
        await shell.write(index, value)
    err = await shell.read(REG_ROUTE_ERR)
    await task
    check_bit_exact(plan, frames, jobs, "all streams at once")
    together = {j.stream: j.cycles for j in jobs}
    dut._log.info("cycles alone %s, together %s", alone, together)
    assert together == alone
    assert err == (len(refused) << 16 | 0 << 8 | ROUTE_ERR_SHARED | ROUTE_ERR_STREAM), f"ROUTE_ERR 0x{err:x}"
    assert await shell.route_words() == routes_before
    await ClockCycles(dut.clk, 8)
    await shell.check_loaded(LOADED, "sobel_mag")
    await shell.write(REG_ROUTE_ERR, 0)
    assert await shell.read(REG_ROUTE_ERR) == 0

    # The loaded slot works: stream 1 rerouted through it (its old slot cut first), alone.
    await shell.write(slot_reg(plan[1][0][0], 1), 0)
    await shell.route(1, [LOADED])
    await shell.program(LOADED, resolve_stage("sobel_mag"), ROWS, COLS)
    sobel_plan = {1: ([LOADED], ["sobel_mag"])}
    jobs = make_jobs(sobel_plan, frames)
    await run(dut, streams, jobs)
    check_bit_exact(sobel_plan, frames, jobs, "stream 1 through the loaded slot")
    assert await shell.read(REG_ROUTE_ERR) == 0


@pytest.mark.rtl
@pytest.mark.parametrize("streams", [2, 4])
def test_shell_streams_rtl(tmp_path, streams):
    from fpgashare.hdl_sim.cocotb_build import run_cocotb

    platform = small_manifest(tmp_path, streams)
    tests, failed = run_cocotb("shell", __name__, platform.rtl_parameters(),
                               extra_env={"FPGASHARE_STREAMS_MANIFEST": str(platform.path)})
    assert tests == 1 and failed == 0

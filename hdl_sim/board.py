"""The simulated board: a platform's shell in RTL, loaded and driven like the real one.

Bitstreams go through the configuration port word by word; frames go through the stream switch
and the slots' modules beat by beat (one pixel, or four gray pixels at pixels_per_clock = 4).
Times come from RTL cycles at the platform's clocks. The shell is built with the streams the
harness drives (stream 0: ``harness_parameters``), whatever the platform's stream count.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
from fpgashare.backends.shell_map import (
    MODULE_WINDOW,
    REG_CFG_CTRL,
    REG_CFG_CYCLES,
    REG_CFG_STATUS,
    REG_CFG_WORDS,
    REG_DEBUG,
    ShellControl,
    pack_beats,
    pack_pixels,
    slot_module_of,
    slot_reg,
    unpack_beats,
)
from fpgashare.bitstream.packets import ACTIVATION_CYCLES, PortError
from fpgashare.catalogue.modules import KINDS
from fpgashare.catalogue.platform import Platform
from fpgashare.errors import FrameError, LoadError
from fpgashare.hdl_sim.cosim import Job, PortPhase, StreamPhase, run_alone
from fpgashare.hdl_sim.harness import HarnessError, RunStats, ShellHarness, harness_parameters

log = logging.getLogger(__name__)

__all__ = ["ACTIVATION_CYCLES", "LoadResult", "SimBoard", "SlotStatus", "pack_beats", "pack_pixels", "unpack_beats"]


SLOT_STATES = ("blank", "loading", "ready", "failed")


@dataclass(frozen=True)
class LoadResult:
    """Outcome of one partial load through the configuration port."""

    slot: int
    error: PortError
    words: int        #: words the port consumed up to activation or error
    cycles: int       #: port cycles from the first word to activation or error
    module_id: int

    @property
    def ok(self) -> bool:
        return self.error == PortError.OK


@dataclass(frozen=True)
class SlotStatus:
    state: str
    module_id: int
    error: PortError
    decoupled: bool


class SimBoard(ShellControl):
    """A platform's shell in Verilator, with the operations a runtime backend needs."""

    def __init__(self, platform: Platform, streams: int = 1, modules: Iterable[str] | None = None,
                 external: bool = True, checkers: bool = True, fabric: bool = True) -> None:
        """``modules``: the module names the run may load (default: every one the platform's slots can
        hold); only those are simulated, each slot evaluating the one its last load activated.
        ``external=False`` simulates the shell with every module of every slot inside (the old build).
        ``checkers=False`` leaves the assertion checkers out of the shell: a reference for what they cost
        (benchmarks/rtl_throughput.py), never for a run whose checks matter. ``fabric=False`` keeps the
        AXI-Lite control path inside the shell (evaluated with it every cycle) where an external build
        simulates it on its own: the benchmark's reference for what that saves."""
        self.platform = platform
        self.slot_count = len(platform.slots)
        parameters = harness_parameters(platform.rtl_parameters(), streams)
        self.stream_count = int(parameters["NUM_STREAMS"])   # routes for other streams are refused before a write
        ids = None if modules is None else {KINDS[platform.module(name).name].module_id for name in modules}
        self.rtl = ShellHarness(parameters, ids, external=external, checkers=checkers, fabric=fabric)

    # -- registers
    def shell_read(self, index: int) -> int:
        return self.rtl.read(index * 4)[1]

    def shell_write(self, index: int, value: int) -> None:
        self.rtl.write(index * 4, value)

    def module_write(self, slot: int, index: int, value: int) -> int:
        return self.rtl.write(MODULE_WINDOW * (slot + 1) + index * 4, value)

    def module_read(self, slot: int, index: int) -> tuple[int, int]:
        return self.rtl.read(MODULE_WINDOW * (slot + 1) + index * 4)

    def slot_status(self, slot: int) -> SlotStatus:
        value = self.shell_read(slot_reg(slot, 0))
        return SlotStatus(SLOT_STATES[value & 3], slot_module_of(value), PortError((value >> 8) & 0xFF),
                          bool(value >> 16 & 1))

    @property
    def cycles(self) -> int:
        return self.rtl.cycles

    def set_decoupler_bypass(self, bypass: bool) -> None:
        """Fault injection for tests: when set, no slot is ever decoupled."""
        self.shell_write(REG_DEBUG, int(bypass))

    # -- configuration
    def load(self, slot: int, words: np.ndarray) -> LoadResult:
        """Stream partial-bitstream words into the port for ``slot``; return the port's verdict.

        Does not raise on a rejected bitstream: the result carries the port's error code.
        """
        return run_alone(self, self.load_job(slot, words))

    def _load_result(self, slot: int, stats: RunStats) -> LoadResult:
        if not stats.finished:
            raise HarnessError("configuration port stopped accepting words")
        status = self.shell_read(REG_CFG_STATUS)
        if status & 3 == 1:
            raise HarnessError("configuration port still busy after the last word")
        error = PortError((status >> 8) & 0xFF)
        return LoadResult(slot, error, self.shell_read(REG_CFG_WORDS), self.shell_read(REG_CFG_CYCLES),
                          self.slot_status(slot).module_id)

    def load_job(self, slot: int, words: np.ndarray) -> Job:
        """``load`` as a job of the co-simulation (hdl_sim/cosim.py): the port's words run beside
        whatever the streams carry; the job returns the LoadResult."""
        self.shell_write(REG_CFG_CTRL, slot)
        _, stats = yield PortPhase(words, ACTIVATION_CYCLES + 3, 4 * len(words) + 4096)
        return self._load_result(slot, stats)

    def frame_job(self, stream: int, slots: list[int], stages: list, frame: np.ndarray, settle: int = 0) -> Job:
        """One frame through ``slots`` on video stream ``stream``: route, program, stream; the route is
        released at the end. A job of the co-simulation, or run
        alone (``run_alone``) with ``settle`` cycles watched for extra output beats after the last.
        Returns (output, RunStats, result registers by stage name)."""
        self.route(slots, stream)
        try:
            shape = frame.shape[:2]
            for slot, stage in zip(slots, stages, strict=True):
                self.program(slot, stage, *shape)
                shape = stage.kind.output_shape(*shape)
            rows, cols = frame.shape[:2]
            nppc = self.platform.pixels_per_clock
            in_beats, out_beats = -(-cols // nppc), -(-shape[1] // nppc)
            timeout = 20 * (rows + 2) * (in_beats + 2) + 4096
            words = self.rtl.beat_words
            out, stats = yield StreamPhase(stream, pack_beats(frame, nppc, words), in_beats, shape[0] * out_beats,
                                           out_beats, timeout, settle=settle)
        finally:        # a frame that fails (a refused register write, a hung stream) frees its slots too
            self.release_route(stream)
        if not stats.finished:
            raise FrameError(f"stream {stream}: frame did not complete: {stats.sent}/{rows * in_beats} beats in, "
                             f"{stats.received}/{shape[0] * out_beats} out after {timeout} cycles")
        if stats.tlast_errors or stats.extra_out:
            raise FrameError(f"stream {stream}: frame framing broken in RTL: {stats.tlast_errors} TLAST errors, "
                             f"{stats.extra_out} extra beats")
        return unpack_beats(out, shape, nppc, words), stats, self.read_results(slots, stages)

    def load_or_raise(self, slot: int, words: np.ndarray) -> LoadResult:
        result = self.load(slot, words)
        if not result.ok:
            raise LoadError(f"slot {slot}: configuration port rejected the bitstream: "
                            f"{result.error.name} ({result.error.description})", int(result.error))
        return result

    # -- streaming (route and program come from ShellControl)
    def stream(self, frame: np.ndarray, out_shape: tuple[int, int], *, seed: int = 1, gap_pct: int = 0,
               stall_pct: int = 0, cfg: np.ndarray | None = None, cfg_delay: int = 0,
               settle: int = 64) -> tuple[np.ndarray, RunStats]:
        """Send one frame through the routed chain; return the output frame and what was seen."""
        rows, cols = frame.shape[:2]
        out_rows, out_cols = out_shape
        nppc = self.platform.pixels_per_clock
        in_beats, out_beats = -(-cols // nppc), -(-out_cols // nppc)   # per row
        timeout = 20 * (rows + 2) * (in_beats + 2) + 4096 + (0 if cfg is None else 4 * len(cfg))
        words = self.rtl.beat_words
        out, stats = self.rtl.run(pack_beats(frame, nppc, words), in_beats, out_rows * out_beats, out_beats, cfg=cfg,
                                  cfg_delay=cfg_delay, seed=seed, gap_pct=gap_pct, stall_pct=stall_pct,
                                  settle=settle, max_cycles=timeout)
        if not stats.finished:
            raise FrameError(f"frame did not complete: {stats.sent}/{rows * in_beats} beats in, "
                             f"{stats.received}/{out_rows * out_beats} out after {timeout} cycles")
        return unpack_beats(out, (out_rows, out_cols), nppc, words), stats

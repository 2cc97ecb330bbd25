"""The simulated board: a platform's shell in RTL, loaded and driven like the real one.

Bitstreams go through the configuration port word by word; frames go through the stream switch
and the slots' modules pixel by pixel. Times come from RTL cycles at the platform's clocks.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
from fpgashare.bitstream.packets import ACTIVATION_CYCLES, PortError
from fpgashare.errors import FrameError, LoadError
from fpgashare.hdl_sim.harness import HarnessError, RunStats, ShellHarness
from fpgashare.platform import Platform
from fpgashare.shell_map import (
    MODULE_WINDOW,
    REG_CFG_CTRL,
    REG_CFG_CYCLES,
    REG_CFG_STATUS,
    REG_CFG_WORDS,
    REG_DEBUG,
    ShellControl,
    pack_pixels,
    slot_reg,
    unpack_pixels,
)

log = logging.getLogger(__name__)

__all__ = ["ACTIVATION_CYCLES", "LoadResult", "SimBoard", "SlotStatus", "pack_pixels"]

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

    def __init__(self, platform: Platform) -> None:
        self.platform = platform
        self.slot_count = len(platform.slots)
        self.rtl = ShellHarness(platform.rtl_parameters())

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
        return SlotStatus(SLOT_STATES[value & 3], (value >> 4) & 0xF, PortError((value >> 8) & 0xFF),
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
        self.shell_write(REG_CFG_CTRL, slot)
        _, stats = self.rtl.run(cfg=words)
        self.rtl.idle(ACTIVATION_CYCLES + 3)
        return self._load_result(slot, stats)

    def _load_result(self, slot: int, stats: RunStats) -> LoadResult:
        if not stats.finished:
            raise HarnessError("configuration port stopped accepting words")
        status = self.shell_read(REG_CFG_STATUS)
        if status & 3 == 1:
            raise HarnessError("configuration port still busy after the last word")
        error = PortError((status >> 8) & 0xFF)
        return LoadResult(slot, error, self.shell_read(REG_CFG_WORDS), self.shell_read(REG_CFG_CYCLES),
                          self.slot_status(slot).module_id)

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
        timeout = 20 * (rows + 2) * (cols + 2) + 4096 + (0 if cfg is None else 4 * len(cfg))
        out, stats = self.rtl.run(pack_pixels(frame), cols, out_rows * out_cols, out_cols, cfg=cfg,
                                  cfg_delay=cfg_delay, seed=seed, gap_pct=gap_pct, stall_pct=stall_pct,
                                  settle=settle, max_cycles=timeout)
        if not stats.finished:
            raise FrameError(f"frame did not complete: {stats.sent}/{rows * cols} pixels in, "
                             f"{stats.received}/{out_rows * out_cols} out after {timeout} cycles")
        return unpack_pixels(out, (out_rows, out_cols)), stats

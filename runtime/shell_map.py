"""The static shell's AXI-Lite register map (hdl_sim/rtl/shell.sv) and what every board does
through it: route a chain of slots through the stream switch and program a stage's module.

The simulated board and the pynq board share this code; they differ only in how a register word
is read and written (the RTL harness's AXI-Lite master, or pynq's MMIO).
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np
from fpgashare.errors import LoadError
from fpgashare.modules import Stage, register_words

# Shell register word indices.
REG_SHELL_ID, REG_INFO, REG_CYCLES_LO, REG_CYCLES_HI = 0, 1, 2, 3
REG_CFG_CTRL, REG_CFG_STATUS, REG_CFG_WORDS, REG_CFG_CYCLES, REG_CFG_LOADS = 4, 5, 6, 7, 8
REG_DEBUG, REG_ROUTE_OUT, REG_IDCODE, REG_LINK_ERR = 9, 10, 11, 12
ROUTE_ENABLE = 1 << 31
MODULE_WINDOW = 0x1000     #: slot k's module registers start at byte MODULE_WINDOW * (k + 1)


def slot_reg(slot: int, offset: int) -> int:
    """Word index of a slot's register in the shell block (0: status, 1: route)."""
    return 16 + 4 * slot + offset


def pack_pixels(frame: np.ndarray) -> np.ndarray:
    """Frame -> one 32-bit beat per pixel: gray in [7:0]; channel k of a multi-channel frame in
    [8k+7:8k] (RGB as R [7:0], G [15:8], B [23:16]; a frame and its reference as [7:0], [15:8])."""
    if frame.ndim == 2:
        return frame.astype(np.uint32).reshape(-1)
    chans = frame.astype(np.uint32).reshape(-1, frame.shape[2])
    beats = np.zeros(chans.shape[0], dtype=np.uint32)
    for k in range(chans.shape[1]):
        beats |= chans[:, k] << (8 * k)
    return beats


def unpack_pixels(beats: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    """Output beats -> a gray frame (every module chain ends in one channel)."""
    return (np.asarray(beats) & 0xFF).astype(np.uint8).reshape(shape)


class ShellControl(ABC):
    """Route and program through the shell's registers; subclasses say how a word is written."""

    slot_count: int

    @abstractmethod
    def shell_write(self, index: int, value: int) -> None: ...

    @abstractmethod
    def module_write(self, slot: int, index: int, value: int) -> int:
        """Write a module register of ``slot``; the AXI write response (0 = OKAY)."""

    def route(self, chain: list[int]) -> None:
        """Route input -> chain[0] -> chain[1] ... -> output; every other slot input is cut."""
        if len(set(chain)) != len(chain):
            raise ValueError(f"a slot appears twice in the chain {chain}")
        for k in range(self.slot_count):
            self.shell_write(slot_reg(k, 1), 0)
        source = 0
        for slot in chain:
            self.shell_write(slot_reg(slot, 1), ROUTE_ENABLE | source)
            source = slot + 1
        self.shell_write(REG_ROUTE_OUT, ROUTE_ENABLE | source)

    def program(self, slot: int, stage: Stage, rows: int, cols: int) -> None:
        """Write ``stage``'s parameters and the frame size into the module in ``slot``."""
        for index, value in register_words(stage, rows, cols):
            resp = self.module_write(slot, index, value)
            if resp != 0:
                raise LoadError(f"slot {slot}: register write refused (BRESP {resp}); is the slot loaded?", 0)

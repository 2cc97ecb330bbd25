"""The static shell's AXI-Lite register map (hdl_sim/rtl/shell.sv) and what every board does
through it: route a chain of slots through the stream switch for one of the shell's video streams,
and program a stage's module.

Routes of different streams must be disjoint: the shell refuses a route word that would put a slot
into two streams (hdl_sim/rtl/route_table.sv, the ROUTE_ERR register), and ``check_routes`` refuses
such a set of routes before anything is written.

The simulated board and the pynq board share this code; they differ only in how a register word
is read and written (the RTL harness's AXI-Lite master, or pynq's MMIO).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence

import numpy as np
from fpgashare.catalogue.modules import COMMON_REGS, Stage, register_words
from fpgashare.errors import FpgashareError, FrameError, LoadError
from fpgashare.hwtables.tables import (
    MODULE_WINDOW,
    REG_CFG_CTRL,
    REG_CFG_CYCLES,
    REG_CFG_LOADS,
    REG_CFG_STATUS,
    REG_CFG_WORDS,
    REG_CYCLES_HI,
    REG_CYCLES_LO,
    REG_DEBUG,
    REG_IDCODE,
    REG_INFO,
    REG_LINK_ERR,
    REG_ROUTE_ERR,
    REG_ROUTE_OUT,
    REG_SHELL_ID,
    REG_STREAMS,
    ROUTE_ENABLE_MASK,
    ROUTE_ERR_SHARED_MASK,
    ROUTE_ERR_STREAM_MASK,
    ROUTE_STREAM_LSB,
    SLOT_REG_BASE,
    SLOT_REG_STRIDE,
    SLOT_ROUTE,
    SLOT_STATUS_MODULE_LSB,
    SLOT_STATUS_MODULE_MASK,
)

# Register indices and fields come from the hardware tables (runtime/hwtables/tables.toml), as shell.sv's do.
ROUTE_ENABLE = ROUTE_ENABLE_MASK
ROUTE_STREAM_SHIFT = ROUTE_STREAM_LSB     #: a slot route's stream field
ROUTE_ERR_STREAM, ROUTE_ERR_SHARED = ROUTE_ERR_STREAM_MASK, ROUTE_ERR_SHARED_MASK   #: ROUTE_ERR causes

__all__ = ["MODULE_WINDOW", "REG_CFG_CTRL", "REG_CFG_CYCLES", "REG_CFG_LOADS", "REG_CFG_STATUS", "REG_CFG_WORDS",
           "REG_CYCLES_HI", "REG_CYCLES_LO", "REG_DEBUG", "REG_IDCODE", "REG_INFO", "REG_LINK_ERR", "REG_ROUTE_ERR",
           "REG_ROUTE_OUT", "REG_SHELL_ID", "REG_STREAMS"]


class RouteError(FpgashareError, ValueError):
    """A set of stream routes the shell cannot carry: a slot in two routes (or twice in one), a slot
    or stream the shell does not have."""


def slot_reg(slot: int, offset: int) -> int:
    """Word index of a slot's register in the shell block (offset SLOT_STATUS, SLOT_ROUTE, ...)."""
    return SLOT_REG_BASE + SLOT_REG_STRIDE * slot + offset


def slot_module_of(status: int) -> int:
    """The module id in a SLOT_STATUS word (field SLOT_STATUS_MODULE; 0 = blank)."""
    return (status & SLOT_STATUS_MODULE_MASK) >> SLOT_STATUS_MODULE_LSB


def route_out_reg(stream: int, slot_count: int) -> int:
    """Word index of the route register of ``stream``'s output (stream 0's is ROUTE_OUT)."""
    return REG_ROUTE_OUT if stream == 0 else SLOT_REG_BASE + SLOT_REG_STRIDE * slot_count + stream - 1


def route_word(source: int, stream: int = 0) -> int:
    """An enabled route: ``source`` 0 is the stream's input, k + 1 is slot k's output."""
    return ROUTE_ENABLE | stream << ROUTE_STREAM_SHIFT | source


def check_routes(routes: Mapping[int, Sequence[int]], streams: int, slots: int) -> None:
    """Refuse, with a RouteError naming the stream, the slot and the problem, a set of routes
    (stream -> chain of slot indices) that the shell could not carry at once: a stream index outside
    0..streams-1, a slot outside 0..slots-1, a slot twice in one chain, or a slot in two streams' chains."""
    owner: dict[int, int] = {}
    for stream, chain in sorted(routes.items()):
        if isinstance(stream, bool) or not isinstance(stream, int) or not 0 <= stream < streams:
            raise RouteError(f"route for stream {stream!r}: the shell has {streams} stream(s), 0..{streams - 1}")
        for slot in chain:
            if isinstance(slot, bool) or not isinstance(slot, int) or not 0 <= slot < slots:
                raise RouteError(f"stream {stream}'s route {list(chain)} names slot {slot!r}; "
                                 f"the shell has slots 0..{slots - 1}")
            if owner.get(slot) == stream:
                raise RouteError(f"a slot appears twice in the chain {list(chain)} (slot {slot}, stream {stream})")
            if slot in owner:
                raise RouteError(f"slot {slot} is in the routes of streams {owner[slot]} and {stream}: "
                                 f"a slot carries one stream at a time")
            owner[slot] = stream


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


def pack_beats(frame: np.ndarray, nppc: int, words: int) -> np.ndarray:
    """Frame -> stream beats at ``nppc`` pixels per beat, as 32-bit words, ``words`` a beat (the
    platform's ``stream_words``: 1, or ``nppc`` when the shell's stream is 32 * NPPC bits). At 1,
    one pixel (all its channels) per beat (``pack_pixels``). At 4, a gray frame packs four pixels in
    the beat's low word, pixel 0 in the low byte (as Vitis Vision packs them), any
    other words zero; a multi-channel frame (RGB, or a frame and its reference) puts pixel k's
    channels in word k, as ``pack_pixels`` puts them in a beat at 1 (it needs ``words`` = 4). Each row
    is padded with zeros to whole beats: the DMA reads rows from a stride rounded up to the bus width,
    and the modules know the width from their registers, so the spare lanes of a row's last beat carry
    nothing they use."""
    if nppc == 1:
        return pack_pixels(frame)
    rows, cols = frame.shape[:2]
    beats = -(-cols // nppc)
    if frame.ndim == 3:
        if words != nppc:
            raise FrameError(f"a {frame.shape[2]}-channel frame at {nppc} pixels per clock needs a stream of "
                             f"{nppc} words a beat (a pixel per 32-bit lane); this shell's beats have {words}")
        padded = np.zeros((rows, beats * nppc, frame.shape[2]), dtype=np.uint8)
        padded[:, :cols] = frame
        return pack_pixels(padded)
    if frame.ndim != 2:
        raise FrameError(f"frames are rows x cols (x channels), got shape {frame.shape}")
    padded = np.zeros((rows, beats * nppc), dtype=np.uint8)
    padded[:, :cols] = frame
    return word_beats(padded.view(np.dtype("<u4")).reshape(-1).astype(np.uint32), words)


def word_beats(words: np.ndarray, beat_words: int) -> np.ndarray:
    """32-bit words -> one beat each of ``beat_words`` words, the word in the beat's low lane (a gray
    beat at NPPC 4 on a wide stream; the DNN tile's words)."""
    if beat_words == 1:
        return words
    out = np.zeros((words.size, beat_words), dtype=np.uint32)
    out[:, 0] = words
    return out.reshape(-1)


def low_words(beats: np.ndarray, beat_words: int) -> np.ndarray:
    """Beats of ``beat_words`` words -> the low word of each (``word_beats`` undone)."""
    return beats if beat_words == 1 else np.asarray(beats).reshape(-1, beat_words)[:, 0]


def unpack_beats(beats: np.ndarray, shape: tuple[int, int], nppc: int, words: int) -> np.ndarray:
    """Output beats (``words`` each) -> a gray frame, dropping the spare lanes of each row's last beat."""
    if nppc == 1:
        return unpack_pixels(beats, shape)
    rows, cols = shape
    per_row = -(-cols // nppc)
    low = np.ascontiguousarray(low_words(np.asarray(beats, dtype="<u4"), words))
    raw = low.reshape(rows, per_row).view(np.uint8)
    return raw[:, :cols].copy()


class ShellControl(ABC):
    """Route and program through the shell's registers; subclasses say how a word is written."""

    slot_count: int
    stream_count: int = 1   #: video streams of the shell (platform streams); subclasses set it to use more

    @abstractmethod
    def shell_write(self, index: int, value: int) -> None: ...

    @abstractmethod
    def module_write(self, slot: int, index: int, value: int) -> int:
        """Write a module register of ``slot``; the AXI write response (0 = OKAY)."""

    @abstractmethod
    def module_read(self, slot: int, index: int) -> tuple[int, int]:
        """Read a module register of ``slot``: (AXI read response, 0 = OKAY; the value)."""

    def read_results(self, slots: list[int], stages: list) -> dict[str, dict[str, int]]:
        """The result registers each stage's module holds after a frame (moments' M00 ...,
        template_match's BEST ...), by stage name: what the CPU reads once the DMA is done."""
        results = {}
        for slot, stage in zip(slots, stages, strict=True):
            own = sorted(stage.kind.read_only - set(COMMON_REGS), key=stage.kind.reg_index)
            if own and stage.kind.kernel_kind == "vision":
                results[stage.name] = {reg: self.module_read(slot, stage.kind.reg_index(reg))[1] for reg in own}
        return results

    @property
    def routes(self) -> dict[int, list[int]]:
        """The chain last routed for each stream (what this object wrote; a reset of the shell
        behind its back is not seen: call ``forget_routes`` then)."""
        return self.__dict__.setdefault("_stream_routes", {})

    def forget_routes(self) -> None:
        """The shell was reset: no stream holds a slot any more."""
        self.routes.clear()

    def route(self, chain: list[int], stream: int = 0) -> None:
        """Route ``stream``'s input -> chain[0] -> chain[1] ... -> its output. Every slot input not
        held by another stream's route is cut first; routes of other streams are left running.
        RouteError, before any write, when the routes together would share a slot (``check_routes``)."""
        wanted = {**self.routes, stream: list(chain)}
        check_routes(wanted, self.stream_count, self.slot_count)
        held = {slot for other, slots in wanted.items() if other != stream for slot in slots}
        for k in range(self.slot_count):
            if k not in held:
                self.shell_write(slot_reg(k, SLOT_ROUTE), 0)
        source = 0
        for slot in chain:
            self.shell_write(slot_reg(slot, SLOT_ROUTE), route_word(source, stream))
            source = slot + 1
        self.shell_write(route_out_reg(stream, self.slot_count), ROUTE_ENABLE | source)
        self.routes[stream] = list(chain)

    def release_route(self, stream: int) -> None:
        """``stream``'s work ended: cut its slots' inputs and its output, so they can join another
        stream's route."""
        for slot in self.routes.pop(stream, []):
            self.shell_write(slot_reg(slot, SLOT_ROUTE), 0)
        self.shell_write(route_out_reg(stream, self.slot_count), 0)

    def program(self, slot: int, stage: Stage, rows: int, cols: int) -> None:
        """Write ``stage``'s parameters and the frame size into the module in ``slot``."""
        for index, value in register_words(stage, rows, cols):
            resp = self.module_write(slot, index, value)
            if resp != 0:
                raise LoadError(f"slot {slot}: register write refused (BRESP {resp}); is the slot loaded?", 0)

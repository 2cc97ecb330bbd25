"""Configuration packets: write a partial bitstream's words, and check words as the port does.

The checker mirrors hdl_sim/rtl/config_port.sv rule for rule and returns the same error codes, so
``fpgashare bitstream inspect`` predicts what the simulated port will say, and tests compare both.
The numbers both sides use (sync word, registers, commands, error codes, the module id's width)
come from the hardware tables (fpgashare.hwtables, generated from runtime/hwtables/tables.toml).
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass

import numpy as np
from fpgashare.bitstream.crc import icap_crc, icap_crc_words
from fpgashare.hwtables.tables import (
    ALLOWED_CMDS,
    CFG_REG_CMD,
    CFG_REG_CRC,
    CFG_REG_FAR,
    CFG_REG_FDRI,
    CFG_REG_IDCODE,
    CMD_DESYNC,
    CMD_RCRC,
    CMD_WCFG,
    MODULE_ID_BITS,
    NOP,
    RM_MAGIC,
    SYNC,
    WRITABLE_REGS,
    PortError,
)

DUMMY = 0xFFFFFFFF
BUS_WIDTH = (0x000000BB, 0x11220044)


__all__ = ["ALLOWED_CMDS", "CMD_DESYNC", "CMD_RCRC", "CMD_WCFG", "NOP", "RM_MAGIC", "SYNC", "PortError"]


def type1(op: int, reg: int, count: int) -> int:
    """A Type-1 packet header: op 0 NOP, 2 write."""
    return (1 << 29) | (op << 27) | ((reg & 0x1F) << 13) | (count & 0x7FF)


def type2_write(count: int) -> int:
    return (2 << 29) | (2 << 27) | (count & 0x7FFFFFF)


def frame_data(seed: str, module_id: int, slot_index: int, nwords: int) -> np.ndarray:
    """Deterministic frame data: a module descriptor in frame 0 (magic, module id, slot index or
    0xFFFFFFFF for a relocatable build, version 1), then SHAKE-256 noise."""
    noise = hashlib.shake_256(seed.encode()).digest(nwords * 4)
    data = np.frombuffer(noise, dtype=">u4").astype(np.uint32)
    data[:4] = (RM_MAGIC, module_id, slot_index, 1)
    return data


def partial_words(idcode: int, far: int, frame_words: np.ndarray) -> np.ndarray:
    """The configuration words of a partial bitstream that writes ``frame_words`` at ``far``."""
    crc = icap_crc(CFG_REG_IDCODE, idcode, 0)
    crc = icap_crc(CFG_REG_FAR, far, crc)
    crc = icap_crc(CFG_REG_CMD, CMD_WCFG, crc)
    crc = icap_crc_words(CFG_REG_FDRI, frame_words.tolist(), crc)
    head, tail = _head(idcode, far, len(frame_words)), _tail(crc)
    return np.concatenate([np.array(head, np.uint32), frame_words.astype(np.uint32), np.array(tail, np.uint32)])


def _head(idcode: int, far: int, nwords: int) -> list[int]:
    return [DUMMY] * 8 + list(BUS_WIDTH) + [DUMMY, DUMMY, SYNC, NOP,
                                            type1(2, CFG_REG_CMD, 1), CMD_RCRC, NOP, NOP,
                                            type1(2, CFG_REG_IDCODE, 1), idcode,
                                            type1(2, CFG_REG_FAR, 1), far,
                                            type1(2, CFG_REG_CMD, 1), CMD_WCFG, NOP,
                                            type1(2, CFG_REG_FDRI, 0), type2_write(nwords)]


def _tail(crc: int) -> list[int]:
    return [type1(2, CFG_REG_CRC, 1), crc, NOP, NOP, type1(2, CFG_REG_CMD, 1), CMD_DESYNC] + [NOP] * 16


#: A load takes (words through DESYNC) + ACTIVATION_CYCLES port cycles from its first word until the
#: slot is re-coupled: the new module is selected one cycle after DESYNC and reset, then re-coupled
#: (hdl_sim/rtl/config_port.sv; tests/test_shell_rtl.py measures it).
ACTIVATION_CYCLES = 1


@functools.cache
def load_port_cycles(nwords: int) -> int:
    """Port cycles of a load of a partial bitstream with ``nwords`` frame-data words (a handful of
    lengths per board, asked for at every analysis: worked out once each)."""
    return words_to_desync(nwords) + ACTIVATION_CYCLES


def words_to_desync(nwords: int) -> int:
    """Words the port takes, up to and including DESYNC's data word, for a partial bitstream
    written by :func:`partial_words` with ``nwords`` frame-data words."""
    return len(_head(0, 0, nwords)) + nwords + _tail(0).index(CMD_DESYNC) + 1


@dataclass(frozen=True)
class SlotRegion:
    """What the port knows of a slot: frame range and the module ids it can hold; for the host of a
    fused region, the region's frames (from ``far_base``) and the module ids that load only into it."""

    far_base: int
    frames: int
    module_mask: int
    fused_frames: int = 0
    fused_mask: int = 0


@dataclass
class PortVerdict:
    """What the configuration port would do with a word stream."""

    error: PortError = PortError.OK
    word: int = -1             #: index of the word that failed (or of the DESYNC data word)
    far: int | None = None
    fdri_words: int = 0
    module_id: int | None = None
    idcode: int | None = None
    crc_checked: bool = False

    @property
    def ok(self) -> bool:
        return self.error == PortError.OK

    @property
    def words_to_desync(self) -> int:
        """Words the port consumes up to and including the DESYNC command's data word."""
        return self.word + 1 if self.ok else 0

    def message(self) -> str:
        where = f" at word {self.word}" if self.word >= 0 else ""
        return f"{self.error.name}: {self.error.description}{where}"


def check_words(words: np.ndarray, idcode: int, frame_len: int, region: SlotRegion) -> PortVerdict:
    """Check configuration words against one target slot exactly as config_port.sv does."""
    v = PortVerdict()
    w = words.astype(np.uint32)
    n = len(w)
    i = 0

    def fail(err: PortError, at: int) -> PortVerdict:
        v.error, v.word = err, at
        return v

    while i < n and int(w[i]) != SYNC:
        i += 1
    if i >= n:
        return fail(PortError.NO_SYNC, n - 1)
    i += 1
    crc = 0
    idcode_ok = wcfg_ok = fdri_done = False
    t1_open = False
    last_t1_reg = 0
    span = False        # the frame data covers the target's fused region
    while i < n:
        hdr = int(w[i])
        kind = hdr >> 29
        reg, count = 0, 0
        opened = False
        if t1_open and kind != 2:  # a count-0 Type-1 write only announces a Type-2 packet
            return fail(PortError.BAD_PACKET, i)
        if kind == 1:
            op = (hdr >> 27) & 3
            if (hdr >> 18) & 0x1FF or (hdr >> 11) & 3:
                return fail(PortError.BAD_PACKET, i)
            if op == 0:
                if hdr != NOP:
                    return fail(PortError.BAD_PACKET, i)
            elif op != 2:
                return fail(PortError.BAD_PACKET, i)
            else:
                reg, count = (hdr >> 13) & 0x1F, hdr & 0x7FF
                if reg not in WRITABLE_REGS:
                    return fail(PortError.BAD_REGISTER, i)
                last_t1_reg = reg
                opened = count == 0
        elif kind == 2:
            if not t1_open or ((hdr >> 27) & 3) != 2:
                return fail(PortError.BAD_PACKET, i)
            reg, count = last_t1_reg, hdr & 0x7FFFFFF
        else:
            return fail(PortError.BAD_PACKET, i)
        t1_open = opened
        if count and reg == CFG_REG_FDRI:
            if fdri_done:
                return fail(PortError.BAD_PACKET, i)
            if not idcode_ok:
                return fail(PortError.FDRI_BEFORE_IDCODE, i)
            if not wcfg_ok:
                return fail(PortError.FDRI_BEFORE_WCFG, i)
            span = region.fused_frames > 0 and _fdri_check(count, v.far, frame_len, SlotRegion(
                region.far_base, region.fused_frames, 0)) == PortError.OK
            err = PortError.OK if span else _fdri_check(count, v.far, frame_len, region)
            if err:
                return fail(err, i)
        i += 1
        if count == 0:
            if i >= n:
                return fail(PortError.TRUNCATED, n - 1)
            continue
        if reg == CFG_REG_FDRI:
            data = w[i : i + count]
            if len(data) >= 1 and int(data[0]) != RM_MAGIC:
                return fail(PortError.UNKNOWN_MODULE, i)
            if len(data) >= 2:
                mod = int(data[1])
                if mod >> MODULE_ID_BITS or mod == 0 or not (region.module_mask >> mod) & 1 \
                        or bool((region.fused_mask >> mod) & 1) != span:   # a fused module with its region only
                    return fail(PortError.UNKNOWN_MODULE, i + 1)
                v.module_id = mod
            if len(data) < count:
                return fail(PortError.TRUNCATED, n - 1)
            crc = icap_crc_words(CFG_REG_FDRI, data.tolist(), crc)
            v.fdri_words = count
            fdri_done = True
            i += count
            if i >= n:
                return fail(PortError.TRUNCATED, n - 1)
            continue
        last_data = i + count - 1
        for _ in range(count):
            if i >= n:
                return fail(PortError.TRUNCATED, n - 1)
            d = int(w[i])
            if reg == CFG_REG_CRC:
                if d != crc:
                    return fail(PortError.CRC_MISMATCH, i)
                crc = 0
                if fdri_done:
                    v.crc_checked = True
            else:
                crc = icap_crc(reg, d, crc)
            if reg == CFG_REG_IDCODE:
                if d != idcode:
                    return fail(PortError.BAD_IDCODE, i)
                idcode_ok, v.idcode = True, d
            elif reg == CFG_REG_FAR:
                v.far = d
            elif reg == CFG_REG_CMD:
                if d not in ALLOWED_CMDS:
                    return fail(PortError.BAD_COMMAND, i)
                if d == CMD_WCFG:
                    wcfg_ok = True
                elif d == CMD_RCRC:
                    crc = 0
                elif d == CMD_DESYNC:
                    if i != last_data:  # DESYNC must end its packet
                        return fail(PortError.BAD_PACKET, i)
                    if not fdri_done:
                        return fail(PortError.NO_FRAME_DATA, i)
                    if not v.crc_checked:
                        return fail(PortError.MISSING_CRC, i)
                    v.word = i
                    return v
            i += 1
            if i >= n:
                return fail(PortError.TRUNCATED, n - 1)
    return fail(PortError.TRUNCATED, n - 1)


def _fdri_check(count: int, far: int | None, frame_len: int, region: SlotRegion) -> PortError:
    if far is None:
        return PortError.FAR_OUTSIDE_SLOT
    if not region.far_base <= far < region.far_base + region.frames:
        return PortError.FAR_OUTSIDE_SLOT
    if count % frame_len:
        return PortError.PARTIAL_FRAME
    if count > (region.far_base + region.frames - far) * frame_len:
        return PortError.FAR_OUTSIDE_SLOT
    if far != region.far_base or count != region.frames * frame_len:
        return PortError.REGION_MISMATCH
    return PortError.OK

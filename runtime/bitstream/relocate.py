"""Relocation: one partial bitstream per module, retargeted at load time to any slot of the same
shape, as FOS does.

Slots of one *shape* (same frame count, same resource budget: in a real floorplan, pblocks with the
same column layout stacked over the same columns) hold position-independent frame data, so a
partial built for one of them loads into any other once its frame addresses are moved: every FAR
write gets the target's base in place of the source's, and every CRC check word is corrected.

The correction is a delta, not a recomputation. CRC-32C without final xor is linear over GF(2) in
(state, written bits): changing a FAR value by ``d`` changes the state right after that write by
``icap_crc(0, d, 0)``, and each later write moves that difference on by the zero-data step ``M``;
after k writes it is ``M^k`` of it, computed by repeated squaring. So relocation reads no frame
data (it only counts words), and a stream that was already corrupt stays corrupt: its CRC is
still wrong after relocation and the port refuses it (CRC_MISMATCH), where recomputing the CRC
would have blessed the corruption.

The module descriptor in frame 0 (``RPMD``, module id, slot, version) is frame data and is not
touched. A relocatable build writes :data:`ANY_SLOT` in its slot field; a slot-specific build
names its slot and relocating it elsewhere is refused. The port's checks stay what they were: FAR
and the FDRI length must cover exactly the armed slot (REGION_MISMATCH, FAR_OUTSIDE_SLOT), and
the module id must be one the slot may hold (UNKNOWN_MODULE).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from fpgashare.bitstream.crc import icap_crc
from fpgashare.catalogue.modules import KINDS_BY_ID
from fpgashare.catalogue.platform import Platform, SlotSpec
from fpgashare.errors import BitstreamError
from fpgashare.hwtables.tables import (
    CFG_REG_CMD,
    CFG_REG_CRC,
    CFG_REG_FAR,
    CFG_REG_FDRI,
    CMD_DESYNC,
    CMD_RCRC,
    NOP,
    RM_MAGIC,
    SYNC,
)

#: Slot field of the frame-0 descriptor of a relocatable build: valid in any slot of its shape.
ANY_SLOT = 0xFFFFFFFF


def slot_shape(slot: SlotSpec) -> tuple:
    """What two slots must share for one partial to serve both: frames and resource budget."""
    return slot.frames, tuple(sorted(slot.resources.items()))


def shape_groups(platform: Platform, module: str) -> list[list[SlotSpec]]:
    """The slots ``module`` may go into, grouped by shape; each group in index order, groups by
    their first slot. A relocatable build writes one partial per group, for its first slot."""
    groups: dict[tuple, list[SlotSpec]] = {}
    for slot in platform.slots_for(module):
        groups.setdefault(slot_shape(slot), []).append(slot)
    return sorted(groups.values(), key=lambda g: g[0].index)


def group_of(platform: Platform, module: str, slot: SlotSpec) -> list[SlotSpec]:
    """The shape group of ``slot`` among the slots ``module`` may go into."""
    for group in shape_groups(platform, module):
        if slot in group:
            return group
    raise BitstreamError(f"module {module} is not compatible with slot {slot.name}")


# -- CRC difference propagation over GF(2)

def _step(vector: int) -> int:
    """M: one (5-bit address, 32-bit data) write of zeros applied to a CRC state difference."""
    return icap_crc(0, 0, vector)


@lru_cache(maxsize=64)
def _power_columns(log2: int) -> tuple[int, ...]:
    """Columns of M^(2^log2): the image of each basis vector of the 32-bit state."""
    if log2 == 0:
        return tuple(_step(1 << i) for i in range(32))
    half = _power_columns(log2 - 1)
    return tuple(_apply(half, _apply(half, 1 << i)) for i in range(32))


def _apply(columns: tuple[int, ...], vector: int) -> int:
    out = 0
    i = 0
    while vector:
        if vector & 1:
            out ^= columns[i]
        vector >>= 1
        i += 1
    return out


def advance(delta: int, writes: int) -> int:
    """A CRC state difference after ``writes`` more writes (whatever their values)."""
    bit = 0
    while writes and delta:
        if writes & 1:
            delta = _apply(_power_columns(bit), delta)
        writes >>= 1
        bit += 1
    return delta


# -- the packet walk

def relocate_words(words: np.ndarray, platform: Platform, target: SlotSpec) -> np.ndarray:
    """The configuration words of ``words`` moved to ``target``: FAR values rebased, CRC words
    corrected. BitstreamError when the stream is not a partial this platform can relocate there
    (malformed packets, a FAR in no slot, a slot of another shape, a slot-specific build)."""
    out = words.astype(np.uint32).copy()
    n = len(out)
    sync = np.flatnonzero(out == SYNC)
    if len(sync) == 0:
        raise BitstreamError("cannot relocate: no sync word")
    i = int(sync[0]) + 1
    delta = 0          # CRC state difference between the relocated and the original stream
    source: SlotSpec | None = None
    last_reg = None
    fdri_at = None
    while i < n:
        hdr = int(out[i])
        kind = hdr >> 29
        if hdr == NOP:
            i += 1
            continue
        if kind == 1 and (hdr >> 27) & 3 == 2:
            reg, count = (hdr >> 13) & 0x1F, hdr & 0x7FF
            last_reg = reg
        elif kind == 2 and last_reg is not None:
            reg, count = last_reg, hdr & 0x7FFFFFF
        else:
            raise BitstreamError(f"cannot relocate: word {i} (0x{hdr:08x}) is not a write or a NOP packet")
        i += 1
        if i + count > n:
            raise BitstreamError(f"cannot relocate: packet at word {i - 1} runs past the end")
        if reg == CFG_REG_FDRI:
            if count:
                fdri_at = i
            delta = advance(delta, count)
        elif reg == CFG_REG_CRC:
            for k in range(i, i + count):
                out[k] = int(out[k]) ^ delta
            delta = 0
        else:
            for k in range(i, i + count):
                value = int(out[k])
                delta = _step(delta)
                if reg == CFG_REG_FAR:
                    source, moved = _rebase(platform, value, target, source)
                    out[k] = moved
                    delta ^= icap_crc(0, value ^ moved, 0)   # f(s, w) = M s + g(w), g linear
                if reg == CFG_REG_CMD and value == CMD_RCRC:
                    delta = 0
                if reg == CFG_REG_CMD and value == CMD_DESYNC:   # the device ignores what follows
                    _check_descriptor(out, fdri_at, platform, target)
                    return out
        i += count
    raise BitstreamError("cannot relocate: no DESYNC command")


def _rebase(platform: Platform, far: int, target: SlotSpec, source: SlotSpec | None) -> tuple[SlotSpec, int]:
    slot = next((s for s in platform.slots if s.far_base <= far < s.far_base + s.frames), None)
    if slot is None:
        raise BitstreamError(f"cannot relocate: FAR 0x{far:x} lies in no slot of {platform.name}")
    if source is not None and slot != source:
        raise BitstreamError(f"cannot relocate: FAR values in both {source.name} and {slot.name}")
    if slot_shape(slot) != slot_shape(target):
        raise BitstreamError(f"cannot relocate from {slot.name} to {target.name}: the slots differ in shape "
                             f"({slot.frames} frames {slot.resources} vs {target.frames} frames {target.resources})")
    return slot, far - slot.far_base + target.far_base


def _check_descriptor(words: np.ndarray, fdri_at: int | None, platform: Platform, target: SlotSpec) -> None:
    if fdri_at is None or fdri_at + 3 > len(words) or int(words[fdri_at]) != RM_MAGIC:
        raise BitstreamError("cannot relocate: the frame data carries no module descriptor (RPMD)")
    module_id, slot_field = int(words[fdri_at + 1]), int(words[fdri_at + 2])
    kind = KINDS_BY_ID.get(module_id)
    if kind is None or kind.name not in platform.modules or target.name not in platform.modules[kind.name].slots:
        name = kind.name if kind else f"module id {module_id}"
        raise BitstreamError(f"cannot relocate {name} to {target.name}: the platform does not declare it there")
    if slot_field not in (ANY_SLOT, target.index):
        raise BitstreamError(f"cannot relocate {kind.name}: it was built for slot {slot_field} only "
                             f"(build with --relocatable)")

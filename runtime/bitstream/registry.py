"""Generate a platform's simulated partial bitstreams and keep an index of their SHA-256.

Each (slot, module) pair gets a real .bit file whose configuration data covers exactly the slot's
frame range, so its size is what a partial bitstream of that region would be. Same manifest, same
bytes: the header date comes from the manifest and the frame data from SHAKE-256 of fixed names.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from fpgashare.bitstream.bitfile import BitHeader, parse_bit, write_bit
from fpgashare.bitstream.packets import PortVerdict, SlotRegion, check_words, frame_data, partial_words
from fpgashare.errors import BitstreamError
from fpgashare.modules import KINDS, KINDS_BY_ID
from fpgashare.platform import Platform, SlotSpec

log = logging.getLogger(__name__)

INDEX_NAME = "index.json"
TOOL_VERSION = "fpgashare-0.1"


def file_name(slot: SlotSpec, module: str) -> str:
    return f"{slot.name.replace('/', '_')}__{module}.bit"


def design_field(platform: Platform, slot: SlotSpec, module: str) -> str:
    """The header's design field, in Vivado's 'name;KEY=VALUE' form, naming slot and module."""
    return (f"{platform.name}_shell;PARTIAL=TRUE;RP={slot.name};RM={module};"
            f"UserID=0XFFFFFFFF;Version={TOOL_VERSION}")


def part_field(platform: Platform) -> str:
    """Vivado writes the part without 'xc' and speed grade: 7z020clg400, zu7evffvc1156."""
    fields = platform.part.removeprefix("xc").split("-")
    return "".join(fields[:2]) if platform.family == "zynqmp" else fields[0]


def build_config(platform: Platform, slot: SlotSpec, module: str) -> np.ndarray:
    """Configuration words of the partial bitstream that loads ``module`` into ``slot``."""
    if slot.name not in platform.module(module).slots:
        raise BitstreamError(f"module {module} is not compatible with slot {slot.name}")
    seed = f"{platform.name}/{slot.name}/{module}"
    frames = frame_data(seed, KINDS[module].module_id, slot.index, slot.frames * platform.frame_words)
    return partial_words(platform.idcode, slot.far_base, frames)


def build_bitfile(platform: Platform, slot: SlotSpec, module: str) -> bytes:
    header = BitHeader(design_field(platform, slot, module), part_field(platform),
                       platform.bitstream_date, platform.bitstream_time)
    return write_bit(header, build_config(platform, slot, module).astype(">u4").tobytes())


@dataclass(frozen=True)
class BitstreamEntry:
    """One generated partial bitstream."""

    path: Path
    slot: str
    module: str
    sha256: str
    size: int


def build_all(platform: Platform, out_dir: Path) -> list[BitstreamEntry]:
    """Write every partial bitstream of ``platform`` into ``out_dir`` and an index of them."""
    out_dir.mkdir(parents=True, exist_ok=True)
    entries = []
    for slot in platform.slots:
        for module in sorted(platform.modules):
            if slot.name not in platform.modules[module].slots:
                continue
            data = build_bitfile(platform, slot, module)
            path = out_dir / file_name(slot, module)
            tmp = path.with_suffix(".tmp")
            tmp.write_bytes(data)
            os.replace(tmp, path)
            entries.append(BitstreamEntry(path, slot.name, module, hashlib.sha256(data).hexdigest(), len(data)))
    index = {
        "platform": platform.name,
        "part": platform.part,
        "bitstreams": [
            {"file": e.path.name, "slot": e.slot, "module": e.module, "sha256": e.sha256, "bytes": e.size}
            for e in entries
        ],
    }
    tmp = out_dir / (INDEX_NAME + ".tmp")
    tmp.write_text(json.dumps(index, indent=2) + "\n")
    os.replace(tmp, out_dir / INDEX_NAME)
    log.info("wrote %d partial bitstreams for %s to %s", len(entries), platform.name, out_dir)
    return entries


@dataclass
class Inspection:
    """What ``fpgashare bitstream inspect`` reports."""

    header: BitHeader
    slot: SlotSpec | None
    module: str | None
    words: int
    frames: int
    verdict: PortVerdict
    load_s: float | None

    def as_dict(self) -> dict:
        return {
            "design": self.header.design, "part": self.header.part,
            "date": self.header.date, "time": self.header.time,
            "slot": self.slot.name if self.slot else None, "module": self.module,
            "config_words": self.words, "frames": self.frames,
            "far": self.verdict.far, "crc_checked": self.verdict.crc_checked,
            "verdict": self.verdict.error.name, "ok": self.verdict.ok,
            "problem": None if self.verdict.ok else self.verdict.message(),
            "expected_load_s": self.load_s,
        }


def inspect_bytes(data: bytes, platform: Platform) -> Inspection:
    """Parse a .bit file and check it the way the platform's configuration port would."""
    header, config = parse_bit(data)
    if header.part != part_field(platform):
        raise BitstreamError(f"bitstream is for part {header.part!r}, platform {platform.name} is "
                             f"{part_field(platform)!r}")
    words = np.frombuffer(config, dtype=">u4").astype(np.uint32)
    slot = _target_slot(words, platform)
    region = SlotRegion(slot.far_base, slot.frames, platform.slot_module_mask(slot)) if slot else \
        SlotRegion(0, 0, 0)
    verdict = check_words(words, platform.idcode, platform.frame_words, region)
    module = KINDS_BY_ID[verdict.module_id].name if verdict.module_id in KINDS_BY_ID else None
    load_s = platform.load_seconds(4 * (verdict.words_to_desync or len(words)))
    return Inspection(header, slot, module, len(words), verdict.fdri_words // platform.frame_words,
                      verdict, load_s)


def _target_slot(words: np.ndarray, platform: Platform) -> SlotSpec | None:
    """The slot whose frame range holds the first FAR value written (None if there is none)."""
    far_hdr = np.flatnonzero(words == 0x30002001)
    if len(far_hdr) == 0 or far_hdr[0] + 1 >= len(words):
        return None
    far = int(words[far_hdr[0] + 1])
    for slot in platform.slots:
        if slot.far_base <= far < slot.far_base + slot.frames:
            return slot
    return None

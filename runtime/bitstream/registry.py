"""Generate a platform's simulated partial bitstreams and keep an index of their SHA-256.

Each (slot, module) pair gets a real .bit file whose configuration data covers exactly the slot's
frame range, so its size is what a partial bitstream of that region would be. Same manifest, same
bytes: the header date comes from the manifest and the frame data from SHAKE-256 of fixed names.

A relocatable build (``relocatable=True``) writes one file per module and slot shape instead,
built for the first slot of the shape and moved to the others at load time (relocate.py); the
index then lists, per file, every slot it serves. :class:`Registry` reads either kind of folder.
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
from fpgashare.bitstream.packets import PortVerdict, SlotRegion, check_words, frame_data, partial_words, type1
from fpgashare.bitstream.relocate import ANY_SLOT, group_of, relocate_words, shape_groups
from fpgashare.catalogue.modules import KINDS, KINDS_BY_ID
from fpgashare.catalogue.platform import Platform, SlotSpec
from fpgashare.errors import BitstreamError
from fpgashare.hwtables.tables import CFG_REG_FAR

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


def relocatable_file_name(platform: Platform, module: str, base: SlotSpec) -> str:
    """``conv3x3.bit``; a module whose slots come in several shapes gets one file per shape,
    named by the shape's first slot (``dnn_tile__shell_rp_4.bit``)."""
    if len(shape_groups(platform, module)) == 1:
        return f"{module}.bit"
    return f"{module}__{base.name.replace('/', '_')}.bit"


def build_config(platform: Platform, slot: SlotSpec, module: str, relocatable: bool = False) -> np.ndarray:
    """Configuration words of the partial bitstream that loads ``module`` into ``slot``; with
    ``relocatable``, the one built for the first slot of ``slot``'s shape, valid in any of them."""
    if slot.name not in platform.module(module).slots:
        raise BitstreamError(f"module {module} is not compatible with slot {slot.name}")
    nwords = platform.region_of(slot.index, module)[1] * platform.frame_words
    if relocatable:
        base = group_of(platform, module, slot)[0]
        frames = frame_data(f"{platform.name}/{base.name}/{module}/relocatable", KINDS[module].module_id,
                            ANY_SLOT, nwords)
        return partial_words(platform.idcode, base.far_base, frames)
    frames = frame_data(f"{platform.name}/{slot.name}/{module}", KINDS[module].module_id, slot.index, nwords)
    return partial_words(platform.idcode, slot.far_base, frames)


def build_bitfile(platform: Platform, slot: SlotSpec, module: str, relocatable: bool = False) -> bytes:
    config = build_config(platform, slot, module, relocatable)
    if relocatable:
        slot = group_of(platform, module, slot)[0]
    header = BitHeader(design_field(platform, slot, module), part_field(platform),
                       platform.bitstream_date, platform.bitstream_time)
    return write_bit(header, config.astype(">u4").tobytes())


@dataclass(frozen=True)
class BitstreamEntry:
    """One generated partial bitstream."""

    path: Path
    slot: str
    module: str
    sha256: str
    size: int
    slots: tuple[str, ...] = ()   #: relocatable: every slot the file serves (``slot`` is the one it was built for)


def build_all(platform: Platform, out_dir: Path, relocatable: bool = False) -> list[BitstreamEntry]:
    """Write every partial bitstream of ``platform`` into ``out_dir`` and an index of them: one
    per (slot, module), or with ``relocatable`` one per (module, slot shape)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    targets = []
    if relocatable:
        for module in sorted(platform.modules):
            for group in shape_groups(platform, module):
                targets.append((group[0], module, relocatable_file_name(platform, module, group[0]),
                                tuple(s.name for s in group)))
    else:
        for slot in platform.slots:
            for module in sorted(platform.modules):
                if slot.name in platform.modules[module].slots:
                    targets.append((slot, module, file_name(slot, module), ()))
    entries = []
    for slot, module, name, slots in targets:
        data = build_bitfile(platform, slot, module, relocatable)
        path = out_dir / name
        tmp = path.with_suffix(".tmp")
        tmp.write_bytes(data)
        os.replace(tmp, path)
        entries.append(BitstreamEntry(path, slot.name, module, hashlib.sha256(data).hexdigest(), len(data), slots))
    index = {
        "platform": platform.name,
        "part": platform.part,
        "relocatable": relocatable,
        "bitstreams": [
            {"file": e.path.name, "slot": e.slot, "module": e.module, "sha256": e.sha256, "bytes": e.size,
             **({"slots": list(e.slots)} if relocatable else {})}
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


def inspect_bytes(data: bytes, platform: Platform, target: SlotSpec | None = None) -> Inspection:
    """Parse a .bit file and check it the way the platform's configuration port would, armed for
    ``target`` (default: the slot whose frame range holds the first FAR value written)."""
    header, config = parse_bit(data)
    if header.part != part_field(platform):
        raise BitstreamError(f"bitstream is for part {header.part!r}, platform {platform.name} is "
                             f"{part_field(platform)!r}")
    words = np.frombuffer(config, dtype=">u4").astype(np.uint32)
    slot = target or _target_slot(words, platform)
    region = slot_region(platform, slot) if slot else SlotRegion(0, 0, 0)
    verdict = check_words(words, platform.idcode, platform.frame_words, region)
    module = KINDS_BY_ID[verdict.module_id].name if verdict.module_id in KINDS_BY_ID else None
    load_s = platform.load_seconds(4 * (verdict.words_to_desync or len(words)))
    return Inspection(header, slot, module, len(words), verdict.fdri_words // platform.frame_words,
                      verdict, load_s)


def slot_region(platform: Platform, slot: SlotSpec) -> SlotRegion:
    """What the configuration port armed for ``slot`` checks a partial against (config_port.sv)."""
    hosted = next((f for f in platform.fused if f.host == slot.index), None)
    return SlotRegion(slot.far_base, slot.frames, platform.slot_module_mask(slot),
                      hosted.frames if hosted else 0, platform.slot_fused_mask(slot) if hosted else 0)


def _target_slot(words: np.ndarray, platform: Platform) -> SlotSpec | None:
    """The slot whose frame range holds the first FAR value written (None if there is none)."""
    far_hdr = np.flatnonzero(words == type1(2, CFG_REG_FAR, 1))
    if len(far_hdr) == 0 or far_hdr[0] + 1 >= len(words):
        return None
    far = int(words[far_hdr[0] + 1])
    for slot in platform.slots:
        if slot.far_base <= far < slot.far_base + slot.frames:
            return slot
    return None


@dataclass(frozen=True)
class Loadable:
    """A checked partial bitstream for one slot: the .bit bytes, the words the port takes, and
    the port model's verdict (None for a Vivado-built file, which the model cannot judge)."""

    data: bytes
    words: int
    inspection: Inspection | None


class Registry:
    """A folder of partial bitstreams and its index, checked against a platform: what a backend
    loads. ``bitfile(slot, module)`` returns the .bit for that slot — the native file, or the
    module's relocatable file moved there — after checking the file's SHA-256 against the index,
    its part against the platform and the stream against the target slot exactly as the
    configuration port would; ``streams`` records the SHA-256 of every configuration stream it
    handed out, relocated ones included, by (slot index, module).

    An index with ``"origin": "vivado"`` (``fpgashare board package --partials``) holds real
    partials: their SHA-256, part and partial flag are checked, but not the port model's rules
    (the module descriptor and the manifest's frame ranges exist only on the simulated board),
    and they are not relocated (relocate.py moves the manifest's linear frame addresses, not a
    device's row/column FAR)."""

    def __init__(self, folder: str | Path, platform: Platform) -> None:
        self.folder, self.platform = Path(folder), platform
        index_path = self.folder / INDEX_NAME
        try:
            index = json.loads(index_path.read_text())
        except FileNotFoundError:
            raise BitstreamError(f"{index_path}: no bitstream index (run fpgashare bitstream build)") from None
        except json.JSONDecodeError as exc:
            raise BitstreamError(f"{index_path}: not valid JSON: {exc}") from None
        if index.get("part") != platform.part:
            raise BitstreamError(f"{index_path}: built for part {index.get('part')!r}, the platform is "
                                 f"{platform.part}")
        self.index_path = index_path
        self.relocatable = bool(index.get("relocatable", False))
        self.vivado = index.get("origin") == "vivado"
        if self.vivado and self.relocatable:
            raise BitstreamError(f"{index_path}: Vivado-built partials cannot be relocated here; "
                                 f"list one file per (slot, module)")
        self.files = len(index.get("bitstreams", []))
        self._entries: dict[tuple[str, str], dict] = {}
        for i, entry in enumerate(index.get("bitstreams", [])):
            missing = {"file", "slot", "module", "sha256"} - set(entry)
            if missing:
                raise BitstreamError(f"{index_path}: bitstreams[{i}] lacks {', '.join(sorted(missing))}")
            for slot_name in entry.get("slots") or [entry["slot"]]:
                platform.slot(slot_name)         # names a slot of this platform, or ManifestError
                platform.module(entry["module"])
                self._entries[slot_name, entry["module"]] = entry
        self._read: dict[str, bytes] = {}
        self.streams: dict[tuple[int, str], str] = {}

    def pairs(self) -> list[tuple[SlotSpec, str]]:
        """Every (slot, module) the folder can load, in slot order."""
        return sorted(((self.platform.slot(s), m) for s, m in self._entries), key=lambda p: (p[0].index, p[1]))

    def bitfile(self, slot: SlotSpec, module: str) -> Loadable:
        """The checked .bit that loads ``module`` into ``slot``."""
        entry = self._entries.get((slot.name, module))
        if entry is None:
            raise BitstreamError(f"{self.index_path}: no bitstream of {module} for slot {slot.name}")
        path = self.folder / entry["file"]
        data = self._file(entry)
        if self.vivado:
            header, config = parse_bit(data)
            if header.part != part_field(self.platform) or "PARTIAL=TRUE" not in header.design.upper():
                raise BitstreamError(f"{path}: not a partial bitstream for {part_field(self.platform)} "
                                     f"(part {header.part!r}, design {header.design!r})")
            self.streams[slot.index, module] = hashlib.sha256(config).hexdigest()
            return Loadable(data, len(config) // 4, None)
        if entry["slot"] != slot.name:
            data = self._relocated(data, slot, module)
        found = inspect_bytes(data, self.platform, slot)
        if not found.verdict.ok or found.module != module:
            problem = found.verdict.message() if not found.verdict.ok else f"it holds {found.module}"
            raise BitstreamError(f"{path}: does not load {module} into {slot.name}: {problem}")
        self.streams[slot.index, module] = hashlib.sha256(parse_bit(data)[1]).hexdigest()
        return Loadable(data, found.verdict.words_to_desync, found)

    def _file(self, entry: dict) -> bytes:
        name = entry["file"]
        if name not in self._read:
            path = self.folder / name
            try:
                data = path.read_bytes()
            except OSError as exc:
                raise BitstreamError(f"{path}: cannot read: {exc.strerror}") from None
            if hashlib.sha256(data).hexdigest() != entry["sha256"]:
                raise BitstreamError(f"{path}: SHA-256 differs from {self.index_path}; refusing to load it")
            self._read[name] = data
        return self._read[name]

    def _relocated(self, data: bytes, slot: SlotSpec, module: str) -> bytes:
        header, config = parse_bit(data)
        words = relocate_words(np.frombuffer(config, dtype=">u4"), self.platform, slot)
        design = f"{header.design.replace(';RP=', ';RELOCATED_FROM=', 1)};RP={slot.name}"
        return write_bit(BitHeader(design, header.part, header.date, header.time), words.astype(">u4").tobytes())

"""Platform manifests (TOML): the board's part, configuration port, slots and modules.

A manifest is validated when loaded; every error names the file, the key and the problem.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from fpgashare.bitstream.packets import load_port_cycles
from fpgashare.catalogue.fused_regions import FusedSpec, check_fit, read_fused, resolve_module_slots
from fpgashare.catalogue.modules import KINDS
from fpgashare.catalogue.resources import resolve
from fpgashare.catalogue.toml_table import TomlTable, read_toml
from fpgashare.dnn.tile_format import DEFAULT_TILE, TileSpec
from fpgashare.dnn.tile_variant import tile_variant
from fpgashare.errors import ManifestError

#: Pixels per clock a platform's modules can be built for (module parameter NPPC).
PIXELS_PER_CLOCK = (1, 4)


@dataclass(frozen=True)
class ConfigPortSpec:
    """The configuration port: one ``width_bits`` word per cycle of ``clock_hz``."""

    kind: str
    width_bits: int
    clock_hz: float
    source: str

    @property
    def bytes_per_s(self) -> float:
        return self.width_bits / 8 * self.clock_hz


@dataclass(frozen=True)
class LinkSpec:
    """Inter-slot links: lane width, latency and credits (see stream_link.sv)."""

    lane_bits: int
    latency_cycles: int
    credits: int


@dataclass(frozen=True)
class SlotSpec:
    """A reconfigurable partition: its frame-address range and what fits in it."""

    index: int
    name: str
    far_base: int
    frames: int
    resources: dict[str, int]


@dataclass(frozen=True)
class ModuleSpec:
    """A reconfigurable module as the platform ships it."""

    name: str
    kernel: str
    slots: tuple[str, ...]
    resources: dict[str, int]
    registers: tuple[str, ...]
    #: fused regions the module needs (runtime/catalogue/fused_regions.py); ``slots`` lists each one's host
    regions: tuple[str, ...] = ()


@dataclass(frozen=True)
class Platform:
    """A validated platform manifest."""

    path: Path
    name: str
    board: str
    part: str
    family: str
    idcode: int
    fabric_clock_hz: float
    frame_words: int
    full_bitstream_bytes: int
    bitstream_date: str
    bitstream_time: str
    config_port: ConfigPortSpec
    link: LinkSpec
    slots: tuple[SlotSpec, ...]
    modules: dict[str, ModuleSpec]
    max_width: int = 1920
    max_height: int = 1080
    #: pixels per stream beat (1 or 4): the variant of every module the bitstreams carry
    pixels_per_clock: int = 1
    #: video streams of the shell (1..slots): an input and an output stream port each, on a board one DMA
    #: channel pair. The shell carries them at once on disjoint routes (runtime/sched/board/board.py).
    streams: int = 1
    #: DDR bandwidth every stream's DMA shares, bytes/s (peak; the manifest names its source)
    ddr_bytes_per_s: float = 0.0
    #: the dnn_tile variant this platform builds (the dnn_tile entry's ``params``; runtime/dnn/tile_variant.py)
    dnn_tile: TileSpec = DEFAULT_TILE
    #: fused regions: adjacent slots a module bigger than one may occupy together
    fused: tuple[FusedSpec, ...] = ()

    def slot(self, name_or_index: str | int) -> SlotSpec:
        """Find a slot by name or index; ManifestError when there is none."""
        for slot in self.slots:
            if slot.name == name_or_index or slot.index == name_or_index:
                return slot
        names = ", ".join(s.name for s in self.slots)
        raise ManifestError(f"{self.path}: no slot {name_or_index!r} (slots: {names})")

    def module(self, name: str) -> ModuleSpec:
        try:
            return self.modules[name]
        except KeyError:
            known = ", ".join(sorted(self.modules))
            raise ManifestError(f"{self.path}: platform has no module {name!r} (modules: {known})") from None

    def fused_region(self, slot: int, module: str) -> FusedSpec | None:
        """The fused region ``module`` occupies when placed on ``slot`` (its host), else None."""
        needs = self.module(module).regions if module in self.modules else ()
        return next((f for f in self.fused if f.host == slot and f.name in needs), None)

    def footprint(self, slot: int, module: str) -> tuple[int, ...]:
        """Slots ``module`` occupies when placed on ``slot``: the region's members, else the slot."""
        region = self.fused_region(slot, module)
        return region.slots if region is not None else (slot,)

    def region_of(self, slot: int, module: str) -> tuple[int, int]:
        """(first frame, frames) a partial of ``module`` placed on ``slot`` writes."""
        region = self.fused_region(slot, module)
        if region is not None:
            return region.far_base, region.frames
        spec = self.slot(slot)
        return spec.far_base, spec.frames

    def slots_for(self, module: str) -> list[SlotSpec]:
        """Slots that can hold ``module``, in index order."""
        allowed = set(self.module(module).slots)
        return [s for s in self.slots if s.name in allowed]

    @property
    def stream_words(self) -> int:
        """32-bit words in a stream beat: NPPC when a module takes several channels a pixel (each
        pixel a 32-bit lane), else 1 (gray pixels pack four to a word). The shell is built as wide
        as its modules need: a 128-bit datapath costs area and simulation time for nothing when every
        module is gray."""
        lanes = any(KINDS[name].kernel_kind == "vision"
                    and (KINDS[name].channels_in > 1 or KINDS[name].channels_out > 1) for name in self.modules)
        return self.pixels_per_clock if lanes else 1

    def slot_module_mask(self, slot: SlotSpec) -> int:
        """Bit m set = the slot can hold module id m (the RTL's SLOT_MODULES field)."""
        mask = 0
        for spec in self.modules.values():
            if slot.name in spec.slots:
                mask |= 1 << KINDS[spec.name].module_id
        return mask

    def slot_fused_mask(self, slot: SlotSpec) -> int:
        """Bit m set = module id m loads into ``slot`` only as the host of a fused region."""
        mask = 0
        for spec in self.modules.values():
            if self.fused_region(slot.index, spec.name) is not None:
                mask |= 1 << KINDS[spec.name].module_id
        return mask

    def rtl_parameters(self) -> dict[str, int | str]:
        """Verilog parameters of the shell top level (packed vectors as sized literals)."""
        base = far = mods = fused_frames = fused_mods = fused_last = 0
        for slot in self.slots:
            base |= slot.far_base << (32 * slot.index)
            far |= slot.frames << (32 * slot.index)
            mods |= self.slot_module_mask(slot) << (32 * slot.index)
            hosted = next((f for f in self.fused if f.host == slot.index), None)
            if hosted is not None:
                fused_frames |= hosted.frames << (32 * slot.index)
                fused_mods |= self.slot_fused_mask(slot) << (32 * slot.index)
                fused_last |= hosted.slots[-1] << (32 * slot.index)
        fused = {} if not self.fused else {
            "SLOT_FUSED_FRAMES": f"{32 * len(self.slots)}'h{fused_frames:x}",
            "SLOT_FUSED_MODULES": f"{32 * len(self.slots)}'h{fused_mods:x}",
            "SLOT_FUSED_LAST": f"{32 * len(self.slots)}'h{fused_last:x}",
        }
        return {
            "NUM_SLOTS": len(self.slots),
            "NUM_STREAMS": self.streams,
            "IDCODE": self.idcode,
            "FRAME_WORDS": self.frame_words,
            "SLOT_FAR_BASE": f"{32 * len(self.slots)}'h{base:x}",
            "SLOT_FRAMES": f"{32 * len(self.slots)}'h{far:x}",
            "SLOT_MODULES": f"{32 * len(self.slots)}'h{mods:x}",
            "LINK_LANE_W": self.link.lane_bits,
            "LINK_LATENCY": self.link.latency_cycles,
            "LINK_CREDITS": self.link.credits,
            "NPPC": self.pixels_per_clock,
            "DATA_W": 32 * self.stream_words,
            **self.dnn_tile.rtl_parameters(),
            **fused,
        }

    def load_seconds(self, nbytes: int) -> float:
        """Time the configuration port needs for ``nbytes`` of configuration data."""
        return nbytes / self.config_port.bytes_per_s

    def slot_load_cycles(self, slot: int, module: str | None = None) -> int:
        """Port cycles of a correct load of ``module`` into ``slot``: its partial bitstream's length
        (set by the frame range it writes: the slot's, or its fused region's) at one word per port
        cycle, plus the activation cycle. Without ``module``, the longest load into the slot (a
        bound for analyses that do not know which module comes)."""
        if module is not None:
            return load_port_cycles(self.region_of(slot, module)[1] * self.frame_words)
        frames = max([self.slot(slot).frames] + [f.frames for f in self.fused if f.host == slot
                                                  and any(f.name in m.regions for m in self.modules.values())])
        return load_port_cycles(frames * self.frame_words)

    def slot_load_seconds(self, slot: int, module: str | None = None) -> float:
        """Port time of one partial load (of ``module``, else the longest) into ``slot``."""
        return self.slot_load_cycles(slot, module) / self.config_port.clock_hz


def _streams(file: Path, p: TomlTable, slots: int) -> int:
    """platform.streams: an int from 1 to the number of slots (a stream's route holds its own slots)."""
    streams = p.get("streams", int)
    if not 1 <= streams <= slots:
        raise ManifestError(f"{file}: platform.streams must be 1..{slots} (at most one stream per slot; "
                            f"the manifest has {slots} slots), not {streams}")
    return streams


def resolve_platform_path(path: str | Path) -> Path:
    """A manifest path as given, or a platform shipped with the package by name (``zcu104``)."""
    return resolve("platform", path)


def load_platform(path: str | Path) -> Platform:
    """Load and validate a platform manifest (a path, or a name such as ``zcu104``)."""
    file = resolve_platform_path(path)
    top = read_toml(file, "platform manifest", ManifestError)
    p = TomlTable(file, "platform", top.get("platform", dict))
    port = TomlTable(file, "config_port", top.get("config_port", dict))
    link = TomlTable(file, "link", top.get("link", dict))

    port_spec = ConfigPortSpec(
        kind=port.get("kind", str), width_bits=port.positive("width_bits"),
        clock_hz=float(port.positive("clock_hz", (int, float))), source=port.get("source", str),
    )
    if port_spec.kind not in ("pcap", "icap"):
        raise ManifestError(f"{file}: config_port.kind must be 'pcap' or 'icap', not {port_spec.kind!r}")
    if port_spec.width_bits != 32:
        raise ManifestError(f"{file}: config_port.width_bits must be 32 (the port model takes 32-bit words)")
    port.done()
    link_spec = LinkSpec(link.positive("lane_bits"), link.positive("latency_cycles"), link.positive("credits"))
    link.done()

    frame_words = p.positive("frame_words")
    slots_raw = top.get("slot", list)
    if not 1 <= len(slots_raw) <= 8:
        raise ManifestError(f"{file}: [[slot]] must appear 1 to 8 times, not {len(slots_raw)}")
    slots = []
    for i, entry in enumerate(slots_raw):
        t = TomlTable(file, f"slot[{i}]", entry)
        slots.append(SlotSpec(i, t.get("name", str), t.get("far_base", int), t.positive("frames"),
                              t.resources("resources")))
        if slots[-1].far_base < 0 or slots[-1].far_base + slots[-1].frames >= 2**32:
            raise ManifestError(f"{file}: slot[{i}].far_base out of range")
        t.done()
    names = [s.name for s in slots]
    if len(set(names)) != len(names):
        raise ManifestError(f"{file}: slot names must be unique ({', '.join(names)})")
    ordered = sorted(slots, key=lambda s: s.far_base)
    for a, b in itertools.pairwise(ordered):
        if a.far_base + a.frames > b.far_base:
            raise ManifestError(f"{file}: slots {a.name} and {b.name} overlap in frame addresses")

    fused = read_fused(file, top.get("fused", list, []), slots)
    modules: dict[str, ModuleSpec] = {}
    tile = DEFAULT_TILE
    for i, entry in enumerate(top.get("module", list)):
        t = TomlTable(file, f"module[{i}]", entry)
        name = t.get("name", str)
        if name not in KINDS:
            raise ManifestError(f"{file}: module[{i}].name {name!r} is not a known module "
                                f"({', '.join(sorted(KINDS))})")
        if "params" in t.data and name != "dnn_tile":
            raise ManifestError(f"{file}: module[{i}].params: only dnn_tile takes params")
        if name == "dnn_tile":
            tile = tile_variant(TomlTable(file, f"module[{i}].params", t.get("params", dict, {})),
                                p.get("family", str))
        slot_names, regions = resolve_module_slots(file, f"module[{i}]", name, t.get("slots", list), slots, fused)
        registers = tuple(t.get("registers", list))
        missing = sorted(set(KINDS[name].regs) - set(registers))
        extra = sorted(set(registers) - set(KINDS[name].regs))
        if missing or extra:
            raise ManifestError(f"{file}: module[{i}].registers does not match the RTL of {name} "
                                f"(missing {missing}, unknown {extra})")
        resources = t.resources("resources")
        for s in slot_names:
            host = next(x for x in slots if x.name == s)
            region = next((f for f in fused if f.host == host.index and f.name in regions), None)
            if region is None:
                check_fit(file, f"module[{i}]", name, resources, host.resources, f"slot {s}")
            else:
                check_fit(file, f"module[{i}]", name, resources, region.resources, f"fused region {region.name}")
        modules[name] = ModuleSpec(name, t.get("kernel", str), slot_names, resources, registers, regions)
        t.done()
    if not modules:
        raise ManifestError(f"{file}: no [[module]] entries")

    platform = Platform(
        path=file, name=p.get("name", str), board=p.get("board", str), part=p.get("part", str),
        family=p.get("family", str), idcode=p.get("idcode", int),
        fabric_clock_hz=float(p.positive("fabric_clock_hz", (int, float))), frame_words=frame_words,
        full_bitstream_bytes=p.positive("full_bitstream_bytes"),
        bitstream_date=p.get("bitstream_date", str), bitstream_time=p.get("bitstream_time", str),
        config_port=port_spec, link=link_spec, slots=tuple(slots), modules=modules,
        pixels_per_clock=p.get("pixels_per_clock", int, 1),
        streams=_streams(file, p, len(slots)),
        ddr_bytes_per_s=float(p.positive("ddr_bytes_per_s", (int, float))),
        dnn_tile=tile, fused=fused,
    )
    if platform.pixels_per_clock not in PIXELS_PER_CLOCK:
        raise ManifestError(f"{file}: platform.pixels_per_clock must be 1 or 4, not {platform.pixels_per_clock}")
    # Provenance notes, kept in the file for readers; the stream figures must have theirs.
    sources = TomlTable(file, "platform.sources", p.get("sources", dict, {}))
    for key in ("streams", "ddr_bytes_per_s"):
        if not sources.get(key, str, "").strip():
            raise ManifestError(f"{file}: missing key platform.sources.{key}: platform.{key} needs its source "
                                f"(a document, or 'assumption: ...')")
    if platform.family not in ("zynq7000", "zynqmp"):
        raise ManifestError(f"{file}: platform.family must be 'zynq7000' or 'zynqmp'")
    if not 0 < platform.idcode < 2**32:
        raise ManifestError(f"{file}: platform.idcode must be a 32-bit value")
    p.done()
    top.done()
    return platform


def manifest_at_pixels_per_clock(path: str | Path, nppc: int, dest: Path,
                                 modules: Iterable[str] | None = None) -> Path:
    """Write to ``dest`` a copy of a manifest whose bitstreams carry the ``nppc`` variant of every module:
    it declares ``pixels_per_clock = nppc``, is named ``<name>-x<nppc>``, and keeps every module, or
    only ``modules`` when given (a smaller library per slot: fewer modules for the simulator to
    evaluate). Resource figures are the NPPC 1 ones (not synthesized at ``nppc``). Returns ``dest``."""
    if nppc not in PIXELS_PER_CLOCK:
        raise ManifestError(f"pixels_per_clock must be one of {PIXELS_PER_CLOCK}, not {nppc}")
    base = load_platform(path)
    head, *blocks = base.path.read_text().split("\n[[module]]\n")
    head = re.sub(r"(?m)^pixels_per_clock\s*=.*\n", "", head)
    head = head.replace("[platform]\n", f"[platform]\npixels_per_clock = {nppc}\n", 1)
    head = head.replace(f'name = "{base.name}"', f'name = "{base.name}-x{nppc}"', 1)
    wanted = None if modules is None else set(modules)
    kept = [b for b in blocks if wanted is None or _name(b) in wanted]
    dest.write_text("\n[[module]]\n".join([head, *kept]))
    load_platform(dest)  # validate what was written
    return dest


def _name(block: str) -> str:
    return block.split('name = "', 1)[1].split('"', 1)[0]


"""Fused regions: adjacent slots a platform manifest declares as one region a big module may occupy.

A module bigger than every slot (fast9 or template_match at four pixels per clock on the ZCU104) can
still be offered where two neighbouring partitions are floorplanned so that one partial bitstream
spans them (Nguyen & Hoe's flexible boundaries; VersaSlot's big slots). The manifest declares it::

    [[fused]]
    name = "shell/rp_2+3"
    slots = ["shell/rp_2", "shell/rp_3"]
    resources = { lut = 28000, ff = 56000, bram36 = 48, uram = 48, dsp = 192 }

and a module lists the region's name among its ``slots``. The region's first member is its *host*:
the module's stream boundary (the host's link and registers) is the host slot's, so every part of
the runtime that places a module on a slot index keeps working; the other members are decoupled while
the fused module is there. A region is 2 or more slots (template_match at four pixels per clock
needs three ZCU104 slots' DSPs). What changes is the module's *footprint*: loading it writes the frames of
every member (the region's frame range, from the host's first frame to the last member's last, the
static frames between them included: a fused floorplan owns them) and occupies every member, and a
load into any member evicts it.

Rules checked here, each with its own error: the region names 2 or more known slots, consecutive
in the manifest (slots k, k + 1, ...) and in frame addresses, with no other slot's frames between
them; a slot is in at most one region; the region's resources are at most the members' sum (a
fused floorplan gains no fabric that the members did not have, save the boundary, which is not
counted); a module that lists a region does not also list the region's host as a slot of its own
(one slot index, one footprint).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from fpgashare.catalogue.toml_table import TomlTable
from fpgashare.errors import ManifestError


@dataclass(frozen=True)
class FusedSpec:
    """A fused region: its member slots (host first), the frame range its partials write, its fabric."""

    name: str
    slots: tuple[int, ...]          #: member slot indices, host first (consecutive)
    far_base: int                   #: the host's first frame
    frames: int                     #: frames from the host's first to the last member's last
    resources: dict[str, int]
    member_names: tuple[str, ...] = ()  #: the members' slot names, host first

    @property
    def host(self) -> int:
        return self.slots[0]


def read_fused(file: Path, entries: list, slots: Sequence) -> tuple[FusedSpec, ...]:
    """Validate the manifest's ``[[fused]]`` entries against its ``slots`` (SlotSpec, in index order)."""
    by_name = {s.name: s for s in slots}
    seen: dict[int, str] = {}
    out: list[FusedSpec] = []
    for i, entry in enumerate(entries):
        t = TomlTable(file, f"fused[{i}]", entry)
        name = t.get("name", str)
        members = t.get("slots", list)
        resources = t.resources("resources")
        t.done()
        if name in by_name or any(f.name == name for f in out):
            raise ManifestError(f"{file}: fused[{i}].name {name!r} is already the name of a slot or region")
        if len(members) < 2:
            raise ManifestError(f"{file}: fused[{i}].slots must name at least 2 slots, not {len(members)}")
        for m in members:
            if not isinstance(m, str) or m not in by_name:
                raise ManifestError(f"{file}: fused[{i}].slots names unknown slot {m!r} "
                                    f"(slots: {', '.join(by_name)})")
        specs = [by_name[m] for m in members]
        for a, b in itertools.pairwise(specs):
            if b.index != a.index + 1:
                raise ManifestError(f"{file}: fused[{i}] ({name}): slots {a.name} and {b.name} are not adjacent "
                                    f"(a region's slots must be consecutive in the manifest, host first)")
            if b.far_base < a.far_base + a.frames:
                raise ManifestError(f"{file}: fused[{i}] ({name}): {b.name} does not follow {a.name} "
                                    f"in frame addresses")
        first, last = specs[0], specs[-1]
        lo, hi = first.far_base, last.far_base + last.frames
        inside = {s.index for s in specs}
        between = [s.name for s in slots if s.index not in inside and s.far_base < hi and s.far_base + s.frames > lo]
        if between:
            raise ManifestError(f"{file}: fused[{i}] ({name}): slot {between[0]} lies inside the region's "
                                f"frames; its slots are not adjacent")
        for s in specs:
            if s.index in seen:
                raise ManifestError(f"{file}: fused[{i}] ({name}) overlaps region {seen[s.index]}: "
                                    f"slot {s.name} is in both")
            seen[s.index] = name
        for res, amount in resources.items():
            total = sum(s.resources.get(res, 0) for s in specs)
            if amount > total:
                raise ManifestError(f"{file}: fused[{i}].resources.{res} is {amount}, more than its slots' "
                                    f"sum {total}")
        out.append(FusedSpec(name, tuple(s.index for s in specs), lo, hi - lo, resources, tuple(members)))
    return tuple(out)


def resolve_module_slots(file: Path, where: str, module: str, listed: Sequence[str], slots: Sequence,
                         fused: Sequence[FusedSpec]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """A module's ``slots`` list as (slot names it is placed on, fused region names it needs): a
    region stands for its host slot. ManifestError on an unknown name or a host listed twice."""
    names = {s.name for s in slots}
    regions = {f.name: f for f in fused}
    placed: list[str] = []
    needs: list[str] = []
    for entry in listed:
        if entry in regions:
            needs.append(entry)
        elif entry not in names:
            raise ManifestError(f"{file}: {where}.slots names unknown slot {entry!r}")
        else:
            placed.append(entry)
    for region in needs:
        host = slots[regions[region].host].name
        if host in placed:
            raise ManifestError(f"{file}: {where} ({module}) lists both slot {host} and region {region} hosted "
                                f"by it; a module has one footprint per slot")
        placed.append(host)
    return tuple(placed), tuple(needs)


def check_fit(file: Path, where: str, module: str, resources: dict[str, int], budget: dict[str, int],
              place: str) -> None:
    """ManifestError when ``resources`` exceed ``budget`` (a slot's or a region's) in any kind."""
    for res, need in resources.items():
        if need > budget.get(res, 0):
            raise ManifestError(f"{file}: {where} ({module}) needs {need} {res} but {place} "
                                f"has {budget.get(res, 0)}")



def restrict(fused: Sequence[FusedSpec], modules: dict, chosen: Sequence[int]) -> tuple[tuple[FusedSpec, ...], dict]:
    """The fused regions and modules (name -> ModuleSpec) of a platform cut down to the slots
    ``chosen`` (global indices, renumbered 0.. in that order; runtime/backends/slot_view.py): a
    region wholly inside with its members still consecutive is kept, renumbered; any other is
    dropped, and its host no longer offers the modules that need it (they fit no one slot)."""
    local = {g: i for i, g in enumerate(chosen)}
    kept, dropped = [], {}
    for f in fused:
        idx = [local.get(g) for g in f.slots]
        if None not in idx and idx == list(range(idx[0], idx[0] + len(idx))):
            kept.append(replace(f, slots=tuple(idx)))
        else:
            dropped[f.name] = f.member_names[0]
    if not dropped:
        return tuple(kept), modules
    out = {}
    for name, spec in modules.items():
        lost = [r for r in spec.regions if r in dropped]
        if lost:
            spec = replace(spec, regions=tuple(r for r in spec.regions if r not in dropped),
                           slots=tuple(s for s in spec.slots if s not in {dropped[r] for r in lost}))
        out[name] = spec
    return tuple(kept), out

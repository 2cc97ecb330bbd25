"""``fpgashare board package``: the folder that goes under /etc/fpgashare on a board.

Layout (what ``systemd/fpgashare.service`` reads)::

    platform.toml            the platform manifest
    bitstreams/              partial bitstreams and their index.json
    shell.bit, shell.hwh     the shell overlay (from the Vivado build; absent without --shell)
    fpgashare.service        the systemd unit
    package.json             what is here, with SHA-256 of every file
    dfx-mgr/<platform>_shell/  (--dfx-mgr) a dfx-mgr firmware folder: shell.json, the shell's
                             .bit.bin, <module>/<module>_slot<k>/{accel.json, partial .bit.bin}

The partials are either the Vivado build's (``--partials OUT/bit``: the files named as the
registry names them, indexed with ``"origin": "vivado"``) or, without it, the simulated board's
stand-ins (``fpgashare bitstream build``, with ``--relocatable`` one file per module), which let
the daemon and its loads be tried before the Vivado step but configure nothing real.
"""

from __future__ import annotations

import hashlib
import json
import logging
import shutil
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from fpgashare.bitstream.bitfile import bit_to_bin, parse_bit
from fpgashare.bitstream.registry import INDEX_NAME, Registry, build_all, file_name, part_field
from fpgashare.catalogue.platform import Platform
from fpgashare.errors import BitstreamError, FpgashareError

log = logging.getLogger(__name__)

UNIT_NAME = "fpgashare.service"


@dataclass
class Package:
    """What ``package`` wrote."""

    out: Path
    platform: str
    origin: str                      #: "vivado" or "simulated"
    partials: int
    shell: bool
    dfx_mgr: Path | None
    missing: list[str] = field(default_factory=list)   #: what a board still needs, in words

    def as_dict(self) -> dict:
        return {"out": str(self.out), "platform": self.platform, "origin": self.origin,
                "partials": self.partials, "shell": self.shell,
                "dfx_mgr": str(self.dfx_mgr) if self.dfx_mgr else None, "missing": self.missing}


def package(platform: Platform, out: Path, *, partials: Path | None = None, shell: Path | None = None,
            relocatable: bool = False, dfx_mgr: bool = False) -> Package:
    """Assemble the /etc/fpgashare folder for ``platform`` in ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(platform.path, out / "platform.toml")
    shutil.copyfile(Path(str(resources.files("fpgashare.systemd"))) / UNIT_NAME, out / UNIT_NAME)
    bits = out / "bitstreams"
    if bits.exists():
        shutil.rmtree(bits)
    if partials is not None:
        if relocatable:
            raise FpgashareError("--relocatable applies to the simulated stand-ins, not to --partials "
                                 "(Vivado partials are not relocated here)")
        _index_vivado(platform, partials, bits)
        origin = "vivado"
    else:
        build_all(platform, bits, relocatable)
        origin = "simulated"
    registry = Registry(bits, platform)          # everything the daemon will check, checked now
    loadable = [(slot, module, registry.bitfile(slot, module)) for slot, module in registry.pairs()]
    result = Package(out, platform.name, origin, registry.files, shell is not None, None)
    if shell is not None:
        _copy_shell(platform, shell, out)
    else:
        result.missing.append("shell.bit + shell.hwh: the shell overlay, from the Vivado build (--shell OUT/shell.bit)")
    if origin == "simulated":
        result.missing.append("real partial bitstreams: these are the simulated board's stand-ins "
                              "(--partials OUT/bit from the Vivado build)")
    if dfx_mgr:
        result.dfx_mgr = _dfx_mgr(platform, out, loadable, shell)
        result.missing.append("dfx-mgr device-tree overlays (.dtbo) for the shell and each partial: "
                              "not generated here (xsct createdts / dtc)")
    _write_manifest(out, result)
    log.info("packaged %s for %s in %s", origin, platform.name, out)
    return result


def _index_vivado(platform: Platform, source: Path, bits: Path) -> None:
    """Copy the Vivado build's partials named as the registry names them and index them."""
    if not source.is_dir():
        raise FpgashareError(f"--partials {source}: not a folder")
    bits.mkdir(parents=True)
    entries = []
    for slot in platform.slots:
        for module in sorted(platform.modules):
            if slot.name not in platform.modules[module].slots:
                continue
            name = file_name(slot, module)
            path = source / name
            if not path.is_file():
                raise FpgashareError(f"--partials {source}: {name} is missing (the Vivado build writes one "
                                     f"per slot and module)")
            data = path.read_bytes()
            header, _ = parse_bit(data)
            if header.part != part_field(platform):
                raise BitstreamError(f"{path}: built for part {header.part!r}, not {part_field(platform)!r}")
            shutil.copyfile(path, bits / name)
            entries.append({"file": name, "slot": slot.name, "module": module,
                            "sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)})
    index = {"platform": platform.name, "part": platform.part, "origin": "vivado", "relocatable": False,
             "bitstreams": entries}
    (bits / INDEX_NAME).write_text(json.dumps(index, indent=2) + "\n")


def _copy_shell(platform: Platform, shell: Path, out: Path) -> None:
    hwh = shell.with_suffix(".hwh")
    for path in (shell, hwh):
        if not path.is_file():
            raise FpgashareError(f"--shell {shell}: {path} does not exist (the overlay needs the .bit and its .hwh)")
    header, _ = parse_bit(shell.read_bytes())
    if header.part != part_field(platform):
        raise BitstreamError(f"{shell}: built for part {header.part!r}, not {part_field(platform)!r}")
    shutil.copyfile(shell, out / "shell.bit")
    shutil.copyfile(hwh, out / "shell.hwh")


def _dfx_mgr(platform: Platform, out: Path, loadable: list, shell: Path | None) -> Path:
    """dfx-mgr's layout (Xilinx/dfx-mgr README): a base folder with shell.json and the shell's
    .bit.bin, one folder per accelerator with a <name>_slot<k> folder per slot."""
    base = out / "dfx-mgr" / f"{platform.name.replace('-', '_')}_shell"
    if base.exists():
        shutil.rmtree(base)
    base.mkdir(parents=True)
    shell_json = {"shell_type": "PL_DFX", "num_pl_slots": len(platform.slots), "num_aie_slots": 0}
    (base / "shell.json").write_text(json.dumps(shell_json, indent=2) + "\n")
    if shell is not None:
        (base / f"{base.name}.bit.bin").write_bytes(bit_to_bin((out / "shell.bit").read_bytes()))
    for slot, module, checked in loadable:
        folder = base / module / f"{module}_slot{slot.index}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "accel.json").write_text(json.dumps({"accel_type": "XRT_PL_DFX"}, indent=2) + "\n")
        (folder / f"{module}_slot{slot.index}_partial.bit.bin").write_bytes(bit_to_bin(checked.data))
    return base


def _write_manifest(out: Path, result: Package) -> None:
    files = {str(p.relative_to(out)): hashlib.sha256(p.read_bytes()).hexdigest()
             for p in sorted(out.rglob("*")) if p.is_file() and p.name != "package.json"}
    (out / "package.json").write_text(json.dumps({**result.as_dict(), "out": None, "files": files}, indent=2) + "\n")

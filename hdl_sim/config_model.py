"""The shell's configuration block (``config_block.sv``: the configuration port, its input slice, the
cycle counter and the registers they own) as a shared library of its own, for a harness whose shell is
built with ``CFG_EXTERNAL = 1`` (see shell_harness.cpp and config_pins.h).

The harness evaluates it beside the shell every cycle, and alone while a partial load streams in with
the rest of the shell at rest: a load then costs this block's evaluation a word, not the shell's.
Cached by content hash like every build; its key holds only the block's sources and the shell
parameters it takes.
"""

from __future__ import annotations

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

#: Shell parameters config_block takes (shell.sv passes them on); the rest is the shell's.
BLOCK_PARAMETERS = ("NUM_SLOTS", "IDCODE", "FRAME_WORDS", "SLOT_FAR_BASE", "SLOT_FRAMES", "SLOT_MODULES",
                    "SLOT_FUSED_FRAMES", "SLOT_FUSED_MODULES", "SLOT_FUSED_LAST")
BLOCK_RTL = ("fpgashare_pkg.sv", "sync_fifo.sv", "config_port.sv", "config_block.sv")
#: The checkers that bind into the block's modules (sva_binds.sv binds others too; those are absent here).
BLOCK_SVA = ("sva_handshake.sv", "sva_config_port.sv", "sva_fused_region.sv", "sva_config_block.sv", "sva_binds.sv")
MODEL_SOURCES = ("config_model.cpp", "config_pins.h", "port_words.h", "eval_phases.h")


def block_parameters(shell_parameters: Mapping[str, int | str]) -> dict[str, int | str]:
    """The part of a shell's parameters the configuration block is built with."""
    return {k: shell_parameters[k] for k in BLOCK_PARAMETERS if k in shell_parameters}


def build_config_block(parameters: Mapping[str, int | str], flags: Sequence[str], options: CompileOptions) -> Path:
    """Build (or reuse) the configuration block's library at ``parameters``; return its path."""
    setup_environment()
    cpp = [HARNESS_DIR / name for name in MODEL_SOURCES]
    sources = [RTL_DIR / name for name in (*BLOCK_RTL, *BLOCK_SVA)]
    key = content_key("config_block", [*sources, *rtl_headers(), *cpp],
                      {"params": dict(parameters), "flags": list(flags), "compile": asdict(options)})
    build_dir = cache_root() / "config_block" / key
    lib = build_dir / "libcfg.so"
    with build_lock(build_dir):
        if lib.exists():
            return lib
        log.info("building the configuration block's model in %s", build_dir)
        gparams = [f"-G{k}={format_parameter(v)}" for k, v in parameters.items()]
        verilate = ["verilator", "--cc", "--top-module", "config_block", "--prefix", "Vcfg", "-Mdir",
                    str(build_dir / "obj"), f"-I{RTL_DIR}", *flags, *gparams, *map(str, sources)]
        runtime = runtime_object(options)
        compile_shared_library(verilate, build_dir / "obj", "Vcfg", [cpp[0]], lib, options, jobs=1,
                               runtime=runtime, one_unit=True)
    return lib

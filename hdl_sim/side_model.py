"""A part of the shell Verilated on its own as a shared library (a "side model"), which the bulk harness
attaches beside the shell and evaluates at that part's boundary: the configuration block
(config_model.py), the AXI-Lite fabric (fabric_model.py) and each reconfigurable module
(module_models.py).

Every such library is built the same way, so the build is written once here: a content key over
everything the library is made of (its RTL and checkers, the RTL headers, its C++ wrapper and the
headers that wrapper includes, the parameters, flags and compile options), a cache folder named by
that key, a lock so that two processes never build one folder at once, then Verilator and the
compiler. A changed input is a new key and so a new folder: a build is never reused for other inputs.
"""

from __future__ import annotations

import ctypes
import logging
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
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


@dataclass(frozen=True)
class SideModel:
    """What tells one fixed part of the shell's side models from another (its build is build_side_model)."""

    name: str                      #: the build's cache folder and key name
    what: str                      #: how logs and errors name the model
    top: str                       #: the RTL module Verilated as the model's top
    prefix: str                    #: Verilator's --prefix (the model class the C++ wrapper names)
    parameters: tuple[str, ...]    #: the shell parameters the top takes (the shell passes them on)
    rtl: tuple[str, ...]           #: its RTL files under hdl_sim/rtl, in compile order
    sva: tuple[str, ...]           #: the checkers that bind into its modules (sva_binds.sv binds others too)
    sources: tuple[str, ...]       #: under hdl_sim/harness: the C++ wrapper first, then every header it includes
    library: str                   #: the shared library's file name
    api: str                       #: the library's exported call returning its API table
    attach: str                    #: the harness's call that attaches a model to an instance

    def shell_part(self, shell_parameters: Mapping[str, int | str]) -> dict[str, int | str]:
        """The part of a shell's parameters this model is built with."""
        return {k: shell_parameters[k] for k in self.parameters if k in shell_parameters}


def build_library(build_dir: Path, library: str, what: str, top: str, prefix: str,
                  parameters: Mapping[str, int | str], sources: Sequence[Path], flags: Sequence[str],
                  wrapper: Path, options: CompileOptions, written: Mapping[str, str] | None = None) -> Path:
    """Verilate ``top`` from ``sources`` at ``parameters`` and link it with the C++ ``wrapper`` into
    ``build_dir / library``, unless it is there already; return its path. ``build_dir`` must be named
    by a content key over all of these (the caller's), so a library found there is this one.
    ``written``: files to write into ``build_dir`` first (name: text) and verilate after ``sources``."""
    lib = build_dir / library
    with build_lock(build_dir):
        if lib.exists():
            return lib
        log.info("building %s in %s", what, build_dir)
        extra = []
        for name, text in (written or {}).items():
            extra.append(build_dir / name)
            extra[-1].write_text(text)
        gparams = [f"-G{k}={format_parameter(v)}" for k, v in parameters.items()]
        verilate = ["verilator", "--cc", "--top-module", top, "--prefix", prefix, "-Mdir",
                    str(build_dir / "obj"), f"-I{RTL_DIR}", *flags, *gparams, *map(str, [*sources, *extra])]
        compile_shared_library(verilate, build_dir / "obj", prefix, [wrapper], lib, options, jobs=1,
                               runtime=runtime_object(options), one_unit=True)
    return lib


def build_side_model(model: SideModel, parameters: Mapping[str, int | str], flags: Sequence[str],
                     options: CompileOptions) -> Path:
    """Build (or reuse) ``model``'s library at ``parameters`` (its part of the shell's, shell_part);
    return its path. Its key holds only the model's own sources and those parameters."""
    setup_environment()
    cpp = [HARNESS_DIR / name for name in model.sources]
    sources = [RTL_DIR / name for name in (*model.rtl, *model.sva)]
    key = content_key(model.name, [*sources, *rtl_headers(), *cpp],
                      {"params": dict(parameters), "flags": list(flags), "compile": asdict(options)})
    return build_library(cache_root() / model.name / key, model.library, model.what, model.top, model.prefix,
                         parameters, sources, flags, cpp[0], options)


def load_side_model(model: SideModel, shell_parameters: Mapping[str, int | str], flags: Sequence[str],
                    options: CompileOptions) -> tuple[ctypes.CDLL, int]:
    """Build (or reuse) and load ``model``'s library for a shell with ``shell_parameters``; return it
    (the caller keeps it loaded as long as a model of it lives) and the address of its API table."""
    lib = ctypes.CDLL(str(build_side_model(model, model.shell_part(shell_parameters), flags, options)))
    api = getattr(lib, model.api)
    api.restype = ctypes.c_void_p
    return lib, api()

"""One shared library per reconfigurable module, for a harness that simulates a slot's loaded module
on its own (the shell built with ``RM_EXTERNAL = 1``; see shell_harness.cpp and rm_pins.h).

A module's library is ``rm_library`` at one ``MODULE_ID`` with the stream parameters of the shell
(beat width, pixels per clock, line length, DNN tile sizes), wrapped by ``rm_model.cpp`` in a C ABI.
It is cached by content hash like every build, and its key holds only what the module's model
depends on (``module_sources``, and of the shell's parameters only those its code names,
``model_parameters``): a new platform or chain with the same stream parameters reuses every module
built before and builds only its shell (and the modules nobody built yet), and an edit to one
module's RTL rebuilds that module's model only. So a vision module built for the PYNQ-Z2 serves the
ZCU104 too: the two differ only in the DNN tile's sizes, which no other module's code names.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from pathlib import Path

from fpgashare.hdl_sim.build import (
    HARNESS_DIR,
    RTL_DIR,
    CompileOptions,
    cache_root,
    content_key,
    rtl_headers,
    runtime_object,
)
from fpgashare.hdl_sim.side_model import build_library
from fpgashare.hdl_sim.toolchain import setup_environment

#: Shell parameters that reach the modules (rp_slot passes them to rm_library); the rest is the shell's.
MODULE_PARAMETERS = ("DATA_W", "MAX_W", "NPPC", "DNN_P", "DNN_ACT_ENTRIES", "DNN_W_ENTRIES", "DNN_PG_ENTRIES",
                     "DNN_MAX_LAYERS")
MODEL_SOURCES = ("rm_model.cpp", "rm_pins.h", "side_model.h", "port_words.h", "eval_phases.h")


def module_parameters(shell_parameters: Mapping[str, int | str]) -> dict[str, int | str]:
    """The part of a shell's parameters a module model is built with."""
    return {k: shell_parameters[k] for k in MODULE_PARAMETERS if k in shell_parameters}


def slot_masks(shell_parameters: Mapping[str, int | str]) -> list[int]:
    """SLOT_MODULES of a shell parameter set, one mask per slot (bit m: the slot can hold module m)."""
    slots = int(shell_parameters.get("NUM_SLOTS", 2))
    value = shell_parameters.get("SLOT_MODULES", 0)
    mask = int(value.split("'h", 1)[1], 16) if isinstance(value, str) else int(value)
    return [(mask >> (32 * k)) & 0xFFFF_FFFE for k in range(slots)]


def slot_modules(shell_parameters: Mapping[str, int | str],
                 modules: Iterable[int] | None = None) -> dict[int, list[int]]:
    """Module ids to simulate per slot: what the slot's library holds, cut to ``modules`` if given
    (the smallest library for a run: the modules it can load)."""
    wanted = None if modules is None else set(modules)
    return {k: [m for m in range(1, 32) if mask >> m & 1 and (wanted is None or m in wanted)]
            for k, mask in enumerate(slot_masks(shell_parameters))}


def _code(text: str) -> str:
    """SystemVerilog without its comments (a module named in a comment is no dependency)."""
    return re.sub(r"//[^\n]*|/\*.*?\*/", " ", text, flags=re.S)


def module_sources(module_id: int, rtl_dir: Path = RTL_DIR) -> tuple[list[Path], str]:
    """What the model of ``module_id`` depends on: the RTL files its ``rm_library`` arm reaches (any
    file whose module or package it names, and theirs, transitively), and ``rm_library`` cut to that
    arm (the model's top: its text, to verilate in place of rm_library.sv). Over-approximates (a name
    counts wherever it appears in code), never misses a file it instantiates or imports: each RTL file
    holds one module or package named after it (tests/test_rtl_lint.py). If the arm is not found by
    its label (``g_<module name>``), every source counts and the top is rm_library.sv whole."""
    from fpgashare.catalogue.modules import KINDS_BY_ID

    files = {p.stem: p for p in sorted(rtl_dir.glob("*.sv"))}
    library = files.pop("rm_library").read_text()
    kind = KINDS_BY_ID.get(module_id)
    head, case, _ = library.partition("case (MODULE_ID)")
    arm = re.search(rf"begin\s*:\s*g_{kind.name}\b.*?\n\s*end\b", library, re.S) if kind and case else None
    if arm is None:
        return sorted(files.values()), library
    seen: set[str] = set()
    todo = [head + arm.group(0)]
    while todo:
        code = _code(todo.pop())
        for stem in files:
            if stem not in seen and re.search(rf"\b{stem}\b", code):
                seen.add(stem)
                todo.append(files[stem].read_text())
    top = f"{head}case (MODULE_ID)\n        default: {arm.group(0)}\n    endcase\nendmodule\n\n`resetall\n"
    return sorted(files[s] for s in seen), top


def model_parameters(parameters: Mapping[str, int | str], library: str, depends: Iterable[Path],
                     headers: Iterable[Path] = ()) -> dict[str, int | str]:
    """The part of ``parameters`` a model's code names beyond its declaration in the model's top.

    ``library`` is the top (``rm_library`` cut to one arm, which declares every shell parameter a
    module can take), ``depends`` and ``headers`` the files it reaches. SystemVerilog names a
    parameter's value only by the parameter's name (parameter lists have no ``.*``), so a parameter
    whose name occurs once in all that code (its declaration) cannot reach the model: it is neither
    passed to Verilator nor part of the key. A name that occurs more often is kept even if the other
    occurrences mean something else (a port or another module's parameter of the same name): the
    cut only ever keeps too much."""
    code = _code(library) + "".join(_code(p.read_text()) for p in [*depends, *headers])
    return {k: v for k, v in parameters.items() if len(re.findall(rf"\b{re.escape(k)}\b", code)) > 1}


def _model_build(module_id: int, parameters: Mapping[str, int | str], flags: Sequence[str],
                 options: CompileOptions) -> tuple[Path, list[Path], str, dict[str, int | str]]:
    """The build folder of a module's model, its sources, its top's text and the parameters it takes."""
    depends, library = module_sources(module_id)
    params = model_parameters(parameters, library, depends, rtl_headers())
    cpp = [HARNESS_DIR / name for name in MODEL_SOURCES]
    key = content_key("module", [*depends, *rtl_headers(), *cpp],
                      {"id": module_id, "library": library, "params": params, "flags": list(flags),
                       "compile": asdict(options)})
    return cache_root() / "modules" / f"{module_id}-{key}", depends, library, params


def model_build(module_id: int, parameters: Mapping[str, int | str], flags: Sequence[str],
                options: CompileOptions) -> tuple[Path, list[Path], str, dict[str, int | str]]:
    """The build folder of module ``module_id``'s model at ``parameters``, the RTL files it reads, its
    top's text and the parameters it is built with (what hdl_sim/comb_inputs.py elaborates)."""
    return _model_build(module_id, parameters, flags, options)


def module_build_dir(module_id: int, parameters: Mapping[str, int | str], flags: Sequence[str],
                     options: CompileOptions) -> Path:
    """The cache folder of module ``module_id``'s model at ``parameters``: one folder for every
    parameter set that agrees on the parameters the model's code names (``model_parameters``)."""
    return _model_build(module_id, parameters, flags, options)[0]


def build_module(module_id: int, parameters: Mapping[str, int | str], flags: Sequence[str],
                 options: CompileOptions) -> Path:
    """Build (or reuse) the library of module ``module_id`` at ``parameters`` (of which it takes
    those its code names, ``model_parameters``); return its path."""
    setup_environment()
    build_dir, depends, library, params = _model_build(module_id, parameters, flags, options)
    # Verilator reads only the files this module reaches, and rm_library cut to its arm as the top
    return build_library(build_dir, "librm.so", f"module {module_id}'s model", "rm_library", "Vrm",
                         {"MODULE_ID": module_id, **params}, depends, flags, HARNESS_DIR / MODEL_SOURCES[0],
                         options, written={"rm_library.sv": library})


def build_modules(ids: Iterable[int], parameters: Mapping[str, int | str], flags: Sequence[str],
                  options: CompileOptions) -> dict[int, Path]:
    """Build (or reuse) the libraries of ``ids``, one per core at a time; {id: path}."""
    todo = sorted(set(ids))
    if not todo:
        return {}
    runtime_object(options)   # once, before the builds that link it
    with ThreadPoolExecutor(max_workers=min(len(todo), os.cpu_count() or 2)) as pool:
        paths = list(pool.map(lambda m: build_module(m, parameters, flags, options), todo))
    return dict(zip(todo, paths, strict=True))

"""cocotb models of the RTL: a Verilator model per top level and parameter set, cached by content hash,
linked against a Verilator runtime compiled once.

Verilator's makefile (what ``cocotb_tools.runner`` runs) compiles the runtime library (verilated.cpp,
verilated_vpi.cpp, verilated_dpi.cpp, verilated_threads.cpp: about 10 s of CPU at -Os) into every
model's folder again, although it does not depend on the model; a small module's own code takes 1-2 s.
Here the runtime is compiled once per Verilator installation and compile settings (``runtime_objects``,
content-hashed like the harness's runtime object) and every model links those objects; the model and
cocotb's ``verilator.cpp`` (the simulator's ``main``, which includes the model's header) are compiled
as one translation unit, so the runtime's headers are parsed once per model instead of twice.

Only the build changes: Verilator gets the flags ``cocotb_tools.runner`` gives it (plus ours:
assertions on, ``--x-assign fast``), and the simulation runs through ``cocotb_tools.runner`` as before.
The runtime objects are compiled with the defines the model's ``Vtop_classes.mk`` says (checked, so a
model verilated with tracing or timing is refused rather than linked against the wrong runtime).
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

from fpgashare.hdl_sim.build import (
    ASSERT_FLAGS,
    RTL_DIR,
    VERILATED_DEFINES,
    BuildError,
    _balanced,
    _unity,
    build_lock,
    cache_root,
    content_key,
    format_parameter,
    pch_flags,
    rtl_headers,
    run_step,
    sim_sources,
)
from fpgashare.hdl_sim.toolchain import setup_environment, verilator_root

log = logging.getLogger(__name__)

#: The runtime library a cocotb model links (the makefile's VM_GLOBAL_FAST for a --vpi model).
COCOTB_RUNTIME_SOURCES = ("verilated.cpp", "verilated_vpi.cpp", "verilated_dpi.cpp", "verilated_threads.cpp")

#: Verilator flags of every cocotb model besides those ``cocotb_tools.runner`` gives.
VERILATOR_FLAGS = ["-O3", "--x-assign", "fast", "--x-initial", "fast", "-Wno-fatal", *ASSERT_FLAGS]

PREFIX = "Vtop"   #: the model class name cocotb's verilator.cpp expects


@dataclass(frozen=True)
class ModelCompile:
    """g++ settings of cocotb models. A cocotb test spends its time in Python (the testbench, the VPI
    calls), not in the model's ``eval``, so the model is compiled for compile time; the runtime is
    compiled once per run, so it is optimised (every VPI access goes through verilated_vpi.cpp)."""

    model: str = "-O1"
    slow: str = "-O0"      #: a large model's run-once files
    runtime: str = "-O2"
    cxxflags: tuple[str, ...] = ("-std=gnu++17",)


def _cocotb_paths() -> tuple[Path, Path]:
    """cocotb's ``verilator.cpp`` (the simulator's main) and the folder of its VPI library."""
    import cocotb_tools.config

    return (Path(cocotb_tools.config.share_dir) / "lib" / "verilator" / "verilator.cpp",
            Path(cocotb_tools.config.libs_dir))


def cocotb_toolchain() -> dict[str, str]:
    """Where cocotb and Verilator are installed, and cocotb's version. A cocotb model's binary points
    into both (cocotb's verilator.cpp, an rpath to its VPI library), so a build made from another venv
    or checkout must not be reused."""
    import cocotb

    return {"cocotb": str(Path(cocotb.__file__).resolve().parent), "cocotb_version": cocotb.__version__,
            "verilator": str(verilator_root())}


def _include_flags(obj: Path | None) -> list[str]:
    inc = verilator_root() / "include"
    return [*([f"-I{obj}"] if obj else []), f"-I{inc}", f"-I{inc / 'vltstd'}", "-DVERILATOR=1",
            *(f"-D{k}={v}" for k, v in VERILATED_DEFINES.items())]


def runtime_objects(options: ModelCompile = ModelCompile()) -> list[Path]:
    """Verilator's runtime library for cocotb models, compiled once per Verilator installation and
    ``options`` (a file lock makes concurrent workers wait for one compile)."""
    setup_environment()
    sources = [verilator_root() / "include" / src for src in COCOTB_RUNTIME_SOURCES]
    key = content_key("cocotb-runtime", sources, {"root": str(verilator_root()), "opt": options.runtime,
                                                  "cxxflags": options.cxxflags, "defines": VERILATED_DEFINES})
    build_dir = cache_root() / "cocotb-runtime" / key
    targets = [build_dir / f"{src.stem}.o" for src in sources]
    with build_lock(build_dir):
        missing = [(src, target) for src, target in zip(sources, targets, strict=True) if not target.exists()]
        if missing:
            def compile_one(src: Path, target: Path) -> None:
                tmp = target.with_suffix(".tmp.o")
                run_step(["g++", options.runtime, *options.cxxflags, *_include_flags(None), "-c", str(src),
                          "-o", str(tmp)], build_dir)
                tmp.rename(target)

            with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
                for future in [pool.submit(compile_one, *pair) for pair in missing]:
                    future.result()
    return targets


def cocotb_build_dir(toplevel: str, parameters: Mapping[str, object],
                     options: ModelCompile = ModelCompile()) -> Path:
    """The cached build folder for one cocotb top level and parameter set."""
    key = content_key("cocotb", [*sim_sources(), *rtl_headers()],
                      {"top": toplevel, "params": dict(parameters), "toolchain": cocotb_toolchain(),
                       "verilator_flags": VERILATOR_FLAGS, "compile": asdict(options)})
    return cache_root() / "cocotb" / f"{toplevel}-{key}"


def _model_classes(obj: Path) -> dict[str, list[str]]:
    """The variables of Verilator's ``Vtop_classes.mk`` (VM_CLASSES_FAST and the like) -> their words."""
    out: dict[str, list[str]] = {}
    text = (obj / f"{PREFIX}_classes.mk").read_text().replace("\\\n", " ")
    for line in text.splitlines():
        name, sep, value = line.partition("=")
        if sep and name.strip().rstrip("+").strip().startswith("VM_"):
            out.setdefault(name.strip().rstrip("+").strip(), []).extend(value.split())
    return out


def verilate_command(toplevel: str, parameters: Mapping[str, str], build_dir: Path) -> list[str]:
    """The Verilator command of a cocotb model: ``cocotb_tools.runner``'s (VPI, every signal public,
    class ``Vtop``) with our flags, writing C++ to ``build_dir``."""
    return ["verilator", "--cc", "-Mdir", str(build_dir), "--top-module", toplevel, "--vpi", "--public-flat-rw",
            "--prefix", PREFIX, *VERILATOR_FLAGS, "--timescale", "1ns/1ps", f"-I{RTL_DIR}",
            *(f"-G{name}={value}" for name, value in parameters.items()), *map(str, sim_sources())]


def build_model(toplevel: str, parameters: Mapping[str, str], build_dir: Path,
                options: ModelCompile = ModelCompile()) -> Path:
    """Verilate ``toplevel`` with ``parameters`` into ``build_dir`` and link the simulator executable
    (named after the top level, where ``cocotb_tools.runner`` looks for it) unless it is there already.
    The caller holds ``build_dir``'s lock."""
    exe = build_dir / toplevel
    if exe.exists():   # the folder's name hashes everything the build reads
        return exe
    main_cpp, libs_dir = _cocotb_paths()
    runtime = runtime_objects(options)
    run_step(verilate_command(toplevel, parameters, build_dir), build_dir)
    classes = _model_classes(build_dir)
    wrong = {k: v for k, v in VERILATED_DEFINES.items() if classes.get(k, [v]) != [v]}
    if wrong:
        raise BuildError(f"{build_dir}: the model was verilated with {', '.join(wrong)} set; the runtime is "
                         f"compiled without")
    fast = classes.get("VM_CLASSES_FAST", []) + classes.get("VM_SUPPORT_FAST", [])
    slow = classes.get("VM_CLASSES_SLOW", []) + classes.get("VM_SUPPORT_SLOW", [])
    jobs = os.cpu_count() or 2
    if classes.get("VM_PARALLEL_BUILDS") == ["1"]:
        # A large model (Verilator split it into files for a parallel build): its per-cycle files in a
        # unit per core, its run-once files (constructors, initial values) in one unit at -O0. Few
        # units, because each parses the model's headers again (on the zcu104 shell: 1 s a unit, and
        # 19 s of CPU for the model this way against 35 s a unit per file, 36 s with the makefile).
        groups = _balanced(fast, build_dir, jobs)
        units = [(_unity(build_dir, f"{PREFIX}__fast{k}", group), options.model, True)
                 for k, group in enumerate(groups)]
        units.append((_unity(build_dir, f"{PREFIX}__slow", slow), options.slow, False))
        units.append((Path(main_cpp), options.model, False))
    else:
        # A small model: the runtime's headers (verilated.h above all) cost more to parse than its
        # code to compile, so the model and the simulator's main are one unit.
        unit = build_dir / f"{PREFIX}__model.cpp"
        unit.write_text("".join(f'#include "{name}.cpp"\n' for name in fast + slow) + f'#include "{main_cpp}"\n')
        units = [(unit, options.model, True)]

    def compile_unit(source: Path, opt: str, pch: bool) -> Path:
        """``pch``: the unit begins with a file Verilator wrote (each includes verilated.h first), so it
        starts from verilated.h precompiled (``verilated_pch``)."""
        target = build_dir / f"{source.stem}.o"
        first = pch_flags([opt, *options.cxxflags, *_include_flags(None)]) if pch else []
        run_step(["g++", opt, *first, *options.cxxflags, *_include_flags(build_dir), "-c", str(source), "-o",
                  str(target)], build_dir)
        return target

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        objects = [future.result() for future in [pool.submit(compile_unit, *unit) for unit in units]]
    tmp = exe.with_name(exe.name + ".tmp")
    run_step(["g++", "-o", str(tmp), *map(str, objects), *map(str, runtime), f"-Wl,-rpath,{libs_dir}", f"-L{libs_dir}",
              "-lcocotbvpi_verilator", "-pthread"], build_dir)
    tmp.rename(exe)
    return exe


def run_cocotb(
    toplevel: str,
    test_module: str,
    parameters: Mapping[str, object] | None = None,
    extra_env: Mapping[str, str] | None = None,
    testcase: str | None = None,
) -> tuple[int, int]:
    """Build (or reuse) a cocotb model of ``toplevel`` and run ``test_module`` on it.

    ``test_module`` is a dotted module name importable from the repository root.
    Returns (tests run, tests failed).
    """
    from cocotb_tools.check_results import get_results
    from cocotb_tools.runner import get_runner

    setup_environment()
    params = {k: format_parameter(v) for k, v in (parameters or {}).items()}
    build_dir = cocotb_build_dir(toplevel, params)
    with build_lock(build_dir):
        build_model(toplevel, params, build_dir)
    repo_root = str(Path(__file__).resolve().parent.parent)
    if repo_root not in sys.path:
        sys.path.insert(0, repo_root)  # the runner hands sys.path to the simulator as PYTHONPATH
    results = get_runner("verilator").test(
        test_module=test_module,
        hdl_toplevel=toplevel,
        hdl_toplevel_lang="verilog",   # what runner.build would have found from the sources
        build_dir=build_dir,
        test_dir=build_dir / f"run-{os.getpid()}",
        extra_env=dict(extra_env or {}),
        testcase=testcase,
    )
    return get_results(results)


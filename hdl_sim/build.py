"""Verilator builds of the shell RTL, cached by content hash.

Two kinds of build share one cache: cocotb builds (a VPI model per top level and parameter set,
see ``cocotb_build.py``) and the bulk harness (a shared library with a C ABI, see
``harness.py``, compiled by ``compile_shared_library`` here rather than by Verilator's makefile).
A build's key hashes every RTL source, the harness source, the parameters and
the Verilator flags, so an edit rebuilds and an unchanged tree reuses the build. A file lock makes
concurrent pytest workers wait for one build instead of racing.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import logging
import os
import re
import subprocess
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from fpgashare.hdl_sim.toolchain import setup_environment, verilator_root

log = logging.getLogger(__name__)

RTL_DIR = Path(__file__).resolve().parent / "rtl"
HARNESS_DIR = Path(__file__).resolve().parent / "harness"


def cache_root() -> Path:
    """Folder holding all builds: $FPGASHARE_CACHE, else ~/.cache/fpgashare."""
    root = os.environ.get("FPGASHARE_CACHE")
    path = Path(root) if root else Path.home() / ".cache" / "fpgashare"
    path.mkdir(parents=True, exist_ok=True)
    return path


def rtl_sources() -> list[Path]:
    """Every synthesizable RTL file, the packages (``*_pkg.sv``) first so that the modules importing
    them come after them; Verilator elaborates only what the top level instantiates. The assertion
    checkers (``sva_*.sv``, simulation only) are not among them: ``sim_sources`` adds them."""
    files = sorted((f for f in RTL_DIR.glob("*.sv") if not f.name.startswith("sva_")),
                   key=lambda f: (not f.name.endswith("_pkg.sv"), f.name))
    if not files:
        raise FileNotFoundError(f"no RTL sources under {RTL_DIR}")
    return files


def rtl_module_files() -> list[Path]:
    """The RTL files that hold a module (one each, named after it): ``rtl_sources`` without the packages."""
    return [f for f in rtl_sources() if not f.name.endswith("_pkg.sv")]


def sva_sources() -> list[Path]:
    """The assertion checkers and their ``bind`` file (``sva_*.sv``): in every simulation build, never synthesized."""
    return sorted(RTL_DIR.glob("sva_*.sv"), key=lambda f: (f.name == "sva_binds.sv", f.name))


def sim_sources() -> list[Path]:
    """What every simulation build compiles: the RTL, then the checkers bound into it."""
    return [*rtl_sources(), *sva_sources()]


#: Verilator flags every simulation build shares: assertions on (the checkers in sva_*.sv, and the
#: RTL's own), so a broken handshake stops the simulation wherever it happens.
ASSERT_FLAGS = ["--assert"]


def rtl_headers() -> list[Path]:
    """Files the RTL `include`s: not sources of their own, but part of every build's hash."""
    return sorted(RTL_DIR.glob("*.svh"))


def content_key(kind: str, files: list[Path], settings: Mapping[str, object]) -> str:
    """SHA-256 (first 16 hex digits) over file names, contents and build settings."""
    digest = hashlib.sha256(kind.encode())
    for file in files:
        digest.update(file.name.encode())
        digest.update(file.read_bytes())
    digest.update(json.dumps(settings, sort_keys=True, default=str).encode())
    return digest.hexdigest()[:16]


@contextmanager
def build_lock(build_dir: Path) -> Iterator[None]:
    """Hold an exclusive lock on a build folder for the duration of the block."""
    build_dir.mkdir(parents=True, exist_ok=True)
    with open(build_dir / ".lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def format_parameter(value: object) -> str:
    """A Verilog literal for -G: ints wider than 32 bits are given with an explicit width."""
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int):
        if value < 0:
            raise ValueError(f"negative parameter values are not supported: {value}")
        bits = max(32, value.bit_length())
        return f"{bits}'h{value:x}"
    return str(value)


class BuildError(RuntimeError):
    """A build step (Verilator, the C++ compiler) failed; the message ends with its output."""


def run_step(cmd: Sequence[str], cwd: Path) -> None:
    """Run one build command; raise BuildError with the tail of its output if it fails."""
    started = time.perf_counter()
    result = subprocess.run(list(cmd), cwd=cwd, capture_output=True, text=True)
    log.debug("%.1f s: %s", time.perf_counter() - started, " ".join(cmd)[-160:])
    if result.returncode != 0:
        tail = (result.stdout + result.stderr)[-6000:]
        raise BuildError(f"build step failed: {' '.join(cmd[:3])} ...\n{tail}")


@dataclass(frozen=True)
class CompileOptions:
    """g++ optimisation per kind of translation unit. Verilator's "fast" files hold the per-cycle
    code; its "slow" files (constructors, initial values) run once, so they are not worth optimising.
    Its runtime library is mostly run-once code too (context, messages), but every ``eval()`` goes
    through two of its functions (``VlDeleter::deleteAll`` and ``Verilated::endOfEval``, a lock and a
    message-queue check each), so it is compiled like the model: at -O0 those two took about 15% of
    the harness's time on the zcu104 shell at four pixels per clock (perf).

    ``cxxflags`` go to every unit: -fno-semantic-interposition lets g++ inline and call directly the
    model's functions although they are compiled -fPIC (without it every call between them may be
    interposed and goes through the PLT; with it the zcu104 shell runs 2-4% faster). ``model_flags``
    go to the model's and the runtime's units only: hidden visibility keeps their symbols out of the
    library's dynamic table (the user sources, the harness's C ABI, keep default visibility so ctypes
    finds them)."""

    fast: str = "-O1"      #: -O2 is 2-3% faster per cycle but costs a third more compile (zcu104)
    slow: str = "-O0"
    runtime: str = "-O2"   #: +2 s of CPU on a build, while Verilator runs (wall unchanged)
    user: str = "-O2"      #: the harness's own sources
    cxxflags: tuple[str, ...] = ("-fPIC", "-std=c++17", "-fno-semantic-interposition")
    model_flags: tuple[str, ...] = ("-fvisibility=hidden",)


#: What the runtime library is compiled for; it must match the model (checked after Verilator ran).
VERILATED_DEFINES = {"VM_COVERAGE": "0", "VM_SC": "0", "VM_TIMING": "0", "VM_TRACE": "0", "VM_TRACE_FST": "0",
                     "VM_TRACE_VCD": "0", "VM_TRACE_SAIF": "0"}
RUNTIME_SOURCES = ("verilated.cpp", "verilated_threads.cpp")


def _classes(obj: Path, prefix: str) -> dict[str, list[str]]:
    """Variables of Verilator's ``<prefix>_classes.mk``: VM_CLASSES_FAST and the like -> names."""
    out: dict[str, list[str]] = {}
    text = (obj / f"{prefix}_classes.mk").read_text().replace("\\\n", " ")
    for line in text.splitlines():
        match = re.match(r"\s*(VM_\w+)\s*\+?=\s*(.*)", line)
        if match:
            out.setdefault(match.group(1), []).extend(match.group(2).split())
    return out


def _unity(obj: Path, name: str, files: list[str]) -> Path:
    """One translation unit including ``files`` (Verilator's own non-parallel build does the same)."""
    path = obj / f"{name}.cpp"
    path.write_text("".join(f'#include "{f}.cpp"\n' for f in files))
    return path


def _balanced(files: list[str], obj: Path, parts: int) -> list[list[str]]:
    """Split ``files`` into at most ``parts`` groups of about equal source size (largest first)."""
    groups: list[list[str]] = [[] for _ in range(max(1, min(parts, len(files))))]
    sizes = [0] * len(groups)
    for name in sorted(files, key=lambda f: -(obj / f"{f}.cpp").stat().st_size):
        k = sizes.index(min(sizes))
        groups[k].append(name)
        sizes[k] += (obj / f"{name}.cpp").stat().st_size
    return [g for g in groups if g]


def _compile_flags(obj: Path | None, options: CompileOptions) -> list[str]:
    inc = verilator_root() / "include"
    return [*options.cxxflags, *([f"-I{obj}"] if obj else []), f"-I{inc}", f"-I{inc / 'vltstd'}", "-DVERILATOR=1",
            *(f"-D{k}={v}" for k, v in VERILATED_DEFINES.items())]


def runtime_object(options: CompileOptions = CompileOptions()) -> Path:
    """Verilator's runtime library compiled once (one object, position-independent, hidden symbols)
    for every model built with ``options``: each model library links its own copy, so a run of many
    small models (a module each, see harness.py) does not compile it once per model."""
    setup_environment()
    key = content_key("runtime", [verilator_root() / "include" / src for src in RUNTIME_SOURCES],
                      {"root": str(verilator_root()), "compile": [options.runtime, *options.cxxflags,
                                                                  *options.model_flags], "defines": VERILATED_DEFINES})
    build_dir = cache_root() / "runtime" / key
    target = build_dir / "verilated_runtime.o"
    with build_lock(build_dir):
        if not target.exists():
            source = _unity(build_dir, "verilated_runtime", [Path(src).stem for src in RUNTIME_SOURCES])
            tmp = build_dir / "verilated_runtime.tmp.o"
            run_step(["g++", options.runtime, *_compile_flags(None, options), *options.model_flags, "-c", str(source),
                      "-o", str(tmp)], build_dir)
            tmp.rename(target)
    return target


def verilated_pch(flags: Sequence[str]) -> Path:
    """A folder holding ``verilated.h`` precompiled with the g++ ``flags`` (the optimisation level,
    defines and include paths of the units that will use it), beside a copy of the header (g++ takes a
    ``.gch`` only where it finds the header): a unit compiled with those flags and ``-I <folder>
    -include verilated.h`` starts from it. Every file Verilator writes includes verilated.h first, and
    parsing it is half of a small model's compile (a module's model: about 1 s of CPU without, 0.5 s
    with); a run builds many models, so the header is precompiled once per cache. g++ ignores a
    precompiled header made with other settings and reads the header instead, so a stale one costs
    time, never a wrong build; the key hashes Verilator's headers and the flags."""
    setup_environment()
    inc = verilator_root() / "include"
    key = content_key("pch", sorted(inc.glob("*.h")), {"root": str(inc), "flags": list(flags)})
    build_dir = cache_root() / "pch" / key
    target = build_dir / "verilated.h.gch"
    with build_lock(build_dir):
        if not target.exists():
            (build_dir / "verilated.h").write_bytes((inc / "verilated.h").read_bytes())
            tmp = build_dir / "verilated.h.tmp.gch"
            run_step(["g++", *flags, "-x", "c++-header", str(inc / "verilated.h"), "-o", str(tmp)], build_dir)
            tmp.rename(target)
    return build_dir


def pch_flags(flags: Sequence[str]) -> list[str]:
    """What a unit compiled with ``flags`` adds, ahead of them, to start from verilated.h precompiled."""
    return ["-I", str(verilated_pch(flags)), "-include", "verilated.h"]


def compile_shared_library(verilate: Sequence[str] | None, obj: Path, prefix: str, user_sources: Sequence[Path],
                           out: Path, options: CompileOptions = CompileOptions(), jobs: int | None = None,
                           runtime: Path | Callable[[], Path] | None = None, one_unit: bool = False,
                           after_verilate: Callable[[Path], None] | None = None) -> None:
    """Run ``verilate`` (a Verilator --cc command writing to ``obj`` a model whose class is ``prefix``,
    ``V<top>`` unless --prefix says otherwise), compile its output, Verilator's runtime library and
    ``user_sources`` with g++ on ``jobs`` cores (default: all), and link them into the shared library
    ``out``. ``verilate=None``: Verilator has already written the model to ``obj``.

    Faster than Verilator's makefile for a model built once: no precompiled headers of the model's
    (two cost more than the few translation units they would serve; verilated.h alone is precompiled
    once per cache, ``verilated_pch``), the model compiled as one translation unit per
    core, the run-once code at -O0, and the runtime library compiled (as one unit) while Verilator
    still runs (or, given ``runtime``, that object from ``runtime_object`` instead: a path, or a
    function returning it, called while Verilator runs). ``one_unit``
    compiles the model and ``user_sources`` as one translation unit (for small models).
    ``after_verilate(obj)`` runs once Verilator is done, before the user sources compile (to write a
    header from the model's, say). On the demo's
    shell: 17-20 s of CPU against 24-26 s for the makefile at
    the same -O levels, and against 45 s for the makefile as this harness used it before (-O2 throughout).
    With the runtime library at -O2 (per eval it runs two of its functions) the zcu104 shell's build
    takes 17 s of CPU instead of 15 s and the same wall time.
    """
    jobs = jobs or os.cpu_count() or 2
    flags = _compile_flags(obj, options)
    cwd = obj.parent
    obj.mkdir(parents=True, exist_ok=True)   # the runtime library compiles into it while Verilator runs

    def compile_unit(source: Path, opt: str, name: str, extra: Sequence[str] = options.model_flags,
                     pch: bool = False) -> Path:
        """``pch``: a unit of the model's per-cycle code (at ``options.fast``): every file Verilator
        writes includes verilated.h first, so the unit starts from it precompiled."""
        target = obj / f"{name}.o"
        first = pch_flags([opt, *_compile_flags(None, options), *extra]) if pch else []
        run_step(["g++", opt, *first, *flags, *extra, "-c", str(source), "-o", str(target)], cwd)
        return target

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        model = pool.submit(run_step, list(verilate), cwd) if verilate is not None else None
        objects: list[Future[Path]] = []
        if runtime is None:   # one unit for the runtime library: its two files share most of their headers
            unity = _unity(obj, "verilated_runtime", [Path(src).stem for src in RUNTIME_SOURCES])
            objects.append(pool.submit(compile_unit, unity, options.runtime, unity.stem))
        elif callable(runtime):
            objects.append(pool.submit(runtime))
        if model is not None:
            model.result()
        if after_verilate is not None:
            after_verilate(obj)
        classes = _classes(obj, prefix)
        wrong = {k: v for k, v in VERILATED_DEFINES.items() if classes.get(k, [v]) != [v]}
        if wrong:
            raise BuildError(f"{obj}: the model was verilated with {', '.join(wrong)} set; the runtime library "
                             f"is compiled without")
        fast = classes.get("VM_CLASSES_FAST", []) + classes.get("VM_SUPPORT_FAST", [])
        slow = classes.get("VM_CLASSES_SLOW", []) + classes.get("VM_SUPPORT_SLOW", [])
        if one_unit:
            # A small model: its headers (verilated.h above all) cost more to parse than its code
            # to compile, so the model and the user sources are one unit (hidden symbols: the user
            # sources mark what they export).
            sources = [f"{name}" for name in fast + slow] + [str(src.with_suffix("")) for src in user_sources]
            units = [(_unity(obj, f"{prefix}__all", sources), options.fast, f"{prefix}__all", options.model_flags,
                      True)]
        else:
            units = [(_unity(obj, f"{prefix}__fast{k}", group), options.fast, f"{prefix}__fast{k}",
                      options.model_flags, True) for k, group in enumerate(_balanced(fast, obj, jobs))]
            units += [(_unity(obj, f"{prefix}__slow", slow), options.slow, f"{prefix}__slow")]
            units += [(src, options.user, src.stem, ()) for src in user_sources]
        objects += [pool.submit(compile_unit, *unit) for unit in units]
        built = [f.result() for f in objects] + ([runtime] if isinstance(runtime, Path) else [])
    tmp = out.with_name(out.name + ".tmp")
    run_step(["g++", "-shared", "-o", str(tmp), *map(str, built), "-pthread"], cwd)
    tmp.rename(out)


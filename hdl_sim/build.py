"""Verilator builds of the shell RTL, cached by content hash.

Two kinds of build share one cache: cocotb builds (a VPI model per top level and parameter set,
driven by ``cocotb_tools.runner``) and the bulk harness (a shared library with a C ABI, see
``harness.py``). A build's key hashes every RTL source, the harness source, the parameters and
the Verilator flags, so an edit rebuilds and an unchanged tree reuses the build; a cocotb model's
key also names the cocotb and Verilator it was built with (its Makefile and binary point into
them), so venvs and checkouts sharing the cache do not trip over each other's builds. A file lock makes
concurrent pytest workers wait for one build instead of racing.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import logging
import os
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
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
    """Every RTL file; Verilator elaborates only what the top level instantiates."""
    files = sorted(RTL_DIR.glob("*.sv"))
    if not files:
        raise FileNotFoundError(f"no RTL sources under {RTL_DIR}")
    return files


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


def cocotb_toolchain() -> dict[str, str]:
    """Where cocotb and Verilator are installed, and cocotb's version. A cocotb model's Makefile
    and binary point into both (cocotb's verilator.cpp, an rpath to its VPI library), so a build
    made from another venv or checkout must not be reused."""
    import cocotb

    return {"cocotb": str(Path(cocotb.__file__).resolve().parent), "cocotb_version": cocotb.__version__,
            "verilator": str(verilator_root())}


def cocotb_build_dir(toplevel: str, parameters: Mapping[str, object]) -> Path:
    """The cached build folder for one cocotb top level and parameter set."""
    key = content_key("cocotb", [*rtl_sources(), *rtl_headers()],
                      {"top": toplevel, "params": dict(parameters), "toolchain": cocotb_toolchain()})
    return cache_root() / "cocotb" / f"{toplevel}-{key}"


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
    runner = get_runner("verilator")
    with build_lock(build_dir):
        runner.build(
            sources=rtl_sources(),
            includes=[RTL_DIR],
            hdl_toplevel=toplevel,
            parameters=params,
            build_dir=build_dir,
            build_args=["-O3", "--x-assign", "fast", "--x-initial", "fast", "-Wno-fatal"],
            timescale=("1ns", "1ps"),
        )
    repo_root = str(Path(__file__).resolve().parent.parent)
    if repo_root not in sys.path:
        sys.path.insert(0, repo_root)  # the runner hands sys.path to the simulator as PYTHONPATH
    results = runner.test(
        test_module=test_module,
        hdl_toplevel=toplevel,
        build_dir=build_dir,
        test_dir=build_dir / f"run-{os.getpid()}",
        extra_env=dict(extra_env or {}),
        testcase=testcase,
    )
    return get_results(results)

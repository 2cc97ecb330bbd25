"""Every RTL module passes `verilator --lint-only -Wall` on its own, and the shell with each
platform's parameters (waivers, where any, sit in the RTL next to a reason)."""

from __future__ import annotations

import subprocess

import pytest
from fpgashare.hdl_sim.build import RTL_DIR, format_parameter, rtl_sources
from fpgashare.hdl_sim.toolchain import setup_environment, verilator_binary
from fpgashare.platform import load_platform

MODULES = [p.stem for p in rtl_sources()]


def lint(top: str, parameters: dict[str, int] | None = None) -> str:
    setup_environment()
    gparams = [f"-G{k}={format_parameter(v)}" for k, v in (parameters or {}).items()]
    result = subprocess.run(
        [str(verilator_binary()), "--lint-only", "-Wall", f"-I{RTL_DIR}", "--top-module", top, *gparams,
         *map(str, rtl_sources())],
        capture_output=True, text=True)
    return result.stdout + result.stderr if result.returncode else ""


def test_every_file_is_one_module_named_after_it():
    for path in rtl_sources():
        text = path.read_text()
        assert text.count("\nmodule ") == 1, path.name
        assert f"\nmodule {path.stem} " in text or f"\nmodule {path.stem}(" in text, path.name


@pytest.mark.parametrize("top", MODULES)
def test_module_lints_clean(top):
    assert lint(top) == ""


@pytest.mark.parametrize("name", ["pynq-z2", "zcu104"])
def test_shell_lints_clean_with_platform_parameters(name):
    assert lint("shell", load_platform(name).rtl_parameters()) == ""

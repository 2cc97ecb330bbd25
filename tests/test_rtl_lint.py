"""Every RTL module passes `verilator --lint-only -Wall --assert` (the assertion checkers bound) on its
own, and the shell with each platform's parameters (waivers, where any, sit in the RTL next to a reason)."""

from __future__ import annotations

import subprocess

import pytest
from fpgashare.catalogue.platform import load_platform
from fpgashare.hdl_sim.build import ASSERT_FLAGS, RTL_DIR, format_parameter, rtl_module_files, sim_sources
from fpgashare.hdl_sim.toolchain import setup_environment, verilator_binary

MODULES = [p.stem for p in rtl_module_files()]


def lint(top: str, parameters: dict[str, int] | None = None) -> str:
    setup_environment()
    gparams = [f"-G{k}={format_parameter(v)}" for k, v in (parameters or {}).items()]
    result = subprocess.run(
        [str(verilator_binary()), "--lint-only", "-Wall", *ASSERT_FLAGS, f"-I{RTL_DIR}", "--top-module", top,
         *gparams, *map(str, sim_sources())],
        capture_output=True, text=True)
    return result.stdout + result.stderr if result.returncode else ""


def test_every_file_is_one_module_named_after_it():
    for path in rtl_module_files():
        text = path.read_text()
        assert text.count("\nmodule ") == 1, path.name
        assert f"\nmodule {path.stem} " in text or f"\nmodule {path.stem}(" in text, path.name


@pytest.mark.parametrize("top", MODULES)
def test_module_lints_clean(top):
    assert lint(top) == ""


@pytest.mark.parametrize("name", ["pynq-z2", "zcu104"])
def test_shell_lints_clean_with_platform_parameters(name):
    assert lint("shell", load_platform(name).rtl_parameters()) == ""


#: The modules with a pixels-per-beat parameter, linted at NPPC 4 too.
NPPC_MODULES = ["window_nxn", "conv3x3", "sobel_mag", "threshold", "rank3x3", "downscale2x", "moments", "fast9",
                "pixel_stage", "template_match"]


#: Multi-channel modules: at NPPC 4 a pixel takes a 32-bit lane of a 128-bit beat.
LANE_MODULES = ["rgb2gray", "rgb2hsv", "in_range", "absdiff", "bg_update"]


@pytest.mark.parametrize("top", NPPC_MODULES + LANE_MODULES)
def test_module_lints_clean_at_four_pixels_per_beat(top):
    width = 128 if top in LANE_MODULES else 32
    assert lint(top, {"NPPC": 4} if top == "window_nxn" else {"NPPC": 4, "DATA_W": width}) == ""


def test_shell_lints_clean_at_four_pixels_per_clock(tmp_path):
    from fpgashare.catalogue.platform import manifest_at_pixels_per_clock

    platform = load_platform(manifest_at_pixels_per_clock("zcu104", 4, tmp_path / "x4.toml"))
    assert lint("shell", platform.rtl_parameters()) == ""
    assert lint("shell", load_platform("zcu104-x4").rtl_parameters()) == ""   # the shipped one


@pytest.mark.parametrize("name", ["pynq-z2", "zcu104"])
def test_shell_lints_clean_without_its_modules(name):
    """The shell as the harness builds it: every slot's modules outside, at its boundary."""
    assert lint("shell", {**load_platform(name).rtl_parameters(), "RM_EXTERNAL": 1}) == ""

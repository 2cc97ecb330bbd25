"""Manifest figures written from synthesis (`fpgashare rtl synth --update-manifest`): LUT and FF
x1.25 rounded up to tens, hard blocks as synthesized, always within the 1x..1.5x the tests demand;
only the module's resources line and its "estimate" note change."""

from __future__ import annotations

from fpgashare.catalogue.platform import load_platform
from fpgashare.cli.synth import RESOURCES, headroom_problems, manifest_figures, update_manifest
from hypothesis import given
from hypothesis import strategies as st


@given(st.fixed_dictionaries({r: st.integers(0, 50_000) for r in RESOURCES}))
def test_written_figures_are_always_within_the_headroom(synthesized):
    assert headroom_problems(manifest_figures(synthesized), synthesized) == []


def test_update_touches_only_the_module_and_drops_its_estimate_note(tmp_path):
    note = "# resources: estimate, not synthesized\n"
    real = load_platform("pynq-z2").path.read_text()
    # The shipped manifests are all synthesized now: mark two modules as estimates, as they were when first added.
    text = real
    for name in ("erode3x3", "fast9"):
        block = text.index(f'[[module]]\nname = "{name}"')
        text = text[:block] + note + text[block:]
    fig = {"lut": 1050, "ff": 410, "bram36": 1, "uram": 0, "dsp": 0}
    new = update_manifest(text, {"erode3x3": fig})
    assert note + '[[module]]\nname = "erode3x3"' not in new
    assert note + '[[module]]\nname = "fast9"' in new, "another module's note stays"
    assert new.count(note) == text.count(note) - 1
    path = tmp_path / "pynq-z2.toml"
    path.write_text(new)
    platform = load_platform(path)
    assert {r: platform.module("erode3x3").resources.get(r, 0) for r in RESOURCES} == fig
    before = load_platform("pynq-z2")
    assert all(platform.module(m).resources == before.module(m).resources for m in before.modules if m != "erode3x3")
    assert len(new.splitlines()) == len(text.splitlines()) - 1         # the note, nothing else


def test_the_shipped_manifests_carry_no_estimates():
    for name in ("pynq-z2", "zcu104", "zcu104-x4"):
        text = load_platform(name).path.read_text()
        assert "estimate, not synthesized" not in text, name

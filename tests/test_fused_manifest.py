"""Fused regions in a platform manifest: zcu104-x4 offers fast9 and template_match only through its
fused region, each within the region's resources and beyond one slot's; bad declarations fail naming
the file, the entry and the problem; a partition of the slots keeps only regions wholly inside it."""

from __future__ import annotations

from pathlib import Path

import pytest
from fpgashare.backends.slot_view import sub_platform
from fpgashare.catalogue.platform import load_platform
from fpgashare.catalogue.resources import data_dir
from fpgashare.errors import ManifestError

FUSED = '''[[fused]]
name = "shell/rp_1+2+3"
slots = ["shell/rp_1", "shell/rp_2", "shell/rp_3"]
resources = { lut = 42000, ff = 84000, bram36 = 72, uram = 72, dsp = 288 }
'''


def _edit(tmp_path: Path, old: str, new: str) -> Path:
    text = (data_dir("platform") / "zcu104-x4.toml").read_text()
    assert old in text
    path = tmp_path / "bad.toml"
    path.write_text(text.replace(old, new, 1))
    return path


def test_big_modules_fit_the_region_and_no_slot():
    x4 = load_platform("zcu104-x4")
    (region,) = x4.fused
    for name in ("fast9", "template_match"):
        spec = x4.module(name)
        assert spec.regions == (region.name,) and spec.slots == (x4.slots[region.host].name,)
        assert all(spec.resources.get(r, 0) <= region.resources.get(r, 0) for r in spec.resources)
        assert any(spec.resources.get(r, 0) > x4.slots[0].resources.get(r, 0) for r in spec.resources)
        assert x4.footprint(region.host, name) == region.slots
    assert x4.footprint(region.host, "threshold") == (region.host,)
    last = x4.slots[region.slots[-1]]
    assert (region.far_base, region.frames) == (x4.slots[region.host].far_base,
                                                last.far_base + last.frames - x4.slots[region.host].far_base)


@pytest.mark.parametrize(("old", "new", "expected"), [
    ('slots = ["shell/rp_1", "shell/rp_2", "shell/rp_3"]', 'slots = ["shell/rp_1", "shell/rp_9"]',
     "fused[0].slots names unknown slot 'shell/rp_9'"),
    ('slots = ["shell/rp_1", "shell/rp_2", "shell/rp_3"]', 'slots = ["shell/rp_1", "shell/rp_3"]',
     "slots shell/rp_1 and shell/rp_3 are not adjacent"),
    ('slots = ["shell/rp_1", "shell/rp_2", "shell/rp_3"]', 'slots = ["shell/rp_2", "shell/rp_1"]',
     "are not adjacent"),
    ('slots = ["shell/rp_1", "shell/rp_2", "shell/rp_3"]', 'slots = ["shell/rp_1"]',
     "fused[0].slots must name at least 2 slots"),
    (FUSED, FUSED + FUSED.replace('"shell/rp_1+2+3"', '"shell/rp_0+1"').replace(
        '"shell/rp_1", "shell/rp_2", "shell/rp_3"', '"shell/rp_0", "shell/rp_1"'),
     "fused[1] (shell/rp_0+1) overlaps region shell/rp_1+2+3: slot shell/rp_1 is in both"),
    ("dsp = 288 }", "dsp = 289 }", "fused[0].resources.dsp is 289, more than its slots' sum 288"),
    ('name = "shell/rp_1+2+3"', 'name = "shell/rp_0"', "'shell/rp_0' is already the name of a slot"),
    ('slots = ["shell/rp_1+2+3"]\nresources = { lut = 16150', 'slots = ["shell/rp_1+2+3", "shell/rp_1"]\n'
     'resources = { lut = 16150', "lists both slot shell/rp_1 and region shell/rp_1+2+3"),
    ("lut = 16150", "lut = 50000", "needs 50000 lut but fused region shell/rp_1+2+3 has 42000"),
    ('slots = ["shell/rp_1+2+3"]\nresources = { lut = 12160', 'slots = ["shell/rp_0"]\nresources = { lut = 12160',
     "(template_match) needs 196 dsp but slot shell/rp_0 has 96"),
    ('slots = ["shell/rp_1+2+3"]\nresources = { lut = 16150', 'slots = ["shell/rp_1+2"]\nresources = { lut = 16150',
     "names unknown slot 'shell/rp_1+2'"),
    ("dsp = 288 }", "dsp = 288 }\ncolour = 3", "unknown key fused[0].colour"),
])
def test_bad_fused_declarations_name_file_and_problem(tmp_path, old, new, expected):
    path = _edit(tmp_path, old, new)
    with pytest.raises(ManifestError) as info:
        load_platform(path)
    assert str(path) in str(info.value)
    assert expected in str(info.value)


def test_frames_between_the_members_must_be_theirs(tmp_path):
    # rp_0 moved into the gap between rp_1 and rp_2: a region of those two would write its frames too.
    path = _edit(tmp_path, "far_base = 10000\nframes = 2800", "far_base = 15850\nframes = 100")
    path.write_text(path.read_text().replace('"shell/rp_1", "shell/rp_2", "shell/rp_3"]', '"shell/rp_1", "shell/rp_2"]')
                    .replace("dsp = 288 }", "dsp = 192 }"))
    with pytest.raises(ManifestError, match="slot shell/rp_0 lies inside the region's frames"):
        load_platform(path)


def test_a_partition_keeps_only_regions_wholly_inside():
    x4 = load_platform("zcu104-x4")
    inside = sub_platform(x4, (0, 1, 2, 3))
    assert inside.fused[0].slots == (1, 2, 3) and inside.slots_for("fast9")[0].index == 1
    shifted = sub_platform(x4, (1, 2, 3))
    assert shifted.fused[0].slots == (0, 1, 2) and shifted.footprint(0, "template_match") == (0, 1, 2)
    cut = sub_platform(x4, (0, 1, 2))
    assert cut.fused == () and cut.slots_for("fast9") == [] and cut.slots_for("threshold")
    assert cut.module("fast9").regions == ()

"""Platform manifests: both shipped ones load; bad ones fail naming file, key and problem."""

from __future__ import annotations

from pathlib import Path

import pytest
from fpgashare.errors import ManifestError
from fpgashare.platform import load_platform
from fpgashare.resources import data_dir


def test_shipped_platforms_load(pynq_z2, zcu104):
    assert (pynq_z2.part, len(pynq_z2.slots), pynq_z2.frame_words) == ("xc7z020clg400-1", 2, 101)
    assert (zcu104.family, len(zcu104.slots), zcu104.frame_words) == ("zynqmp", 4, 93)
    assert pynq_z2.config_port.bytes_per_s == 400e6
    assert all(pynq_z2.slots_for(m) for m in pynq_z2.modules)


def _edit(tmp_path: Path, old: str, new: str) -> Path:
    text = (data_dir("platform") / "pynq-z2.toml").read_text()
    assert old in text
    path = tmp_path / "bad.toml"
    path.write_text(text.replace(old, new, 1))
    return path


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ("frame_words = 101", "frame_words = 101\ncolour = 3", "unknown key platform.colour"),
        ("frame_words = 101", "frame_words = -1", "platform.frame_words must be > 0"),
        ("clock_hz = 100_000_000\nsource", 'clock_hz = "fast"\nsource', "config_port.clock_hz must be"),
        ('kind = "pcap"', 'kind = "jtag"', "config_port.kind"),
        ("ddr_bytes_per_s = 1_050_000_000", "ddr_bytes_per_s = 0", "memory.ddr_bytes_per_s must be > 0"),
        ("[memory]", "[memory_]", "memory"),
        ("far_base = 4000", "far_base = 2100", "overlap"),
        ('name = "rgb2gray"', 'name = "fft"', "module[4].name 'fft' is not a known module"),
        ('slots = ["composable/pr_0", "composable/pr_1"]', 'slots = ["composable/pr_9"]',
         "unknown slot 'composable/pr_9'"),
        ("lut = 1160", "lut = 24000", "needs 24000 lut but slot"),
        ('"FLAGS"]', '"FLAG"]', "registers does not match the RTL"),
        ("idcode = 0x03727093", "", "missing key platform.idcode"),
    ],
)
def test_bad_manifest_names_file_and_key(tmp_path, old, new, expected):
    path = _edit(tmp_path, old, new)
    with pytest.raises(ManifestError) as info:
        load_platform(path)
    assert str(path) in str(info.value)
    assert expected in str(info.value)


def test_missing_and_malformed_files(tmp_path):
    with pytest.raises(ManifestError, match="not found"):
        load_platform(tmp_path / "nothing.toml")
    broken = tmp_path / "broken.toml"
    broken.write_text("[platform\n")
    with pytest.raises(ManifestError, match="not valid TOML"):
        load_platform(broken)


def test_pixels_per_clock_defaults_to_one_and_is_checked(tmp_path, pynq_z2):
    from fpgashare.platform import manifest_at_pixels_per_clock

    assert pynq_z2.pixels_per_clock == 1 and pynq_z2.rtl_parameters()["NPPC"] == 1
    with pytest.raises(ManifestError, match=r"bad.toml: platform.pixels_per_clock must be 1 or 4, not 3"):
        load_platform(_edit(tmp_path, "pixels_per_clock = 1", "pixels_per_clock = 3"))
    # Four gray pixels fill a 32-bit beat: a 3-channel module cannot be carried at 4.
    with pytest.raises(ManifestError, match=r"pixels_per_clock = 4 .*rgb2gray"):
        load_platform(_edit(tmp_path, "pixels_per_clock = 1", "pixels_per_clock = 4"))
    x4 = load_platform(manifest_at_pixels_per_clock("zcu104", 4, tmp_path / "x4.toml"))
    assert (x4.name, x4.pixels_per_clock, x4.rtl_parameters()["NPPC"]) == ("zcu104-x4", 4, 4)
    assert "conv3x3" in x4.modules and "fast9" in x4.modules and "rgb2gray" not in x4.modules

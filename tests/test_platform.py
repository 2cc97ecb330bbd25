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

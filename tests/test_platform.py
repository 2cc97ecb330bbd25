"""Platform manifests: both shipped ones load; bad ones fail naming file, key and problem."""

from __future__ import annotations

from pathlib import Path

import pytest
from fpgashare.catalogue.platform import load_platform
from fpgashare.catalogue.resources import data_dir
from fpgashare.errors import ManifestError


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


def test_pixels_per_clock_defaults_to_one_and_is_checked(tmp_path, pynq_z2):
    from fpgashare.catalogue.platform import manifest_at_pixels_per_clock

    assert pynq_z2.pixels_per_clock == 1 and pynq_z2.rtl_parameters()["NPPC"] == 1
    with pytest.raises(ManifestError, match=r"bad.toml: platform.pixels_per_clock must be 1 or 4, not 3"):
        load_platform(_edit(tmp_path, "pixels_per_clock = 1", "pixels_per_clock = 3"))
    # At 4 the stream is 128 bits: a multi-channel pixel takes a 32-bit lane, four gray pixels the low one.
    wide = load_platform(_edit(tmp_path, "pixels_per_clock = 1", "pixels_per_clock = 4"))
    assert wide.rtl_parameters()["DATA_W"] == 128
    assert pynq_z2.rtl_parameters()["DATA_W"] == 32
    x4 = load_platform(manifest_at_pixels_per_clock("zcu104", 4, tmp_path / "x4.toml"))
    assert (x4.name, x4.pixels_per_clock, x4.rtl_parameters()["NPPC"]) == ("zcu104-x4", 4, 4)
    assert {"conv3x3", "fast9", "rgb2gray", "rgb2hsv", "absdiff"} <= set(x4.modules)
    assert (x4.stream_words, x4.rtl_parameters()["DATA_W"]) == (4, 128)
    # Every module gray: four pixels fit a 32-bit word, so the shell stays 32 bits wide.
    gray = load_platform(manifest_at_pixels_per_clock("zcu104", 4, tmp_path / "g.toml", ["conv3x3", "dnn_tile"]))
    assert (gray.stream_words, gray.rtl_parameters()["DATA_W"]) == (1, 32)


def test_stream_figures_of_the_shipped_platforms(pynq_z2, zcu104):
    # One stream per slot on the ZCU104; two on the PYNQ-Z2; the RTL shell gets the same count.
    assert (pynq_z2.streams, zcu104.streams) == (2, 4)
    assert pynq_z2.rtl_parameters()["NUM_STREAMS"] == 2 and zcu104.rtl_parameters()["NUM_STREAMS"] == 4
    assert pynq_z2.ddr_bytes_per_s == 2.1e9 and zcu104.ddr_bytes_per_s == 19.2e9


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ("streams = 2 ", "", "missing key platform.streams"),
        ("streams = 2 ", 'streams = "two" ', "platform.streams must be int, not 'two'"),
        ("streams = 2 ", "streams = 2.0 ", "platform.streams must be int, not 2.0"),
        ("streams = 2 ", "streams = 0 ", "platform.streams must be 1..2 (at most one stream per slot; "
                                         "the manifest has 2 slots), not 0"),
        ("streams = 2 ", "streams = 3 ", "platform.streams must be 1..2 (at most one stream per slot; "
                                         "the manifest has 2 slots), not 3"),
        ("ddr_bytes_per_s = 2_100_000_000", "", "missing key platform.ddr_bytes_per_s"),
        ("ddr_bytes_per_s = 2_100_000_000", "ddr_bytes_per_s = 0", "platform.ddr_bytes_per_s must be > 0"),
        ('streams = "one stream per slot', 'stream_note = "one stream per slot',
         "missing key platform.sources.streams: platform.streams needs its source"),
        ('ddr_bytes_per_s = "peak, not sustained', 'ddr_bytes_per_s = " "\nddr_note = "peak, not sustained',
         "missing key platform.sources.ddr_bytes_per_s"),
    ],
)
def test_bad_stream_figures_name_file_key_and_problem(tmp_path, old, new, expected):
    path = _edit(tmp_path, old, new)
    with pytest.raises(ManifestError) as info:
        load_platform(path)
    assert str(path) in str(info.value)
    assert expected in str(info.value)


def test_stream_count_does_not_change_scheduling_yet():
    """The engine still runs every frame on one stream: the same workload on the ZCU104 with 4
    streams and with 1 gives the same summary, frame for frame."""
    from dataclasses import replace

    from fpgashare.backends.model import ModelBackend
    from fpgashare.catalogue.workload import load_workload
    from fpgashare.sched.policies.edf import EdfPolicy
    from fpgashare.sched.sources.periodic import run_workload

    base = load_workload(data_dir("suite") / "camera_mix_zcu104.toml")
    # Its real-time pipelines only: with DNN work edf lends the registration window to the DNN
    # (cold_lend.py), and that window's length counts each load's register traffic, which grows
    # with the streams the shell polls, so what the lend fits in it may differ.
    base = replace(base, duration_s=min(base.duration_s, 2.0),
                   pipelines=tuple(p for p in base.pipelines if p.realtime))
    assert base.platform.streams == 4 and base.pipelines
    runs = []
    for streams in (4, 1):
        workload = replace(base, platform=replace(base.platform, streams=streams))
        engine, summary = run_workload(workload, ModelBackend(workload.platform), EdfPolicy())
        # Times from the first release: the registration window before it counts each load's
        # register traffic, which grows with the streams the shell polls.
        t0 = engine.t0
        runs.append((summary["pipelines"], [(f.key, f.outcome, round(f.start - t0, 9), round(f.end - t0, 9), f.slots)
                                            for f in engine.frames]))
    assert runs[0] == runs[1]
    assert runs[0][1], "the workload ran no frame"

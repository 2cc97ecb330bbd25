"""Bitstreams: CRC vectors, deterministic builds, header round trip, corruption always rejected."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest
from fpgashare.bitstream.bitfile import BitHeader, parse_bit, write_bit
from fpgashare.bitstream.crc import icap_crc, icap_crc_words
from fpgashare.bitstream.packets import PortError, SlotRegion, check_words, frame_data, partial_words
from fpgashare.bitstream.registry import build_all, build_bitfile, file_name, inspect_bytes
from fpgashare.errors import BitstreamError
from fpgashare.hwtables.tables import MODULE_ID_BITS, MODULE_IDS
from hypothesis import given, settings
from hypothesis import strategies as st


def test_crc_matches_prjxray_vectors():
    # prjxray lib/xilinx/xc7series crc_test.cc
    assert icap_crc(0, 0, 0) == 0
    assert icap_crc(1 << 4, 0, 0) == 0x82F63B78
    assert icap_crc(0x1F, 0xFFFFFFFF, 0) == 0xBF86D4DF
    assert icap_crc(0, 0, 0xFFFFFFFF) == 0xC631E365
    words = [random.Random(3).getrandbits(32) for _ in range(64)]
    crc = 0
    for w in words:
        crc = icap_crc(2, w, crc)
    assert icap_crc_words(2, words) == crc


def test_header_round_trip_and_errors():
    header = BitHeader("top;UserID=0XFFFFFFFF", "7z020clg400", "2026/12/01", "00:00:00")
    data = write_bit(header, b"\x00\x01\x02\x03")
    assert parse_bit(data) == (header, b"\x00\x01\x02\x03")
    with pytest.raises(BitstreamError, match="magic"):
        parse_bit(b"\x01" + data[1:])
    with pytest.raises(BitstreamError, match="field 'e' says"):
        parse_bit(data[:-1])


def test_builds_are_byte_identical_and_indexed(tmp_path, pynq_z2):
    first = build_all(pynq_z2, tmp_path / "a")
    second = build_all(pynq_z2, tmp_path / "b")
    assert len(first) == len(pynq_z2.slots) * len(pynq_z2.modules)
    for a, b in zip(first, second, strict=True):
        assert a.path.read_bytes() == b.path.read_bytes()
        assert a.sha256 == b.sha256
    index = (tmp_path / "a" / "index.json").read_text()
    assert first[0].sha256 in index


def test_size_follows_the_region(pynq_z2, zcu104):
    for platform in (pynq_z2, zcu104):
        slot = platform.slots[0]
        data = build_bitfile(platform, slot, "conv3x3")
        frame_bytes = slot.frames * platform.frame_words * 4
        assert frame_bytes < len(data) < frame_bytes + 512
    # a PYNQ-Z2 partial is about 668 kB (discuss.pynq.io t/3080)
    assert 640_000 < len(build_bitfile(pynq_z2, pynq_z2.slots[0], "conv3x3")) < 700_000


def corruption_offsets(config_len: int, fdri_at: int, rng: random.Random) -> list[int]:
    """Byte offsets into the configuration data worth corrupting: every byte from the sync word to
    the first frame words, a sample of frame bytes, and every byte of the tail through DESYNC.
    The dummy words before the sync word and the NOPs after DESYNC are ignored by any device."""
    head = list(range(12 * 4, (fdri_at + 4) * 4))
    frames = rng.sample(range((fdri_at + 4) * 4, config_len - 22 * 4 - 6 * 4), 40)
    tail = list(range(config_len - 22 * 4 - 6 * 4, config_len - 16 * 4))
    return head + frames + tail


def test_every_tried_single_byte_corruption_is_rejected(pynq_z2):
    slot = pynq_z2.slots[1]
    good = build_bitfile(pynq_z2, slot, "threshold")
    assert inspect_bytes(good, pynq_z2).verdict.ok
    header_len = len(good) - len(parse_bit(good)[1])
    config_len = len(good) - header_len
    rng = random.Random(5)
    offsets = corruption_offsets(config_len, 27, rng)
    seen = set()
    for off in offsets:
        bad = bytearray(good)
        bad[header_len + off] ^= rng.randrange(1, 256)
        verdict = inspect_bytes(bytes(bad), pynq_z2).verdict
        assert not verdict.ok, f"corruption at config byte {off} was accepted"
        seen.add(verdict.error)
    assert {PortError.CRC_MISMATCH, PortError.BAD_PACKET} <= seen


def test_wrong_platform_and_module_are_named(pynq_z2, zcu104):
    data = build_bitfile(pynq_z2, pynq_z2.slots[0], "conv3x3")
    with pytest.raises(BitstreamError, match="for part '7z020clg400'"):
        inspect_bytes(data, zcu104)
    words = np.frombuffer(parse_bit(data)[1], dtype=">u4")
    assert words[12] == 0xAA995566


def shipped_manifests() -> list[str]:
    import fpgashare.platforms

    return sorted(p.stem for p in Path(fpgashare.platforms.__file__).parent.glob("*.toml"))


@pytest.mark.parametrize("name", shipped_manifests())
def test_every_partial_of_every_shipped_manifest_passes_inspect_and_the_board_check(name, tmp_path, capsys):
    """``fpgashare bitstream build`` writes a partial for every (slot, module) of the manifest; each
    passes the board path's check (Registry.bitfile: the port model armed for its slot, the module
    it names). ``fpgashare bitstream inspect`` accepts one file of every module (each module id
    once, template_match's included) and every file of a relocatable build."""
    from fpgashare.bitstream.registry import Registry
    from fpgashare.catalogue.platform import load_platform
    from fpgashare.cli.main import main

    def inspect_ok(path: Path) -> None:
        assert main(["bitstream", "inspect", str(path), "--json"]) == 0, capsys.readouterr().err

    platform = load_platform(name)
    native, relocatable = tmp_path / "native", tmp_path / "relocatable"
    assert main(["bitstream", "build", name, "--out", str(native)]) == 0
    registry = Registry(native, platform)
    pairs = registry.pairs()
    assert len(pairs) == sum(len(spec.slots) for spec in platform.modules.values())
    first_of = {}
    for slot, module in pairs:
        loadable = registry.bitfile(slot, module)
        assert (loadable.inspection.module, loadable.inspection.verdict.module_id) == (module, MODULE_IDS[module])
        first_of.setdefault(module, native / file_name(slot, module))
    for path in first_of.values():
        inspect_ok(path)
    assert main(["bitstream", "build", name, "--out", str(relocatable), "--relocatable"]) == 0
    for path in sorted(relocatable.glob("*.bit")):
        inspect_ok(path)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, (1 << MODULE_ID_BITS) - 1), st.integers(0, (1 << 32) - 1), st.integers(0, 1 << 20))
def test_the_port_checker_takes_every_module_id_of_the_tables_width(module_id, mask, wide):
    """A frame naming any id of MODULE_ID_BITS bits loads where the slot's mask has it and is
    UNKNOWN_MODULE where not; an id with any bit above MODULE_ID_BITS is never taken."""
    frame_words = 8
    region = SlotRegion(far_base=40, frames=2, module_mask=mask)

    def verdict(named: int):
        frames = frame_data("prop", 0, 0, region.frames * frame_words)
        frames[1] = named
        return check_words(partial_words(0x03727093, region.far_base, frames), 0x03727093, frame_words, region)

    held = bool(mask >> module_id & 1)
    got = verdict(module_id)
    assert got.ok == held and got.error == (PortError.OK if held else PortError.UNKNOWN_MODULE)
    assert got.module_id == (module_id if held else None)
    beyond = verdict(module_id | (wide + 1) << MODULE_ID_BITS)
    assert beyond.error == PortError.UNKNOWN_MODULE

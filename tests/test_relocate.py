"""Relocation: one partial per module, moved at load time to any slot of its shape (FAR rebased,
CRC corrected by its GF(2) delta), accepted by the port exactly as a native one; corruption,
before or after relocation, is still refused; the registry shrinks from slots x modules files to
modules files."""

from __future__ import annotations

import hashlib
import json
import re

import numpy as np
import pytest
from fpgashare.bitstream.bitfile import parse_bit
from fpgashare.bitstream.packets import PortError, SlotRegion, check_words, frame_data, partial_words
from fpgashare.bitstream.registry import Registry, build_all, build_config, inspect_bytes
from fpgashare.bitstream.relocate import ANY_SLOT, _step, advance, relocate_words, shape_groups
from fpgashare.catalogue.modules import KINDS, resolve_stage
from fpgashare.catalogue.platform import load_platform
from fpgashare.catalogue.resources import resolve
from fpgashare.catalogue.vision_ref import stage_reference
from fpgashare.cli.main import main
from fpgashare.errors import BitstreamError
from hypothesis import given, settings
from hypothesis import strategies as st


def region(platform, slot):
    return SlotRegion(slot.far_base, slot.frames, platform.slot_module_mask(slot))


def config_of(data: bytes) -> np.ndarray:
    return np.frombuffer(parse_bit(data)[1], dtype=">u4").astype(np.uint32)


@pytest.mark.parametrize("name", ["pynq-z2", "zcu104"])
def test_registry_shrinks_to_one_file_per_module(tmp_path, name):
    platform = load_platform(name)
    native = build_all(platform, tmp_path / "native")
    relocatable = build_all(platform, tmp_path / "reloc", relocatable=True)
    pairs = sum(len(m.slots) for m in platform.modules.values())
    assert len(native) == pairs                                      # slots x modules
    assert len(relocatable) == len(platform.modules) < pairs        # one per module (slots share a shape)
    assert len(list((tmp_path / "reloc").glob("*.bit"))) == len(platform.modules)
    index = json.loads((tmp_path / "reloc" / "index.json").read_text())
    assert index["relocatable"] and {e["file"] for e in index["bitstreams"]} == {f"{m}.bit" for m in platform.modules}
    registry = Registry(tmp_path / "reloc", platform)
    assert len(registry.pairs()) == pairs


@pytest.mark.parametrize("name", ["pynq-z2", "zcu104"])
def test_relocated_stream_equals_a_native_build_for_the_target(tmp_path, name):
    """The CRC delta gives exactly the stream one would build for the target directly: same frame
    data, FAR = target base, CRC over the new FAR. Only the FAR and CRC words change."""
    platform = load_platform(name)
    build_all(platform, tmp_path, relocatable=True)
    registry = Registry(tmp_path, platform)
    for module in ("conv3x3", "threshold"):
        base = config_of((tmp_path / f"{module}.bit").read_bytes())
        frames = frame_data(f"{platform.name}/{platform.slots[0].name}/{module}/relocatable",
                            KINDS[module].module_id, ANY_SLOT, platform.slots[0].frames * platform.frame_words)
        for slot in platform.slots_for(module):
            checked = registry.bitfile(slot, module)
            data, found = checked.data, checked.inspection
            moved = config_of(data)
            assert np.array_equal(moved, partial_words(platform.idcode, slot.far_base, frames))
            assert found.verdict.ok and found.slot == slot and found.module == module
            assert found.verdict.far == slot.far_base
            changed = np.flatnonzero(moved != base)
            assert len(changed) == (0 if slot.index == 0 else 2)        # the FAR word and the CRC word
            assert registry.streams[slot.index, module] == hashlib.sha256(moved.astype(">u4").tobytes()).hexdigest()
            assert f"RP={slot.name}" in parse_bit(data)[0].design


def test_a_flipped_bit_after_relocation_is_refused(tmp_path, pynq_z2):
    build_all(pynq_z2, tmp_path, relocatable=True)
    data = Registry(tmp_path, pynq_z2).bitfile(pynq_z2.slots[1], "sobel_mag").data
    words = config_of(data)
    rng = np.random.default_rng(7)
    for at in [21, 22, *rng.integers(27, len(words) - 22, 20), len(words) - 21]:   # FAR, FDRI data, CRC
        bad = words.copy()
        bad[at] ^= np.uint32(1 << int(rng.integers(32)))
        verdict = check_words(bad, pynq_z2.idcode, pynq_z2.frame_words, region(pynq_z2, pynq_z2.slots[1]))
        assert not verdict.ok, f"word {at}"
    bad = words.copy()
    bad[5000] ^= np.uint32(1 << 9)
    assert check_words(bad, pynq_z2.idcode, pynq_z2.frame_words,
                       region(pynq_z2, pynq_z2.slots[1])).error == PortError.CRC_MISMATCH


def test_corruption_before_relocation_survives_it(pynq_z2):
    """Relocation corrects the CRC by the FAR's difference only, so it never blesses a stream that
    was already corrupt (recomputing the CRC would)."""
    words = build_config(pynq_z2, pynq_z2.slots[0], "threshold", relocatable=True)
    words[4321] ^= np.uint32(1 << 3)
    moved = relocate_words(words, pynq_z2, pynq_z2.slots[1])
    verdict = check_words(moved, pynq_z2.idcode, pynq_z2.frame_words, region(pynq_z2, pynq_z2.slots[1]))
    assert verdict.error == PortError.CRC_MISMATCH


def test_registry_refuses_a_tampered_file(tmp_path, pynq_z2):
    entries = build_all(pynq_z2, tmp_path, relocatable=True)
    data = bytearray(entries[0].path.read_bytes())
    data[-400] ^= 0x10
    entries[0].path.write_bytes(bytes(data))
    registry = Registry(tmp_path, pynq_z2)
    with pytest.raises(BitstreamError, match="SHA-256 differs"):
        registry.bitfile(pynq_z2.slots[1], entries[0].module)


def test_only_same_shape_and_relocatable_builds_move(tmp_path, zcu104):
    # A copy of the ZCU104 manifest whose last slot is larger: two shapes for every module.
    text = resolve("platform", "zcu104").read_text()
    text = re.sub(r'(name = "shell/rp_3"\nfar_base = 19000\n)frames = 2800', r"\1frames = 3000", text)
    manifest = tmp_path / "mixed.toml"
    manifest.write_text(text)
    mixed = load_platform(manifest)
    assert [[s.index for s in g] for g in shape_groups(mixed, "conv3x3")] == [[0, 1, 2], [3]]
    entries = build_all(mixed, tmp_path / "bits", relocatable=True)
    assert len(entries) == 2 * len(mixed.modules)
    assert {e.path.name for e in entries if e.module == "conv3x3"} == {"conv3x3__shell_rp_0.bit",
                                                                      "conv3x3__shell_rp_3.bit"}
    words = build_config(mixed, mixed.slots[0], "conv3x3", relocatable=True)
    with pytest.raises(BitstreamError, match="differ in shape"):
        relocate_words(words, mixed, mixed.slots[3])
    native = build_config(zcu104, zcu104.slots[0], "conv3x3")
    with pytest.raises(BitstreamError, match="built for slot 0 only"):
        relocate_words(native, zcu104, zcu104.slots[2])
    registry = Registry(tmp_path / "bits", mixed)
    for slot in mixed.slots:
        assert registry.bitfile(slot, "threshold").inspection.verdict.ok


def test_native_folders_still_load(tmp_path, pynq_z2):
    build_all(pynq_z2, tmp_path)
    registry = Registry(tmp_path, pynq_z2)
    assert not registry.relocatable
    assert registry.files == len(registry.pairs()) == sum(len(m.slots) for m in pynq_z2.modules.values())
    checked = registry.bitfile(pynq_z2.slots[1], "conv3x3")
    assert checked.inspection.verdict.ok
    assert checked.data == (tmp_path / "composable_pr_1__conv3x3.bit").read_bytes()


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(0, 600))
def test_crc_delta_advances_like_zero_writes(delta, writes):
    stepped = delta
    for _ in range(writes):
        stepped = _step(stepped)
    assert advance(delta, writes) == stepped


def test_cli_builds_one_file_per_module(tmp_path, capsys):
    assert main(["bitstream", "build", "zcu104", "--relocatable", "--out", str(tmp_path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    zcu104 = load_platform("zcu104")
    assert len(out["files"]) == len(zcu104.modules)
    assert out["pairs"] == sum(len(m.slots) for m in zcu104.modules.values())
    assert inspect_bytes((tmp_path / "dnn_tile.bit").read_bytes(), load_platform("zcu104")).verdict.ok


# -- through the configuration port in RTL

@pytest.mark.rtl
def test_relocated_partials_load_in_every_slot_and_compute_bit_exact(tmp_path, board, pynq_z2):
    build_all(pynq_z2, tmp_path, relocatable=True)
    registry = Registry(tmp_path, pynq_z2)
    frame = np.random.default_rng(3).integers(0, 256, (48, 64), dtype=np.uint8)
    for name in ("gauss3x3", "sobel_mag", "threshold", "downscale2x"):
        stage = resolve_stage(name)
        for slot in pynq_z2.slots_for(stage.kind.name):
            checked = registry.bitfile(slot, stage.kind.name)
            result = board.load(slot.index, config_of(checked.data))
            assert result.ok, f"{name} into {slot.name}: {result.error.name}"
            assert result.module_id == KINDS[stage.kind.name].module_id
            assert result.words == checked.words        # as a native load
            board.route([slot.index])
            board.program(slot.index, stage, *frame.shape)
            out, _ = board.stream(frame, stage.kind.output_shape(*frame.shape))
            assert np.array_equal(out, stage_reference(stage, frame)), f"{name} in {slot.name}"


@pytest.mark.rtl
def test_rtl_port_refuses_a_relocated_stream_with_one_flipped_bit(tmp_path, board, pynq_z2):
    build_all(pynq_z2, tmp_path, relocatable=True)
    words = config_of(Registry(tmp_path, pynq_z2).bitfile(pynq_z2.slots[1], "threshold").data)
    for at, want in ((9000, PortError.CRC_MISMATCH), (21, PortError.FAR_OUTSIDE_SLOT)):
        bad = words.copy()
        bad[at] ^= np.uint32(1 << 30)
        result = board.load(1, bad)
        assert result.error == want
        assert board.slot_status(1).module_id == 0
    # Unrelocated, the file is for slot 0's region: the port armed for slot 1 refuses it.
    assert board.load(1, config_of((tmp_path / "threshold.bit").read_bytes())).error == PortError.FAR_OUTSIDE_SLOT
    assert board.load(1, words).ok


@pytest.mark.rtl
def test_relocated_dnn_tile_loads_in_every_zcu104_slot(tmp_path, zcu104, _boards):
    from fpgashare.hdl_sim.board import SimBoard

    if "zcu104" not in _boards:
        _boards["zcu104"] = SimBoard(zcu104)
    board = _boards["zcu104"]
    board.rtl.reset()
    build_all(zcu104, tmp_path, relocatable=True)
    registry = Registry(tmp_path, zcu104)
    for slot in zcu104.slots_for("dnn_tile"):
        result = board.load(slot.index, config_of(registry.bitfile(slot, "dnn_tile").data))
        assert result.ok and result.module_id == KINDS["dnn_tile"].module_id, slot.name
        assert board.module_read(slot.index, 0)[0] == 0          # its ID register answers OKAY


def test_registry_checks_part_and_slot_of_relocatable_files(tmp_path, pynq_z2, zcu104):
    from fpgashare.bitstream.bitfile import BitHeader, write_bit

    entries = build_all(pynq_z2, tmp_path, relocatable=True)
    entry = next(e for e in entries if e.module == "threshold")
    header, config = parse_bit(entry.path.read_bytes())
    foreign = write_bit(BitHeader(header.design, "zu7evffvc1156", header.date, header.time), config)
    entry.path.write_bytes(foreign)
    index_path = tmp_path / "index.json"
    index = json.loads(index_path.read_text())
    for item in index["bitstreams"]:
        if item["module"] == "threshold":
            item["sha256"] = hashlib.sha256(foreign).hexdigest()
    index_path.write_text(json.dumps(index))
    with pytest.raises(BitstreamError, match="for part"):
        Registry(tmp_path, pynq_z2).bitfile(pynq_z2.slots[1], "threshold")
    with pytest.raises(BitstreamError, match="built for part"):
        Registry(tmp_path, zcu104)
    with pytest.raises(BitstreamError, match="no bitstream of conv3x3 for slot shell/rp_0"):
        Registry(tmp_path, pynq_z2).bitfile(zcu104.slots[0], "conv3x3")

"""The shell in RTL through the bulk harness: configuration port verdicts and timing, isolation of
other slots during loads, the decoupler, and full-HD frames through every vision module."""

from __future__ import annotations

import random

import numpy as np
import pytest
from fpgashare.bitstream.packets import DUMMY, PortError, SlotRegion, check_words
from fpgashare.bitstream.registry import build_config
from fpgashare.catalogue.modules import resolve_stage
from fpgashare.catalogue.vision_ref import stage_reference
from fpgashare.hdl_sim.board import ACTIVATION_CYCLES

pytestmark = pytest.mark.rtl

SYNC_AT, IDCODE_AT, FAR_AT, FDRI_AT = 12, 19, 21, 27


def region(platform, slot):
    return SlotRegion(slot.far_base, slot.frames, platform.slot_module_mask(slot))


def test_good_load_activates_in_words_plus_constant(board, pynq_z2):
    slot = pynq_z2.slots[0]
    words = build_config(pynq_z2, slot, "conv3x3")
    verdict = check_words(words, pynq_z2.idcode, pynq_z2.frame_words, region(pynq_z2, slot))
    result = board.load(0, words)
    assert result.ok and result.module_id == 1
    assert result.words == verdict.words_to_desync
    assert result.cycles == verdict.words_to_desync + ACTIVATION_CYCLES
    status = board.slot_status(0)
    assert (status.state, status.decoupled) == ("ready", False)
    assert board.module_read(0, 0) == (0, 0x00010001)  # the conv3x3 ID register answers


def _variants(words: np.ndarray, other_far: int) -> dict[str, tuple[np.ndarray, PortError]]:
    def edit(index, value):
        w = words.copy()
        w[index] = value
        return w

    return {
        "truncated": (words[: len(words) // 2].copy(), PortError.TRUNCATED),
        "missing sync": (edit(SYNC_AT, DUMMY), PortError.NO_SYNC),
        "wrong idcode": (edit(IDCODE_AT, 0x0372C093), PortError.BAD_IDCODE),
        "crc mismatch": (edit(FDRI_AT + 777, words[FDRI_AT + 777] ^ 0x40), PortError.CRC_MISMATCH),
        "far outside slot": (edit(FAR_AT, other_far), PortError.FAR_OUTSIDE_SLOT),
        # The PYNQ-Z2's slots hold ids 1..15 (their module mask); 16, template_match, is not offered there.
        "unknown module": (edit(FDRI_AT + 1, 16), PortError.UNKNOWN_MODULE),
        "fdri before idcode": (np.delete(words, [IDCODE_AT - 1, IDCODE_AT]), PortError.FDRI_BEFORE_IDCODE),
    }


@pytest.mark.parametrize("case", list(_variants(np.zeros(1024, np.uint32), 0)))
def test_bad_load_gets_its_code_and_leaves_others_streaming(board, pynq_z2, case):
    s0, s1 = pynq_z2.slots
    good1 = build_config(pynq_z2, s1, "conv3x3")
    assert board.load(1, good1).ok
    board.route([1])
    stage = resolve_stage("gauss3x3")
    frame = np.random.default_rng(1).integers(0, 256, (120, 160), dtype=np.uint8)
    board.program(1, stage, 120, 160)

    bad, code = _variants(build_config(pynq_z2, s0, "sobel_mag"), s1.far_base)[case]
    assert check_words(bad, pynq_z2.idcode, pynq_z2.frame_words, region(pynq_z2, s0)).error == code
    # Slot 0 is loaded with the bad bitstream while a frame streams through slot 1.
    board.shell_write(4, 0)
    out, stats = board.stream(frame, (120, 160), cfg=bad, gap_pct=10, stall_pct=10)
    assert stats.cfg_sent == len(bad)
    assert np.array_equal(out, stage_reference(stage, frame)), "slot 1 traffic changed during the load"
    board.rtl.idle(8)
    result = board._load_result(0, stats)
    assert result.error == code
    status = board.slot_status(0)
    assert (status.state, status.module_id, status.error, status.decoupled) == ("failed", 0, code, True)
    assert board.module_read(0, 0)[0] == 2, "a failed slot's registers must answer SLVERR"
    out, _ = board.stream(frame, (120, 160))
    assert np.array_equal(out, stage_reference(stage, frame)), "slot 1 traffic changed after the load"


def test_rtl_port_agrees_with_the_checker_on_corruptions(board, pynq_z2):
    slot = pynq_z2.slots[0]
    good = build_config(pynq_z2, slot, "threshold")
    rng = random.Random(9)
    positions = [SYNC_AT + 1, 15, 18, 20, 22, 23, 25, 26, FDRI_AT, FDRI_AT + 2,
                 rng.randrange(FDRI_AT + 4, len(good) - 22), len(good) - 22, len(good) - 21, len(good) - 17]
    for word in positions:
        bad = good.copy()
        bad[word] ^= np.uint32(1 << rng.randrange(32))
        want = check_words(bad, pynq_z2.idcode, pynq_z2.frame_words, region(pynq_z2, slot)).error
        got = board.load(0, bad).error
        assert want != PortError.OK, f"word {word}"
        assert got == want, f"word {word}: RTL says {got.name}, checker says {want.name}"
        assert board.slot_status(0).module_id == 0


def test_decoupler_keeps_junk_off_the_static_side(board, pynq_z2):
    board.route([0])  # slot 0 is blank: its outputs carry junk
    _, stats = board.rtl.run(n_out=0, settle=500)
    assert stats.extra_out == 0
    board.set_decoupler_bypass(True)
    _, stats = board.rtl.run(n_out=0, settle=500)
    board.set_decoupler_bypass(False)
    assert stats.extra_out > 50, "with the decoupler bypassed the blank slot's junk must be visible"


def test_full_hd_frame_through_every_module(board, pynq_z2):
    rng = np.random.default_rng(1080)
    gray = rng.integers(0, 256, (1080, 1920), dtype=np.uint8)
    gray[200:400, 300:900] = 255
    rgb = rng.integers(0, 256, (1080, 1920, 3), dtype=np.uint8)
    cases = [("gauss3x3", gray), ("sobel_mag", gray), ("threshold", gray), ("downscale2x", gray),
             ("rgb2gray", rgb), ("erode3x3", gray), ("dilate3x3", gray), ("median3x3", gray), ("moments", gray),
             ("fast9", gray)]
    for n, (name, frame) in enumerate(cases):
        stage = resolve_stage(name)
        slot = n % 2
        assert board.load(slot, build_config(pynq_z2, pynq_z2.slots[slot], stage.kind.name)).ok
        board.route([slot])
        board.program(slot, stage, 1080, 1920)
        shape = stage.kind.output_shape(1080, 1920)
        out, stats = board.stream(frame, shape, seed=n + 1, gap_pct=5, stall_pct=5)
        assert stats.tlast_errors == 0 and stats.tuser_errors == 0 and stats.extra_out == 0
        assert np.array_equal(out, stage_reference(stage, frame)), name


@pytest.fixture(scope="module")
def x4(tmp_path_factory):
    """The zcu104 shell built at 4 pixels per clock (every module; a 128-bit stream), in RTL."""
    from fpgashare.catalogue.platform import load_platform, manifest_at_pixels_per_clock
    from fpgashare.hdl_sim.board import SimBoard

    path = manifest_at_pixels_per_clock("zcu104", 4, tmp_path_factory.mktemp("x4") / "zcu104-x4.toml")
    platform = load_platform(path)
    return platform, SimBoard(platform)


X4_MODULES = ["gauss3x3", "sobel_mag", "threshold", "downscale2x", "erode3x3", "dilate3x3", "median3x3",
              "moments", "fast9", "template_match"]
# Full HD; full-HD wide with a width that is not a multiple of 4 (each row ends in a part-filled beat:
# a few rows show it, more would only repeat what full HD's rows show); small, another width modulo 4.
X4_SIZES = [(1080, 1920), (29, 1918), (31, 13)]


@pytest.mark.parametrize("rows,cols", X4_SIZES)
def test_every_single_channel_module_at_four_pixels_per_clock(x4, rows, cols):
    """Full HD and widths that are not a multiple of 4 (rows padded to whole beats), with input gaps
    and output stalls, bit-exact; a beat carries 4 pixels, so a frame takes about a quarter of the beats."""
    platform, board = x4
    board.rtl.reset()
    rng = np.random.default_rng(rows + cols)
    frame = rng.integers(0, 256, (rows, cols), dtype=np.uint8)
    frame[rows // 5:rows // 3, cols // 4:cols // 2] = 255
    for n, name in enumerate(X4_MODULES):
        stage = resolve_stage(name)
        slot = n % len(platform.slots)
        assert board.load(slot, build_config(platform, platform.slots[slot], stage.kind.name)).ok
        board.route([slot])
        board.program(slot, stage, rows, cols)
        shape = stage.kind.output_shape(rows, cols)
        out, stats = board.stream(frame, shape, seed=n + 1, gap_pct=5, stall_pct=5)
        assert stats.tlast_errors == 0 and stats.tuser_errors == 0 and stats.extra_out == 0, name
        assert stats.received == shape[0] * -(-shape[1] // 4), name
        assert np.array_equal(out, stage_reference(stage, frame)), name


# Multi-channel modules at 4 pixels per clock: each pixel in a 32-bit lane of the 128-bit beat; a
# chain ends in gray (rgb2hsv's three channels go on to in_range).
X4_MULTI = [["rgb2gray"], ["rgb2hsv", "in_range"], ["in_range"], ["absdiff"], ["bg_update"]]
X4_RANGES = {"LO0": 20, "HI0": 120, "LO1": 40, "HI1": 230, "LO2": 10, "HI2": 250}


@pytest.mark.parametrize("rows,cols", X4_SIZES)
def test_every_multi_channel_module_at_four_pixels_per_clock(x4, rows, cols):
    """RGB frames and frame pairs in 32-bit lanes, full HD and widths that are not a multiple of 4,
    with input gaps and output stalls, bit-exact; a frame takes a quarter of the beats."""
    platform, board = x4
    board.rtl.reset()
    rng = np.random.default_rng(rows * cols)
    for n, chain in enumerate(X4_MULTI):
        stages = [resolve_stage(name, X4_RANGES if name == "in_range" else {}) for name in chain]
        channels = stages[0].kind.channels_in
        frame = rng.integers(0, 256, (rows, cols, channels), dtype=np.uint8)
        slots = list(range(len(stages)))
        for slot, stage in zip(slots, stages, strict=True):
            assert board.load(slot, build_config(platform, platform.slots[slot], stage.kind.name)).ok
            board.program(slot, stage, rows, cols)
        board.route(slots)
        out, stats = board.stream(frame, (rows, cols), seed=n + 1, gap_pct=5, stall_pct=5)
        assert stats.tlast_errors == 0 and stats.tuser_errors == 0 and stats.extra_out == 0, chain
        assert stats.sent == rows * -(-cols // 4) and stats.received == rows * -(-cols // 4), chain
        want = frame
        for stage in stages:
            want = stage_reference(stage, want)
        assert np.array_equal(out, want), chain

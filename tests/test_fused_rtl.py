"""A fused region in RTL: the zcu104-x4 shell (four pixels per clock) loads fast9 and template_match,
which fit no single slot, into its fused region with one partial spanning the member slots' frames;
the stream runs through the host slot bit-exact with OpenCV; the other members stay blank and
decoupled; a load into a member evicts the fused module; partials of the wrong span are refused with
the code the Python port model gives."""

from __future__ import annotations

import numpy as np
import pytest
from fpgashare.bitstream.packets import PortError, check_words, frame_data, partial_words
from fpgashare.bitstream.registry import build_config, slot_region
from fpgashare.catalogue.modules import KINDS, resolve_stage, template_registers
from fpgashare.catalogue.platform import load_platform
from fpgashare.catalogue.vision_ref import fast9_keypoints, stage_reference, template_best
from fpgashare.hdl_sim.board import ACTIVATION_CYCLES

pytestmark = pytest.mark.rtl

cv2 = pytest.importorskip("cv2")


@pytest.fixture(scope="module")
def fused():
    from fpgashare.hdl_sim.board import SimBoard

    platform = load_platform("zcu104-x4")
    return platform, SimBoard(platform, modules={"fast9", "template_match", "threshold", "conv3x3"})


def _region(platform):
    (region,) = platform.fused
    return region


def _load(platform, board, slot: int, module: str):
    words = build_config(platform, platform.slots[slot], module)
    verdict = check_words(words, platform.idcode, platform.frame_words, slot_region(platform, platform.slots[slot]))
    result = board.load(slot, words)
    assert verdict.ok and result.ok, (module, result.error)
    assert result.words == verdict.words_to_desync and result.cycles == verdict.words_to_desync + ACTIVATION_CYCLES
    return result


def _frame(rng, rows, cols):
    frame = rng.integers(0, 256, (rows, cols), dtype=np.uint8)
    frame = cv2.GaussianBlur(frame, (5, 5), 0)          # corners that are corners, not noise
    frame[rows // 5:rows // 3, cols // 4:cols // 2] = 230
    return frame


def test_fused_partial_spans_every_member(fused):
    platform, _ = fused
    region = _region(platform)
    assert len(region.slots) >= 2
    for module in ("fast9", "template_match"):
        host = platform.slots[region.host]
        words = build_config(platform, host, module)
        verdict = check_words(words, platform.idcode, platform.frame_words, slot_region(platform, host))
        assert verdict.ok and verdict.far == region.far_base
        last = platform.slots[region.slots[-1]]
        assert verdict.fdri_words == (last.far_base + last.frames - host.far_base) * platform.frame_words
        assert platform.slot_load_cycles(host.index, module) > platform.slot_load_cycles(host.index, "threshold")


@pytest.mark.parametrize("rows,cols", [(120, 160), (61, 97)])
def test_fast9_in_the_fused_region_matches_opencv(fused, rows, cols):
    platform, board = fused
    board.rtl.reset()
    region = _region(platform)
    host = region.host
    _load(platform, board, host, "fast9")
    assert board.slot_status(host).module_id == KINDS["fast9"].module_id
    for member in region.slots[1:]:
        status = board.slot_status(member)
        assert (status.state, status.module_id, status.decoupled) == ("blank", 0, True)
    rng = np.random.default_rng(rows * cols)
    frame = _frame(rng, rows, cols)
    stage = resolve_stage("fast9", {"THRESH": 20})
    board.route([host])
    board.program(host, stage, rows, cols)
    out, stats = board.stream(frame, (rows, cols), seed=rows, gap_pct=5, stall_pct=5)
    assert stats.tlast_errors == 0 and stats.tuser_errors == 0 and stats.extra_out == 0
    assert stats.received == rows * -(-cols // 4), "four pixels a beat"
    assert np.array_equal(out, stage_reference(stage, frame))
    keypoints = cv2.FastFeatureDetector_create(20, True).detect(frame)
    want = {(round(k.pt[0]), round(k.pt[1])) for k in keypoints
            if 3 <= k.pt[0] < cols - 3 and 3 <= k.pt[1] < rows - 3}
    got = {(x, y) for x, y, _ in fast9_keypoints(out) if 3 <= x < cols - 3 and 3 <= y < rows - 3}
    assert got == want and want, "OpenCV's keypoints, away from the border OpenCV skips"


def test_template_match_in_the_fused_region_after_a_slot_stage(fused):
    """slot 0 (gauss3x3) -> the fused region (template_match): the registers say where cv2.matchTemplate
    finds the template best, and the pixels pass through."""
    platform, board = fused
    board.rtl.reset()
    region = _region(platform)
    outside = next(s.index for s in platform.slots if s.index not in region.slots)
    _load(platform, board, outside, "conv3x3")
    _load(platform, board, region.host, "template_match")
    rng = np.random.default_rng(7)
    rows, cols = 72, 130
    frame = rng.integers(0, 256, (rows, cols), dtype=np.uint8)
    blur = resolve_stage("gauss3x3")
    smooth = stage_reference(blur, frame)
    template = smooth[30:37, 81:88].copy()
    match = resolve_stage("template_match", template_registers(template))
    board.route([outside, region.host])
    board.program(outside, blur, rows, cols)
    board.program(region.host, match, rows, cols)
    out, stats = board.stream(frame, (rows, cols), seed=3, gap_pct=5, stall_pct=5)
    assert stats.tlast_errors == 0 and stats.extra_out == 0
    assert np.array_equal(out, smooth)
    results = board.read_results([region.host], [match])["template_match"]
    want = template_best(smooth, template)
    assert results == want
    scores = cv2.matchTemplate(smooth, template, cv2.TM_SQDIFF)
    _, _, (x, y), _ = cv2.minMaxLoc(scores)
    assert (results["BEST_X"], results["BEST_Y"]) == (x, y) == (81, 30)


def test_a_load_into_a_member_evicts_the_fused_module(fused):
    platform, board = fused
    board.rtl.reset()
    region = _region(platform)
    _load(platform, board, region.host, "fast9")
    member = region.slots[-1]
    _load(platform, board, member, "threshold")
    assert board.slot_status(region.host).module_id == 0, "the fused module's frames were rewritten"
    assert board.slot_status(member).module_id == KINDS["threshold"].module_id
    # the host now takes a one-slot module; the member keeps its own
    _load(platform, board, region.host, "threshold")
    assert board.slot_status(member).module_id == KINDS["threshold"].module_id
    # and a fused load into the host evicts every member's module
    _load(platform, board, region.host, "template_match")
    assert all(board.slot_status(m).module_id == 0 for m in region.slots[1:])


def test_partials_of_the_wrong_span_are_refused_as_the_model_says(fused):
    platform, board = fused
    board.rtl.reset()
    region = _region(platform)
    host = platform.slots[region.host]
    fused_words = region.frames * platform.frame_words
    cases = {
        # a fused module in the host's own frames only
        "fast9 in one slot": partial_words(platform.idcode, host.far_base, frame_data(
            "x", KINDS["fast9"].module_id, host.index, host.frames * platform.frame_words)),
        # a one-slot module over the whole region
        "threshold over the region": partial_words(platform.idcode, host.far_base, frame_data(
            "y", KINDS["threshold"].module_id, host.index, fused_words)),
        # the region's span but one frame short
        "short span": partial_words(platform.idcode, host.far_base, frame_data(
            "z", KINDS["fast9"].module_id, host.index, fused_words - platform.frame_words)),
    }
    for name, words in cases.items():
        want = check_words(words, platform.idcode, platform.frame_words, slot_region(platform, host)).error
        assert want != PortError.OK, name
        got = board.load(host.index, words).error
        assert got == want, f"{name}: RTL says {got.name}, the model says {want.name}"
        assert board.slot_status(host.index).module_id == 0
    # a member is no host: the fused partial is refused there
    member = platform.slots[region.slots[1]]
    words = build_config(platform, host, "fast9")
    assert board.load(member.index, words).error == check_words(
        words, platform.idcode, platform.frame_words, slot_region(platform, member)).error != PortError.OK


def test_the_twin_times_a_fused_load_and_frame_as_the_rtl():
    """The model backend's port cycles for the region's partial equal the RTL's, its frame cycles
    follow the RTL's through the host, and both backends evict the fused module on a member load."""
    from fpgashare.backends import make_backend
    from fpgashare.backends.simrun import resolve_chain

    platform = load_platform("zcu104-x4")
    model, sim = make_backend("model", platform), make_backend("sim", platform)
    region = _region(platform)
    for module in ("fast9", "template_match"):
        a, b = model.load(region.host, module), sim.load(region.host, module)
        assert a.ok and b.ok and a.port_cycles == b.port_cycles == platform.slot_load_cycles(region.host, module)
    stages = resolve_chain(["template_match"], {})
    frame = np.random.default_rng(5).integers(0, 256, (97, 203), dtype=np.uint8)
    a, b = model.run_frame([region.host], stages, frame), sim.run_frame([region.host], stages, frame)
    assert np.array_equal(a.output, b.output) and abs(a.cycles - b.cycles) <= 0.02 * b.cycles
    for backend in (model, sim):
        assert backend.load(region.slots[-1], "threshold").ok
        assert backend.resident(region.host) is None and backend.resident(region.slots[-1]) == "threshold"

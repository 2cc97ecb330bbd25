"""The vision modules added for the seed paper's pipelines, around the RTL: goldens equal OpenCV,
chain presets and channel rules, manifests, memory traffic, and the model backend a twin of the RTL
on chains of the new modules."""

from __future__ import annotations

import cv2
import numpy as np
import pytest
from fpgashare.backends import make_backend
from fpgashare.backends.simrun import assign_slots, resolve_chain
from fpgashare.catalogue.modules import CHAIN_PRESETS, KINDS, expand_chain, resolve_stage, template_registers
from fpgashare.catalogue.platform import load_platform
from fpgashare.catalogue.vision_ref import (
    binary_moments,
    chain_reference,
    fast9_keypoints,
    fast9_reference,
    rgb2hsv_reference,
    template_best,
)
from fpgashare.catalogue.vision_timing import chain_cycles, frame_memory_bytes
from fpgashare.errors import ModuleError

NEW = ["erode3x3", "dilate3x3", "median3x3", "rgb2hsv", "in_range", "moments", "absdiff", "bg_update", "fast9",
       "template_match"]


def test_hsv_golden_equals_opencv_on_every_colour():
    every = np.arange(1 << 24, dtype=np.uint32)
    image = np.stack([every & 255, (every >> 8) & 255, every >> 16], axis=-1).astype(np.uint8).reshape(4096, 4096, 3)
    assert np.array_equal(rgb2hsv_reference(image), cv2.cvtColor(image, cv2.COLOR_RGB2HSV))


def test_binary_moments_equal_opencv():
    rng = np.random.default_rng(5)
    for shape in ((1, 1), (17, 9), (120, 161)):
        mask = (rng.random(shape) < 0.3).astype(np.uint8) * rng.integers(1, 256, shape, dtype=np.uint8)
        cv = cv2.moments(mask, binaryImage=True)
        assert binary_moments(mask) == {"M00": cv["m00"], "M10": cv["m10"], "M01": cv["m01"]}


def test_open_and_close_are_chains_of_erode_and_dilate():
    assert expand_chain(["open3x3", "downscale2x"]) == ["erode3x3", "dilate3x3", "downscale2x"]
    frame = np.random.default_rng(6).integers(0, 256, (23, 31), dtype=np.uint8)
    kernel = np.ones((3, 3), np.uint8)
    for name, op in (("open3x3", cv2.MORPH_OPEN), ("close3x3", cv2.MORPH_CLOSE)):
        stages = resolve_chain([name], {})
        assert [s.name for s in stages] == list(CHAIN_PRESETS[name])
        want = cv2.morphologyEx(frame, op, kernel, borderType=cv2.BORDER_REPLICATE)
        assert np.array_equal(chain_reference(stages, frame), want)
    with pytest.raises(ModuleError, match="open3x3 is a chain of erode3x3 -> dilate3x3"):
        resolve_stage("open3x3")


@pytest.mark.parametrize(("chain", "message"), [
    (["rgb2hsv"], "a chain ends in one"),
    (["rgb2hsv", "threshold"], "threshold takes gray input, but rgb2hsv gives 3"),
    (["threshold", "absdiff"], "absdiff takes a frame and its reference side by side and must be the first"),
    (["threshold", "in_range"], "in_range takes RGB input and must be the first stage"),
    (["open3x3", "erode3x3"], "a stage appears twice"),
])
def test_chains_that_cannot_be_built_are_refused(chain, message):
    with pytest.raises(ModuleError, match=message):
        resolve_chain(chain, {})


@pytest.mark.parametrize("name", ["zcu104", "pynq-z2"])
def test_manifests_ship_every_new_module_in_every_slot(name):
    platform = load_platform(name)
    for module in NEW:
        if (name, module) == ("pynq-z2", "template_match"):
            assert module not in platform.modules      # its 49 DSP slices (Yosys) exceed a slot's 40
            continue
        assert [s.name for s in platform.slots_for(module)] == [s.name for s in platform.slots]
        assert set(platform.module(module).registers) == set(KINDS[module].regs)


def test_two_input_modules_read_the_reference_from_memory():
    chains = (["threshold"], ["rgb2gray", "threshold"], ["absdiff", "threshold"])
    gray, rgb, two = (resolve_chain(c, {}) for c in chains)
    assert frame_memory_bytes(gray, 480, 640) == (640 * 480, 640 * 480)
    assert frame_memory_bytes(rgb, 480, 640) == (3 * 640 * 480, 640 * 480)
    assert frame_memory_bytes(two, 480, 640) == (2 * 640 * 480, 640 * 480)
    # At one pixel per clock the stream bounds the frame, not the 8 B/cycle memory port: a two-input
    # chain takes as long as any other two-stage pointwise chain.
    assert chain_cycles(two, 480, 640) == chain_cycles(rgb, 480, 640) > 3 * 640 * 480 // 8


def test_model_backend_goldens_for_two_input_chains(zcu104):
    model = make_backend("model", zcu104)
    stages = resolve_chain(["absdiff", "threshold", "erode3x3", "downscale2x"], {"threshold": {"THRESH": 24}})
    slots = [s.index for s in assign_slots(zcu104, stages)]
    for slot, stage in zip(slots, stages, strict=True):
        assert model.load(slot, stage.kind.name).ok
    rng = np.random.default_rng(7)
    a, b = rng.integers(0, 256, (2, 48, 64), dtype=np.uint8)
    out = model.run_frame(slots, stages, np.dstack([a, b])).output
    mask = cv2.threshold(cv2.absdiff(a, b), 24, 255, cv2.THRESH_BINARY)[1]
    mask = cv2.erode(mask, np.ones((3, 3), np.uint8), borderType=cv2.BORDER_REPLICATE)
    assert np.array_equal(out, cv2.resize(mask, (32, 24), interpolation=cv2.INTER_AREA))


TWIN_CHAINS = [["open3x3", "downscale2x"], ["rgb2hsv", "in_range", "moments"], ["median3x3"], ["rgb2gray", "fast9"],
               ["absdiff", "threshold", "erode3x3", "downscale2x"], ["bg_update"], ["rgb2gray", "template_match"]]


@pytest.mark.rtl
@pytest.mark.parametrize("chain", TWIN_CHAINS, ids=["+".join(c) for c in TWIN_CHAINS])
def test_model_is_a_twin_of_the_rtl_on_new_chains(zcu104, chain):
    model, sim = make_backend("model", zcu104), make_backend("sim", zcu104)
    stages = resolve_chain(chain, {"in_range": {"LO0": 20, "HI0": 90, "LO1": 60, "LO2": 40}})
    slots = [s.index for s in assign_slots(zcu104, stages)]
    for slot, stage in zip(slots, stages, strict=True):
        assert model.load(slot, stage.kind.name).ok and sim.load(slot, stage.kind.name).ok
    rng = np.random.default_rng(len(chain))
    for rows, cols in ((64, 64), (97, 201)):
        frame = rng.integers(0, 256, stages[0].kind.input_shape(rows, cols), dtype=np.uint8)
        a, b = model.run_frame(slots, stages, frame), sim.run_frame(slots, stages, frame)
        assert np.array_equal(a.output, b.output)
        assert a.results == b.results         # the result registers too (moments, template_match)
        assert np.array_equal(b.output, chain_reference(stages, frame))
        assert abs(a.cycles - b.cycles) <= 0.02 * b.cycles, (a.cycles, b.cycles)


def test_fast9_golden_equals_opencv_keypoints():
    rng = np.random.default_rng(8)
    for trial in range(40):
        rows, cols = int(rng.integers(1, 80)), int(rng.integers(1, 110))
        image = rng.integers(0, 256, (rows, cols), dtype=np.uint8)
        if trial % 3 == 1:
            image = cv2.GaussianBlur(image, (5, 5), 0)
        if trial % 3 == 2:      # sparse bright dots: isolated corners and equal-score neighbours
            image = ((rng.random((rows, cols)) < 0.1) * 200 + 20).astype(np.uint8)
        threshold = int(rng.integers(0, 60))
        keypoints = cv2.FastFeatureDetector_create(threshold, True).detect(image)
        want = {(int(k.pt[0]), int(k.pt[1]), int(k.response)) for k in keypoints}
        assert fast9_keypoints(fast9_reference(image, threshold)) == want, (rows, cols, threshold)


FULL_HD_CHAINS = [["rgb2hsv", "in_range", "moments"], ["absdiff", "threshold", "erode3x3", "dilate3x3"],
                  ["bg_update", "median3x3", "fast9"]]


@pytest.mark.rtl
@pytest.mark.parametrize("chain", FULL_HD_CHAINS, ids=["+".join(c) for c in FULL_HD_CHAINS])
def test_a_full_hd_frame_through_the_shell_with_gaps_and_stalls(zcu104, chain):
    """Every new module on one 1920x1080 frame in the shell RTL, the input DMA pausing and the
    output DMA stalling at random, bit-exact with OpenCV / the numpy goldens."""
    from fpgashare.bitstream.registry import build_config
    from fpgashare.hdl_sim.board import SimBoard

    board = SimBoard(zcu104)
    stages = resolve_chain(chain, {"in_range": {"LO0": 20, "HI0": 90, "LO1": 60, "LO2": 40}})
    slots = assign_slots(zcu104, stages)
    for stage, slot in zip(stages, slots, strict=True):
        board.load_or_raise(slot.index, build_config(zcu104, slot, stage.kind.name))
    board.route([s.index for s in slots])
    for stage, slot in zip(stages, slots, strict=True):
        board.program(slot.index, stage, 1080, 1920)
    rng = np.random.default_rng(9)
    frame = cv2.GaussianBlur(rng.integers(0, 256, stages[0].kind.input_shape(1080, 1920), dtype=np.uint8), (5, 5), 0)
    out, stats = board.stream(frame, (1080, 1920), seed=3, gap_pct=15, stall_pct=25)
    assert stats.tlast_errors == stats.extra_out == 0
    assert np.array_equal(out, chain_reference(stages, frame))


def test_the_seven_pipeline_suites_run_under_every_scheduler():
    from fpgashare.cli.bench import bench
    from fpgashare.sched.policies.registry import POLICIES

    for suite in ("nh_seven_zcu104", "nh_seven_pynq_z2"):
        report = bench(suite, list(POLICIES))
        assert [r["scheduler"] for r in report["results"]] == list(POLICIES)
        for result in report["results"]:
            # Nothing is lost: every released frame of every pipeline ends in exactly one outcome.
            for p in result["pipelines"].values():
                assert p["submitted"] == p["on_time"] + p["late"] + p["dropped"] + p["errors"] > 0


@pytest.mark.rtl
def test_sim_run_reads_the_moments_registers_after_the_frame(zcu104):
    from fpgashare.backends.simrun import run_chain
    from fpgashare.hdl_sim.board import SimBoard

    stages = resolve_chain(["rgb2hsv", "in_range", "moments"], {"in_range": {"LO0": 20, "HI0": 60}})
    frame = np.random.default_rng(10).integers(0, 256, (120, 161, 3), dtype=np.uint8)
    result = run_chain(SimBoard(zcu104), stages, frame)
    assert np.array_equal(result.output, chain_reference(stages, frame))
    regs = result.results["moments"]
    want = binary_moments(result.output)
    assert regs["M00"] == want["M00"] > 0
    assert regs["M10_LO"] | regs["M10_HI"] << 32 == want["M10"]
    assert regs["M01_LO"] | regs["M01_HI"] << 32 == want["M01"]


def test_template_golden_equals_opencv_match_template():
    """The exact-integer golden against cv2.minMaxLoc(cv2.matchTemplate(..., TM_SQDIFF)): the same
    least score (OpenCV's float rounds a little on big frames) and, where it is unique, the same place."""
    rng = np.random.default_rng(11)
    for trial in range(30):
        rows, cols = int(rng.integers(7, 90)), int(rng.integers(7, 120))
        frame = rng.integers(0, 256, (rows, cols), dtype=np.uint8)
        if trial % 2:
            frame = cv2.GaussianBlur(frame, (5, 5), 0)
        y, x = int(rng.integers(0, rows - 6)), int(rng.integers(0, cols - 6))
        template = frame[y:y + 7, x:x + 7].copy()
        template[3, 3] ^= int(rng.integers(0, 40))
        best = template_best(frame, template)
        scores = cv2.matchTemplate(frame, template, cv2.TM_SQDIFF)
        low, _, where, _ = cv2.minMaxLoc(scores)
        assert abs(low - best["BEST"]) <= 1e-4 * max(1.0, best["BEST"]) + 1
        if np.count_nonzero(scores <= low + 2) == 1:
            assert where == (best["BEST_X"], best["BEST_Y"]), trial
    assert template_best(np.zeros((6, 40), np.uint8), template)["BEST"] == 0xFFFFFFFF


def test_a_template_register_set_needs_seven_by_seven_bytes():
    regs = template_registers(np.arange(49, dtype=np.uint8).reshape(7, 7))
    assert regs["T0"] == 0x03020100 and regs["T12"] == 48 and len(regs) == 13
    with pytest.raises(ModuleError, match="7x7 template of 8-bit pixels"):
        template_registers(np.zeros((6, 7), np.uint8))


@pytest.mark.rtl
def test_template_match_finds_a_template_on_a_full_hd_frame_through_the_shell(zcu104):
    """rgb2gray then template_match on one 1920x1080 frame in the shell RTL: the registers read after
    the frame equal the golden (and OpenCV's place), the pixels pass through."""
    from fpgashare.backends.simrun import run_chain
    from fpgashare.hdl_sim.board import SimBoard

    rng = np.random.default_rng(12)
    rgb = cv2.GaussianBlur(rng.integers(0, 256, (1080, 1920, 3), dtype=np.uint8), (5, 5), 0)
    gray = chain_reference(resolve_chain(["rgb2gray"], {}), rgb)
    template = gray[700:707, 1500:1507].copy()
    stages = resolve_chain(["rgb2gray", "template_match"], {"template_match": template_registers(template)})
    result = run_chain(SimBoard(zcu104), stages, rgb)
    assert np.array_equal(result.output, gray)
    want = template_best(gray, template)
    assert result.results["template_match"] == want
    assert (want["BEST"], want["BEST_X"], want["BEST_Y"]) == (0, 1500, 700)


def test_rgb2gray_takes_any_register_word_as_the_rtl_does(fresh_seed):
    """A client may send any 32-bit word (daemon/checks.py): rgb2gray.sv reads each coefficient's
    low 16 bits and the shift's low 5, and so does the twin (it once faulted on a large or
    negative shift, ending the frame as a hardware failure)."""
    from fpgashare.backends.simrun import resolve_chain
    from fpgashare.catalogue.vision_ref import chain_reference

    rng = np.random.default_rng(fresh_seed)
    frame = rng.integers(0, 256, (8, 12, 3), dtype=np.uint8)
    rgb = frame.astype(np.int64)
    for _ in range(200):
        words = {reg: int(rng.integers(-(1 << 31), 1 << 32)) for reg in ("CR", "CG", "CB", "SHIFT")}
        out = chain_reference(resolve_chain(["rgb2gray"], {"rgb2gray": words}), frame)
        cr, cg, cb = (words[reg] & 0xFFFF for reg in ("CR", "CG", "CB"))
        shift = words["SHIFT"] & 31
        acc = cr * rgb[..., 0] + cg * rgb[..., 1] + cb * rgb[..., 2] + ((1 << (shift - 1)) if shift else 0)
        assert np.array_equal(out, np.minimum(acc >> shift, 255).astype(np.uint8)), (fresh_seed, words)

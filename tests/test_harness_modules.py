"""A slot simulates only its loaded module: the shell built without its modules, each module a model
of its own at the slot's boundary (hdl_sim/module_models.py), behaves cycle for cycle like the shell
with every module inside (the build before), on loads (good and broken) and frames alike."""

from __future__ import annotations

import numpy as np
import pytest
from fpgashare.bitstream.registry import build_config
from fpgashare.catalogue.modules import resolve_stage
from fpgashare.catalogue.platform import load_platform, manifest_at_pixels_per_clock
from fpgashare.catalogue.vision_ref import chain_reference
from fpgashare.hdl_sim.board import SimBoard
from fpgashare.hdl_sim.harness import HarnessError

pytestmark = pytest.mark.rtl

#: A small library (both builds simulate it): a colour stage, two window stages, a pixel stage.
MODULES = ("rgb2gray", "conv3x3", "sobel_mag", "threshold")
GRAY_STAGES = ("gauss3x3", "box3x3", "sobel_mag", "threshold")


@pytest.fixture(scope="module")
def platform(tmp_path_factory):
    path = manifest_at_pixels_per_clock("pynq-z2", 1, tmp_path_factory.mktemp("lib") / "small.toml", MODULES)
    return load_platform(path)


@pytest.fixture(scope="module")
def boards(platform):
    return SimBoard(platform, external=False), SimBoard(platform)


def corrupt(words: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The partial with one word past the header flipped: the port must refuse it the same way."""
    bad = words.copy()
    k = int(rng.integers(len(bad) // 2, len(bad) - 8))
    bad[k] ^= np.uint32(1 << int(rng.integers(0, 32)))
    return bad


def test_loads_and_frames_match_the_shell_with_its_modules_inside(platform, boards, fresh_seed):
    seed = fresh_seed
    rng = np.random.default_rng(seed)
    old, new = boards
    for _ in range(2):
        first = "rgb2gray" if rng.integers(0, 2) else str(rng.choice(GRAY_STAGES))
        second = str(rng.choice([s for s in GRAY_STAGES if s != first]))
        stages = [resolve_stage(first), resolve_stage(second)]
        slots = [int(s) for s in rng.permutation(2)]
        rows, cols = (int(v) for v in rng.integers(8, 48, size=2))
        shape = (rows, cols, 3) if first == "rgb2gray" else (rows, cols)
        frame = rng.integers(0, 256, shape, dtype=np.uint8)
        broken = bool(rng.integers(0, 2))
        # gaps, stalls and idle cycles: modules come to rest and wake mid-frame and between frames
        gap, stall, idle = (int(v) for v in rng.integers(0, 50, size=3))
        seen = []
        for board in (old, new):
            got = []
            for slot, stage in zip(slots, stages, strict=True):
                words = build_config(platform, platform.slots[slot], stage.kind.name)
                if broken:
                    got.append(board.load(slot, corrupt(words, np.random.default_rng(seed))))
                got.append(board.load(slot, words))
            board.route(slots)
            size = (rows, cols)
            for slot, stage in zip(slots, stages, strict=True):
                board.program(slot, stage, *size)
                size = stage.kind.output_shape(*size)
            board.rtl.idle(idle)
            out, stats = board.stream(frame, size, seed=seed & 0xFFFF | 1, gap_pct=gap, stall_pct=stall)
            board.release_route(0)
            got += [out.tobytes(), stats, board.cycles]
            seen.append(got)
        assert seen[0] == seen[1], \
            f"seed {seed}: {[first, second]} in slots {slots}, broken={broken}, gap {gap}, stall {stall}"
        assert np.array_equal(np.frombuffer(seen[1][-3], np.uint8).reshape(size), chain_reference(stages, frame)), \
            f"seed {seed}"


def test_a_module_at_rest_is_not_evaluated(platform, fresh_seed):
    """While a slot's module holds still (its pins and its state unchanged over a cycle) the harness
    skips it: a load into the other slot costs no evaluation of a resting module, and the resting one
    still streams a frame right afterwards."""
    board = SimBoard(platform)
    stage = resolve_stage("threshold")
    board.load(0, build_config(platform, platform.slots[0], stage.kind.name))
    _, evals, skipped = board.rtl.evaluations()
    words = build_config(platform, platform.slots[1], "conv3x3")
    assert board.load(1, words).ok
    _, evals_after, skipped_after = board.rtl.evaluations()
    assert skipped_after - skipped >= 2 * len(words) - 16 * 2   # both phases of nearly every cycle
    assert evals_after - evals < 64                              # the load's own few cycles of waking
    board.route([0])
    board.program(0, stage, 8, 16)
    frame = np.random.default_rng(fresh_seed).integers(0, 256, (8, 16), dtype=np.uint8)
    out, _ = board.stream(frame, (8, 16))
    assert np.array_equal(out, chain_reference([stage], frame)), f"seed {fresh_seed}"


def test_a_load_of_a_module_without_a_model_stops_the_run(platform):
    board = SimBoard(platform, modules=["threshold"])
    with pytest.raises(HarnessError, match="no model"):
        board.load(0, build_config(platform, platform.slots[0], "conv3x3"))

"""The harness evaluates each model by the clock's level (hdl_sim/harness/eval_phases.h: the low
evaluation without the assertions' sampling, the edge without the input region). Against Verilator's
whole eval() at both levels, on the shell with its modules outside and with them inside (clock gates'
latches), seeded loads (good and broken), register traffic, idle cycles and frames with gaps and stalls
give the same load results, outputs, cycle counts and evaluation counts."""

from __future__ import annotations

import secrets

import numpy as np
import pytest
from fpgashare.bitstream.registry import build_config
from fpgashare.catalogue.modules import resolve_stage
from fpgashare.catalogue.platform import load_platform, manifest_at_pixels_per_clock
from fpgashare.catalogue.vision_ref import chain_reference
from fpgashare.hdl_sim.board import SimBoard

pytestmark = pytest.mark.rtl

MODULES = ("rgb2gray", "conv3x3", "sobel_mag", "threshold")
GRAY_STAGES = ("gauss3x3", "box3x3", "sobel_mag", "threshold")


@pytest.fixture(scope="module")
def platform(tmp_path_factory):
    path = manifest_at_pixels_per_clock("pynq-z2", 1, tmp_path_factory.mktemp("lib") / "small.toml", MODULES)
    return load_platform(path)


def board_pair(platform, external: bool) -> tuple[SimBoard, SimBoard]:
    """Two instances of one build: by the levels' phases, and by eval() whole."""
    phases, whole = SimBoard(platform, external=external), SimBoard(platform, external=external)
    whole.rtl.set_whole_eval(True)
    return phases, whole


def corrupt(words: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    bad = words.copy()
    k = int(rng.integers(len(bad) // 2, len(bad) - 8))
    bad[k] ^= np.uint32(1 << int(rng.integers(0, 32)))
    return bad


def episode(board: SimBoard, platform, rng_seed: int) -> list:
    """One seeded run of loads, registers, idling and frames on ``board``: everything it saw."""
    rng = np.random.default_rng(rng_seed)
    seen: list = []
    for _ in range(2):
        first = "rgb2gray" if rng.integers(0, 2) else str(rng.choice(GRAY_STAGES))
        second = str(rng.choice([s for s in GRAY_STAGES if s != first]))
        stages = [resolve_stage(first), resolve_stage(second)]
        slots = [int(s) for s in rng.permutation(2)]
        rows, cols = (int(v) for v in rng.integers(8, 40, size=2))
        frame = rng.integers(0, 256, (rows, cols, 3) if first == "rgb2gray" else (rows, cols), dtype=np.uint8)
        for slot, stage in zip(slots, stages, strict=True):
            words = build_config(platform, platform.slots[slot], stage.kind.name)
            if rng.integers(0, 2):
                seen.append(board.load(slot, corrupt(words, rng)))
            seen.append(board.load(slot, words))
            seen.append(board.slot_status(slot))
        board.route(slots)
        size = (rows, cols)
        for slot, stage in zip(slots, stages, strict=True):
            board.program(slot, stage, *size)
            size = stage.kind.output_shape(*size)
        board.rtl.idle(int(rng.integers(0, 40)))
        gap, stall = (int(v) for v in rng.integers(0, 50, size=2))
        out, stats = board.stream(frame, size, seed=int(rng.integers(1, 1 << 16)), gap_pct=gap, stall_pct=stall)
        board.release_route(0)
        assert np.array_equal(out, chain_reference(stages, frame)), f"seed {rng_seed}: {first}, {second}"
        seen += [out.tobytes(), stats, [board.module_read(slot, 0) for slot in slots], board.cycles]
    return seen


@pytest.mark.parametrize("external", [True, False], ids=["modules outside", "modules inside"])
def test_the_levels_phases_run_as_eval_whole(platform, external):
    seed = secrets.randbits(32)
    phases, whole = board_pair(platform, external)
    assert episode(phases, platform, seed) == episode(whole, platform, seed), f"seed {seed}"
    assert phases.rtl.evaluations() == whole.rtl.evaluations(), f"seed {seed}"

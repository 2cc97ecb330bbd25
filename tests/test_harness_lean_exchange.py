"""The lean pin exchange between the shell and the module models (ShellHarness.set_lean_exchange: the
pins compared field by field as they are read, and at the edge only the clock written, the model
keeping the inputs it took in the low phase) against the exchange before it (a copy compared whole,
every input written at both levels), in one build: seeded loads (good and broken), register traffic,
idle cycles, frames with gaps and stalls, and a reset between two such runs, at one and at four
pixels per clock, give the same load results, outputs, statistics, cycle counts and evaluation counts,
and leave the same bytes in the shell's and the configuration block's state."""

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


@pytest.fixture(scope="module", params=[1, 4], ids=["1 px/clk", "4 px/clk"])
def platform(request, tmp_path_factory):
    folder = tmp_path_factory.mktemp(f"lib{request.param}")
    return load_platform(manifest_at_pixels_per_clock("pynq-z2", request.param, folder / "small.toml", MODULES))


def corrupt(words: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    bad = words.copy()
    k = int(rng.integers(len(bad) // 2, len(bad) - 8))
    bad[k] ^= np.uint32(1 << int(rng.integers(0, 32)))
    return bad


def episode(board: SimBoard, platform, rng: np.random.Generator) -> list:
    """Loads, registers, idling and frames on ``board`` as ``rng`` draws them: everything it saw."""
    nppc = platform.pixels_per_clock
    seen: list = []
    for _ in range(2):
        first = "rgb2gray" if rng.integers(0, 2) else str(rng.choice(GRAY_STAGES))
        second = str(rng.choice([s for s in GRAY_STAGES if s != first]))
        stages = [resolve_stage(first), resolve_stage(second)]
        slots = [int(s) for s in rng.permutation(2)]
        rows, cols = int(rng.integers(8, 40)), nppc * int(rng.integers(8 // nppc + 1, 40 // nppc + 1))
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
        assert np.array_equal(out, chain_reference(stages, frame)), f"{first}, {second}"
        seen += [out.tobytes(), stats, [board.module_read(slot, 0) for slot in slots], board.cycles]
    return seen


def test_the_lean_exchange_runs_as_the_exchange_before_it(platform):
    seed = secrets.randbits(32)
    lean, before = SimBoard(platform), SimBoard(platform)
    lean.rtl.set_fold_low(False)   # the exchange alone (the fold needs it: tests/test_harness_fold_low.py)
    before.rtl.set_lean_exchange(False)
    at_start = lean.rtl.state_differences(before.rtl)   # bytes nothing writes (padding, scratch)
    runs = []
    for board in (lean, before):
        rng = np.random.default_rng(seed)
        seen = episode(board, platform, rng)
        board.rtl.reset()   # every model clocked in reset, then the slots' modules afresh
        runs.append(seen + episode(board, platform, rng) + [board.rtl.evaluations()])
    assert runs[0] == runs[1], f"seed {seed}"
    assert lean.rtl.state_differences(before.rtl) <= at_start, f"seed {seed}"

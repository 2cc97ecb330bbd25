"""The harness's cost split (ShellHarness.set_cost_split / cost_split, harness/cost_split.h): timing the
parts changes nothing the simulation does, and the shares say which parts ran. On seeded loads, frames,
register traffic and idle cycles, a board with the split on and one with it off see the same load
results, outputs, statistics, cycle counts and evaluation counts; the shares are fractions summing to
one; and a part that did not run (the modules while every slot is blank and nothing moves, the
configuration block at rest) has no share of the time."""

from __future__ import annotations

import numpy as np
import pytest
from fpgashare.bitstream.registry import build_config
from fpgashare.catalogue.modules import resolve_stage
from fpgashare.catalogue.platform import load_platform, manifest_at_pixels_per_clock
from fpgashare.catalogue.vision_ref import chain_reference
from fpgashare.hdl_sim.board import SimBoard

from tests.harness_episodes import corrupt

pytestmark = pytest.mark.rtl

MODULES = ("conv3x3", "sobel_mag", "threshold")
STAGES = ("gauss3x3", "box3x3", "sobel_mag", "threshold")
PARTS = {"shell", "modules", "config_block", "harness"}


@pytest.fixture(scope="module")
def platform(tmp_path_factory):
    path = manifest_at_pixels_per_clock("pynq-z2", 1, tmp_path_factory.mktemp("lib") / "small.toml", MODULES)
    return load_platform(path)


def episode(board: SimBoard, platform, seed: int) -> list:
    """Seeded loads (one of them corrupted, perhaps), a frame through two slots with gaps and stalls,
    register reads and idle cycles: everything the board saw, and its evaluation counts."""
    rng = np.random.default_rng(seed)
    seen: list = []
    first, second = (str(s) for s in rng.choice(STAGES, size=2, replace=False))
    stages = [resolve_stage(first), resolve_stage(second)]
    slots = [int(s) for s in rng.permutation(2)]
    for slot, stage in zip(slots, stages, strict=True):
        words = build_config(platform, platform.slots[slot], stage.kind.name)
        if rng.integers(0, 2):
            seen.append(board.load(slot, corrupt(words, rng)))
        seen.append(board.load(slot, words))
    board.route(slots)
    rows, cols = (int(v) for v in rng.integers(8, 40, size=2))
    frame = rng.integers(0, 256, (rows, cols), dtype=np.uint8)
    size = (rows, cols)
    for slot, stage in zip(slots, stages, strict=True):
        board.program(slot, stage, *size)
        size = stage.kind.output_shape(*size)
    board.rtl.idle(int(rng.integers(0, 40)))
    gap, stall = (int(v) for v in rng.integers(0, 50, size=2))
    out, stats = board.stream(frame, size, seed=int(rng.integers(1, 1 << 16)), gap_pct=gap, stall_pct=stall)
    assert np.array_equal(out, chain_reference(stages, frame)), f"seed {seed}: {first}, {second}"
    seen += [out.tobytes(), stats, [board.module_read(slot, 0) for slot in slots],
             [board.slot_status(slot) for slot in slots]]
    board.rtl.idle(int(rng.integers(1, 200)))
    seen += [board.cycles, board.rtl.evaluations(), board.rtl.fast_cycles]
    return seen


def test_a_timed_run_is_the_same_run(platform, fresh_seed):
    seed = fresh_seed
    plain, timed = SimBoard(platform), SimBoard(platform)
    timed.rtl.set_cost_split(True)
    assert episode(plain, platform, seed) == episode(timed, platform, seed), f"seed {seed}"
    split = timed.rtl.cost_split()
    counted, left_out = timed.rtl.cost_split_cycles
    assert counted > 0 and counted + left_out <= timed.cycles, (seed, counted, left_out)
    assert set(split) == PARTS and all(0.0 <= v <= 1.0 for v in split.values()), (seed, split)
    assert abs(sum(split.values()) - 1.0) < 1e-9, (seed, split)
    assert split["shell"] > 0 and split["modules"] > 0 and split["config_block"] > 0, (seed, split)
    assert plain.rtl.cost_split() == dict.fromkeys(PARTS, 0.0)   # never switched on: nothing timed


def test_parts_that_do_not_run_have_no_share(platform, fresh_seed):
    board = SimBoard(platform)   # every slot blank: no module model is evaluated
    board.rtl.idle(64)           # the configuration block comes to rest (it is skipped from then on)
    board.rtl.set_cost_split(True)
    board.rtl.idle(int(np.random.default_rng(fresh_seed).integers(100, 2000)))
    split = board.rtl.cost_split()
    assert split["modules"] == 0.0 and split["config_block"] == 0.0 and split["shell"] > 0, (fresh_seed, split)
    board.rtl.set_cost_split(False)   # switched off: the counts stay where they were
    board.rtl.idle(100)
    assert board.rtl.cost_split() == split

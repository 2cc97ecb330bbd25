"""The shell's AXI-Lite control path (axil_fabric.sv) as a model of its own beside the shell, skipped
while at rest (ShellHarness.set_fabric_rest), against the same model evaluated every cycle, in one
build: seeded loads (good and broken), register traffic, idle cycles, frames with gaps and stalls, and a
reset between two such runs, at one and at four pixels per clock, give the same load results, outputs,
statistics and cycle counts, and leave the same bytes in the shell's, the configuration block's and
the fabric's state. And a frame streams without evaluating the fabric: the bus is idle, so it rests.
(The shell with the fabric inside against the one with it outside: tests/test_harness_modules.py.)"""

from __future__ import annotations

import numpy as np
import pytest
from fpgashare.bitstream.registry import build_config
from fpgashare.catalogue.modules import resolve_stage
from fpgashare.catalogue.vision_ref import chain_reference
from fpgashare.hdl_sim.board import SimBoard

from tests.harness_episodes import PIXELS_PER_CLOCK, PPC_IDS, small_platform, twin_runs

pytestmark = pytest.mark.rtl


@pytest.fixture(scope="module", params=PIXELS_PER_CLOCK, ids=PPC_IDS)
def platform(request, tmp_path_factory):
    return small_platform(request.param, tmp_path_factory)


def test_the_fabric_skipped_at_rest_runs_as_the_fabric_every_cycle(platform, fresh_seed):
    seed = fresh_seed
    resting, every = SimBoard(platform), SimBoard(platform)
    every.rtl.set_fabric_rest(False)
    seen, other, at_start, at_end = twin_runs(resting, every, platform, seed)
    assert seen == other, f"seed {seed}"
    assert at_end <= at_start, f"seed {seed}"
    ran, skipped = resting.rtl.fabric_evaluations()
    assert ran > 0 and skipped > ran, "the fabric was never skipped: the comparison would be vacuous"
    assert every.rtl.fabric_evaluations()[1] == 0


def test_a_frame_streams_with_the_fabric_at_rest(platform, fresh_seed):
    seed = fresh_seed
    rng = np.random.default_rng(seed)
    board = SimBoard(platform)
    stage = resolve_stage("threshold")
    assert board.load(0, build_config(platform, platform.slots[0], stage.kind.name)).ok
    board.route([0])
    rows, cols = int(rng.integers(8, 24)), platform.pixels_per_clock * int(rng.integers(4, 12))
    board.program(0, stage, rows, cols)
    board.rtl.idle(8)   # the last register write's response taken, the rest test passed
    ran = board.rtl.fabric_evaluations()[0]
    cycles = board.cycles
    frame = rng.integers(0, 256, (rows, cols), dtype=np.uint8)
    out, _ = board.stream(frame, (rows, cols))
    assert np.array_equal(out, chain_reference([stage], frame)), f"seed {seed}"
    assert board.cycles - cycles > rows * cols // platform.pixels_per_clock
    assert board.rtl.fabric_evaluations()[0] == ran, f"seed {seed}"

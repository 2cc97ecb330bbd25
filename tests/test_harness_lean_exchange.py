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
from fpgashare.catalogue.platform import load_platform, manifest_at_pixels_per_clock
from fpgashare.hdl_sim.board import SimBoard

from tests.harness_episodes import MODULES, episode

pytestmark = pytest.mark.rtl



@pytest.fixture(scope="module", params=[1, 4], ids=["1 px/clk", "4 px/clk"])
def platform(request, tmp_path_factory):
    folder = tmp_path_factory.mktemp(f"lib{request.param}")
    return load_platform(manifest_at_pixels_per_clock("pynq-z2", request.param, folder / "small.toml", MODULES))


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

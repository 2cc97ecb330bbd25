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
from fpgashare.hdl_sim.board import SimBoard

from tests.harness_episodes import PIXELS_PER_CLOCK, PPC_IDS, episode, small_platform

pytestmark = pytest.mark.rtl



@pytest.fixture(scope="module", params=PIXELS_PER_CLOCK, ids=PPC_IDS)
def platform(request, tmp_path_factory):
    return small_platform(request.param, tmp_path_factory)


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

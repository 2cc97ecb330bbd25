"""The lean pin exchange between the shell and the module models (ShellHarness.set_lean_exchange: the
pins compared field by field as they are read, and at the edge only the clock written, the model
keeping the inputs it took in the low phase) against the exchange before it (a copy compared whole,
every input written at both levels), in one build: seeded loads (good and broken), register traffic,
idle cycles, frames with gaps and stalls, and a reset between two such runs, at one and at four
pixels per clock, give the same load results, outputs, statistics, cycle counts and evaluation counts,
and leave the same bytes in the shell's and the configuration block's state."""

from __future__ import annotations

import pytest
from fpgashare.hdl_sim.board import SimBoard

from tests.harness_episodes import PIXELS_PER_CLOCK, PPC_IDS, small_platform, twin_runs

pytestmark = pytest.mark.rtl



@pytest.fixture(scope="module", params=PIXELS_PER_CLOCK, ids=PPC_IDS)
def platform(request, tmp_path_factory):
    return small_platform(request.param, tmp_path_factory)


def test_the_lean_exchange_runs_as_the_exchange_before_it(platform, fresh_seed):
    seed = fresh_seed
    lean, before = SimBoard(platform), SimBoard(platform)
    lean.rtl.set_fold_low(False)   # the exchange alone (the fold needs it: tests/test_harness_fold_low.py)
    before.rtl.set_lean_exchange(False)
    seen, other, at_start, at_end = twin_runs(lean, before, platform, seed)
    assert seen == other, f"seed {seed}"
    assert lean.rtl.evaluations() == before.rtl.evaluations(), f"seed {seed}"
    assert at_end <= at_start, f"seed {seed}"

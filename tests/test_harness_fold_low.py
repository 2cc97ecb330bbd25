"""A module model's low evaluation folded into its edge's call when no input with a combinational path
to one of its outputs moved since its last edge (ShellHarness.set_fold_low; the sets from the modules'
RTL, hdl_sim/comb_inputs.py). Against both levels evaluated apart, in one build: seeded loads (good and
broken), register traffic, idle cycles, frames with gaps and stalls, and a reset between two such runs,
at one and at four pixels per clock, give the same load results, outputs, statistics and cycle counts,
the same bytes in the shell's and the configuration block's state, and the same evaluations but for
the low evaluations a fold saved within a low phase. With the check on, every low evaluation that
could be folded runs and leaves its outputs as they were: the sets miss no path on these runs."""

from __future__ import annotations

import numpy as np
import pytest
from fpgashare.hdl_sim import comb_inputs
from fpgashare.hdl_sim.board import SimBoard
from fpgashare.hdl_sim.harness import HarnessError

from tests.harness_episodes import PIXELS_PER_CLOCK, PPC_IDS, episode, small_platform, twin_runs

pytestmark = pytest.mark.rtl


@pytest.fixture(scope="module", params=PIXELS_PER_CLOCK, ids=PPC_IDS)
def platform(request, tmp_path_factory):
    return small_platform(request.param, tmp_path_factory)


def test_the_fold_runs_as_both_levels_apart(platform, fresh_seed):
    seed = fresh_seed
    folded, apart = SimBoard(platform), SimBoard(platform)
    apart.rtl.set_fold_low(False)
    seen, other, at_start, at_end = twin_runs(folded, apart, platform, seed)
    assert seen == other, f"seed {seed}"
    assert at_end <= at_start, f"seed {seed}"
    folds, undone, _ = folded.rtl.folds()
    assert folds > 0, "nothing was folded: the comparison would be vacuous"
    shell, modules, skipped = folded.rtl.evaluations()
    assert (shell, modules + undone, skipped) == apart.rtl.evaluations(), f"seed {seed}"
    assert apart.rtl.folds() == (0, 0, 0)


def test_no_low_evaluation_that_could_be_folded_moves_an_output(platform, fresh_seed):
    seed = fresh_seed
    board = SimBoard(platform)
    board.rtl.set_fold_check(True)   # a HarnessError if one does
    rng = np.random.default_rng(seed)
    episode(board, platform, rng)
    folds, undone, checked = board.rtl.folds()
    assert (folds, undone) == (0, 0) and checked > 0, "nothing was checked"


def test_the_check_finds_a_set_that_misses_a_path(platform):
    """Every model's set without its output ready (which the chain's modules' input ready follows
    within the cycle): a frame with output stalls moves an output in a low phase the set calls still."""
    board = SimBoard(platform)
    for slot, ids in board.rtl.slot_models.items():
        for module_id in ids:
            board.rtl.set_comb_inputs(slot, module_id, 0)
    board.rtl.set_fold_check(True)
    with pytest.raises(HarnessError, match="combinational set"):
        for seed in range(20):   # a HarnessError within a few frames
            episode(board, platform, np.random.default_rng(seed))


def test_an_input_the_mask_has_no_bit_for_counts_as_every_input():
    assert comb_inputs.comb_mask(["m_axis_tready", "some_new_port"]) == comb_inputs.COMB_ALL
    assert comb_inputs.comb_mask([]) == 0
    assert comb_inputs.comb_mask(["clk"]) & comb_inputs.PORT_BITS["clk"]


def test_without_yosys_no_module_is_folded(monkeypatch, tmp_path):
    monkeypatch.setattr(comb_inputs, "_yosys", lambda: None)
    assert comb_inputs.analyse(tmp_path, [], "", {}) is None

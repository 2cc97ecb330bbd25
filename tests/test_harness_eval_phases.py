"""The harness evaluates each model by the clock's level (hdl_sim/harness/eval_phases.h: the low
evaluation without the assertions' sampling, the edge without the input region). Against Verilator's
whole eval() at both levels, on the shell with its modules outside and with them inside (clock gates'
latches), seeded loads (good and broken), register traffic, idle cycles and frames with gaps and stalls
give the same load results, outputs, cycle counts and evaluation counts."""

from __future__ import annotations

import numpy as np
import pytest
from fpgashare.catalogue.platform import load_platform, manifest_at_pixels_per_clock
from fpgashare.hdl_sim.board import SimBoard

from tests.harness_episodes import MODULES, episode

pytestmark = pytest.mark.rtl



@pytest.fixture(scope="module")
def platform(tmp_path_factory):
    path = manifest_at_pixels_per_clock("pynq-z2", 1, tmp_path_factory.mktemp("lib") / "small.toml", MODULES)
    return load_platform(path)


def board_pair(platform, external: bool) -> tuple[SimBoard, SimBoard]:
    """Two instances of one build: by the levels' phases, and by eval() whole."""
    phases, whole = SimBoard(platform, external=external), SimBoard(platform, external=external)
    whole.rtl.set_whole_eval(True)
    return phases, whole


@pytest.mark.parametrize("external", [True, False], ids=["modules outside", "modules inside"])
def test_the_levels_phases_run_as_eval_whole(platform, external, fresh_seed):
    seed = fresh_seed
    phases, whole = board_pair(platform, external)
    assert episode(phases, platform, np.random.default_rng(seed)) == \
        episode(whole, platform, np.random.default_rng(seed)), f"seed {seed}"
    assert phases.rtl.evaluations() == whole.rtl.evaluations(), f"seed {seed}"

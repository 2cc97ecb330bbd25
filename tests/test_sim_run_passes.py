"""``fpgashare sim run`` on a chain longer than the slots: passes through memory, bit-exact."""

from __future__ import annotations

import numpy as np
import pytest
from fpgashare.backends.simrun import chain_board, resolve_chain, run_chain
from fpgashare.catalogue.platform import load_platform
from fpgashare.catalogue.vision_ref import chain_reference

pytestmark = pytest.mark.rtl


def test_four_stages_on_two_slots_run_in_two_passes_bit_exact(fresh_seed):
    platform = load_platform("pynq-z2")
    stages = resolve_chain(["rgb2gray", "gauss3x3", "sobel_mag", "threshold"], {})
    rng = np.random.default_rng(fresh_seed)
    frame = rng.integers(0, 256, (int(rng.integers(16, 40)), int(rng.integers(16, 40)), 3), dtype=np.uint8)
    result = run_chain(chain_board(platform, stages), stages, frame)
    assert len(result.passes) == 2, fresh_seed
    assert [len(p) for p in result.passes] == [2, 2], fresh_seed
    assert np.array_equal(result.output, chain_reference(stages, frame)), fresh_seed
    assert result.pixels_per_s > 0, fresh_seed

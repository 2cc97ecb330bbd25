"""The model backend is a twin of the RTL: same outputs, same load cycles, frame cycles within 2%;
both refuse to run a module a slot does not hold."""

from __future__ import annotations

import numpy as np
import pytest
from fpgashare.backends import make_backend
from fpgashare.backends.simrun import assign_slots, resolve_chain
from fpgashare.catalogue.platform import load_platform, manifest_at_pixels_per_clock
from fpgashare.errors import FpgashareError

CHAINS = [["gauss3x3", "sobel_mag", "threshold"], ["rgb2gray", "box3x3", "downscale2x"],
          ["downscale2x", "sharpen3x3"], ["threshold"], ["laplacian3x3", "downscale2x", "sobel_x"]]


@pytest.fixture(scope="module")
def twins(zcu104):
    return make_backend("model", zcu104), make_backend("sim", zcu104)


@pytest.mark.rtl
@pytest.mark.parametrize("chain", CHAINS, ids=["+".join(c) for c in CHAINS])
def test_twin_matches_rtl(twins, zcu104, chain):
    model, sim = twins
    stages = resolve_chain(chain, {})
    slots = [s.index for s in assign_slots(zcu104, stages)]
    for slot, stage in zip(slots, stages, strict=True):
        a, b = model.load(slot, stage.kind.name), sim.load(slot, stage.kind.name)
        assert a.ok and b.ok and a.port_cycles == b.port_cycles
    rng = np.random.default_rng(len(chain))
    for rows, cols in ((64, 64), (96, 200), (240, 320)):
        shape = (rows, cols, 3) if stages[0].kind.channels_in == 3 else (rows, cols)
        frame = rng.integers(0, 256, shape, dtype=np.uint8)
        a, b = model.run_frame(slots, stages, frame), sim.run_frame(slots, stages, frame)
        assert np.array_equal(a.output, b.output)
        assert abs(a.cycles - b.cycles) <= 0.02 * b.cycles, (a.cycles, b.cycles)


CHAINS_X4 = [["gauss3x3", "sobel_mag", "threshold"], ["downscale2x", "sharpen3x3"], ["fast9"],
             ["erode3x3", "median3x3", "moments"], ["sobel_x", "downscale2x", "dilate3x3"],
             ["rgb2gray", "gauss3x3", "threshold"], ["rgb2hsv", "in_range", "moments"],
             ["absdiff", "threshold", "erode3x3", "downscale2x"], ["bg_update"]]


@pytest.fixture(scope="module")
def twins_x4(tmp_path_factory):
    """The zcu104 at 4 pixels per clock (every module; RGB and frame pairs in 32-bit lanes of a
    128-bit beat): the model's cycles must follow the manifest."""
    platform = load_platform(manifest_at_pixels_per_clock("zcu104", 4, tmp_path_factory.mktemp("x4") / "z.toml"))
    return platform, make_backend("model", platform), make_backend("sim", platform)


@pytest.mark.rtl
@pytest.mark.parametrize("chain", CHAINS_X4, ids=["+".join(c) for c in CHAINS_X4])
def test_twin_matches_rtl_at_four_pixels_per_clock(twins_x4, chain):
    platform, model, sim = twins_x4
    stages = resolve_chain(chain, {})
    slots = [s.index for s in assign_slots(platform, stages)]
    for slot, stage in zip(slots, stages, strict=True):
        assert model.load(slot, stage.kind.name).ok and sim.load(slot, stage.kind.name).ok
    rng = np.random.default_rng(len(chain))
    channels = stages[0].kind.channels_in
    for rows, cols in ((64, 64), (97, 203), (240, 322)):
        frame = rng.integers(0, 256, (rows, cols, channels) if channels > 1 else (rows, cols), dtype=np.uint8)
        a, b = model.run_frame(slots, stages, frame), sim.run_frame(slots, stages, frame)
        assert np.array_equal(a.output, b.output)
        assert abs(a.cycles - b.cycles) <= 0.02 * b.cycles, (rows, cols, a.cycles, b.cycles)


def test_backends_refuse_what_a_slot_does_not_hold(zcu104):
    model = make_backend("model", zcu104)
    stages = resolve_chain(["gauss3x3"], {})
    with pytest.raises(FpgashareError, match="slot 0 holds nothing, not conv3x3"):
        model.run_frame([0], stages, np.zeros((16, 16), np.uint8))
    assert model.load(0, "threshold").ok and model.resident(0) == "threshold"
    with pytest.raises(FpgashareError, match="slot 0 holds threshold"):
        model.run_frame([0], stages, np.zeros((16, 16), np.uint8))
    with pytest.raises(FpgashareError, match="slot 7 does not exist"):
        model.load(7, "threshold")
    with pytest.raises(FpgashareError, match="unknown backend"):
        make_backend("fpga", zcu104)

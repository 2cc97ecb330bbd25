"""dnn_tile variants: a manifest's ``params`` choose the tile a platform synthesizes, simulates and
plans for; bad params are refused naming the key; the planner, program sizes and refusals follow
the platform's variant."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from fpgashare.catalogue.platform import load_platform
from fpgashare.catalogue.resources import data_dir
from fpgashare.dnn.cycle_model import segment_cycles
from fpgashare.dnn.models import get_model
from fpgashare.dnn.planning import dnn_plan, link_model, misfit, program_words
from fpgashare.dnn.tile_format import DEFAULT_TILE, TileSpec, footprint, load_stream
from fpgashare.errors import ManifestError

from tests.test_dnn_partition import random_network

PARAMS = 'params = { p = 4, act_entries = 4096, w_entries = 1024, pg_entries = 64, max_layers = 16, memory = "block" }'


def test_each_platform_builds_its_variant(pynq_z2, zcu104):
    assert pynq_z2.dnn_tile == TileSpec(p=4, act_entries=4096, w_entries=1024, pg_entries=64, uram=False)
    assert zcu104.dnn_tile == DEFAULT_TILE and DEFAULT_TILE.uram
    rtl = pynq_z2.rtl_parameters()
    assert (rtl["DNN_P"], rtl["DNN_ACT_ENTRIES"], rtl["DNN_URAM"]) == (4, 4096, 0)
    assert zcu104.rtl_parameters()["DNN_URAM"] == 1
    # The PYNQ-Z2 offers the tile in both slots, within each slot's budget.
    assert [s.name for s in pynq_z2.slots_for("dnn_tile")] == [s.name for s in pynq_z2.slots]
    need = pynq_z2.module("dnn_tile").resources
    assert need.get("uram", 0) == 0 and all(need[r] <= s.resources.get(r, 0) for s in pynq_z2.slots for r in need)


def _with(tmp_path: Path, new: str, old: str = PARAMS) -> Path:
    text = (data_dir("platform") / "pynq-z2.toml").read_text()
    assert old in text
    path = tmp_path / "variant.toml"
    path.write_text(text.replace(old, new, 1))
    return path


@pytest.mark.parametrize(("new", "expected"), [
    (PARAMS.replace("p = 4", "p = 6"), r"params\.p must be a multiple of 4"),
    (PARAMS.replace("act_entries = 4096", "act_entries = 3000"), r"params\.act_entries must be a power of two"),
    (PARAMS.replace("max_layers = 16", "max_layers = 64"), r"params\.max_layers must be at most 32"),
    (PARAMS.replace('"block"', '"ultra"'), r"params\.memory is 'ultra' but family 'zynq7000' has no UltraRAM"),
    (PARAMS.replace('"block"', '"flash"'), r"params\.memory must be one of ultra, block"),
    (PARAMS.replace("p = 4", "lanes = 4"), r"unknown key module\[\d+\]\.params\.lanes"),
    (PARAMS.replace("p = 4", 'p = "4"'), r"params\.p must be int"),
])
def test_bad_params_name_the_key(tmp_path, new, expected):
    with pytest.raises(ManifestError, match=expected):
        load_platform(_with(tmp_path, new))


def test_params_belong_to_dnn_tile_only(tmp_path):
    path = _with(tmp_path, 'name = "threshold"\nparams = { p = 4 }', 'name = "threshold"')
    with pytest.raises(ManifestError, match=r"module\[\d+\]\.params: only dnn_tile takes params"):
        load_platform(path)


def test_missing_params_are_the_default_tile(tmp_path):
    text = (data_dir("platform") / "zcu104.toml").read_text()
    assert "params" not in text.split('name = "dnn_tile"')[1].split("[[module]]")[0]


@pytest.mark.parametrize("seed", range(8))
def test_planner_and_program_follow_the_variant(pynq_z2, seed):
    """On generated networks: the platform's plan is the cycle model of its own variant, and the
    load stream it counts is the one written for that variant."""
    from fpgashare.dnn.partition import partition

    rng = np.random.default_rng(seed)
    spec = pynq_z2.dnn_tile
    while True:     # a network whose every layer fits the variant: a tile a layer always fits
        net = random_network(rng, int(rng.integers(1, 7)))
        if all(misfit_free(net, spec, i) for i in range(len(net.layers))):
            break
    plan = partition(net, len(net.layers), link_model(pynq_z2), spec, clock_hz=pynq_z2.fabric_clock_hz)
    for stage in plan.stages:
        cycles, per_layer = segment_cycles(net, stage.start, stage.stop, link_model(pynq_z2), spec)
        assert stage.cycles == cycles and list(stage.layer_cycles) == per_layer
        assert load_stream(net, stage.start, stage.stop, spec).size > 0


def misfit_free(net, spec: TileSpec, i: int) -> bool:
    return footprint(net, i, i + 1, spec).problem(spec) is None


def test_shipped_models_on_the_pynq_variant(pynq_z2):
    net = get_model("digits_cnn")
    plan = dnn_plan(pynq_z2, "digits_cnn", 2)
    # A 4x4 array takes four passes where the 8x8 takes one for the same channels: slower.
    default = segment_cycles(net, 0, len(net.layers), link_model(pynq_z2), DEFAULT_TILE)[0]
    assert dnn_plan(pynq_z2, "digits_cnn", 1).bottleneck_cycles > default
    assert plan.clock_hz == pynq_z2.fabric_clock_hz
    words = program_words("digits_cnn", 0, len(net.layers), pynq_z2.dnn_tile)
    assert words == load_stream(net, 0, len(net.layers), pynq_z2.dnn_tile).size
    assert words != program_words("digits_cnn", 0, len(net.layers))
    assert misfit(pynq_z2, "digits_cnn") is None
    why = misfit(pynq_z2, "edge_cnn")
    assert why and "edge_cnn does not fit pynq-z2's dnn_tile (P=4" in why and "activation entries" in why


def test_a_model_too_big_for_the_variant_is_refused_with_a_reason():
    from fpgashare.cli.bench import bench

    suite = Path(__file__).resolve().parent.parent / "benchmarks" / "workloads" / "cameras_edge_cnn_pynq_z2.toml"
    result, = bench(str(suite), ["edf"])["results"]
    assert result["totals"]["dnn_images"] == 0
    assert "edge_cnn does not fit pynq-z2's dnn_tile" in result["bound"]["refused"]

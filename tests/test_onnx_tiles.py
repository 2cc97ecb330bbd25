"""Imported ONNX models on 1-4 dnn_tiles of the simulated board (RTL): outputs bit-exact with the
import's integer reference, for the shipped digits example and for a generated net whose ReLU
scale differs from its conv's (a rescale layer on the tile). The full held-out set runs in
benchmarks/onnx_import.py."""

from __future__ import annotations

import numpy as np
import pytest
from fpgashare.dnn.onnx_example import split, to_input
from fpgashare.dnn.onnx_import import import_onnx
from fpgashare.dnn.onnx_shipped import SHIPPED_ONNX
from fpgashare.dnn.partition import partition, plan_for
from fpgashare.dnn.reference import run_network

from tests.onnx_graphs import float_model, quantize, random_arch, with_fan_ins

pytestmark = pytest.mark.rtl
pytest.importorskip("onnxruntime")
SPLITS = {1: [(0, 6)], 2: [(0, 2), (2, 6)], 3: [(0, 2), (2, 4), (4, 6)], 4: [(0, 1), (1, 2), (2, 4), (4, 6)]}


@pytest.fixture(scope="module")
def zcu_board(zcu104):
    from fpgashare.hdl_sim.board import SimBoard

    return SimBoard(zcu104)


def run_on_tiles(board, imported, plan, x):
    from fpgashare.dnn.tile_chain import TileChain

    board.rtl.reset()
    activations = imported.quantize_input(x)
    run = TileChain(board, imported.network, plan).run(activations)
    assert np.array_equal(run.outputs, run_network(imported.network, activations))
    assert np.array_equal(imported.outputs(run.outputs), imported.reference(x))
    return run


@pytest.mark.parametrize("k", [1, 2, 3, 4])
def test_digits_example_on_k_tiles(zcu_board, k):
    imported = import_onnx(SHIPPED_ONNX["digits_qdq"])
    _, _, images, _ = split()
    x = to_input(images[k * 16:(k + 1) * 16])       # a different sample on each chain
    run_on_tiles(zcu_board, imported, plan_for(imported.network, SPLITS[k]), x)


def test_generated_net_with_a_rescale_layer_on_two_tiles(zcu_board, tmp_path):
    rng = np.random.default_rng(11)
    dims, layers = random_arch(rng)
    layers = with_fan_ins(dims, layers)
    for spec in layers:
        if spec["op"] == "conv":
            spec["relu"] = True
    x = rng.random((80, *dims), dtype=np.float32)
    overrides = {f"conv{i}": [{"rmin": np.float32(-4.0), "rmax": np.float32(4.0)}]
                 for i, spec in enumerate(layers) if spec["op"] == "conv"}
    path = quantize(float_model(rng, dims, layers), x[:64], tmp_path / "g.onnx", overrides=overrides)
    imported = import_onnx(path)
    assert len(imported.network.layers) > len([s for s in layers if s["op"] != "flatten"])
    run_on_tiles(zcu_board, imported, partition(imported.network, 2), x[64:])

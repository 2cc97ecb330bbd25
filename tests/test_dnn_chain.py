"""digits_cnn and edge_cnn on 1-4 dnn_tiles in the simulated shell: every tile enters its slot
through the configuration port; logits bit-exact with the numpy reference, predictions identical,
per-layer cycles equal to the cycle model; the CLI reports it."""

from __future__ import annotations

import json

import numpy as np
import pytest
from fpgashare.cli.main import main
from fpgashare.dnn.models import digits_cnn, edge_cnn
from fpgashare.dnn.partition import partition, plan_for
from fpgashare.dnn.reference import logits
from fpgashare.dnn.train_digits import digits_split

pytestmark = pytest.mark.rtl

SPLITS = {1: [(0, 6)], 2: [(0, 2), (2, 6)], 3: [(0, 2), (2, 4), (4, 6)], 4: [(0, 1), (1, 2), (2, 4), (4, 6)]}


@pytest.fixture(scope="module")
def zcu_board(zcu104):
    from fpgashare.hdl_sim.board import SimBoard

    return SimBoard(zcu104)


def check_chain(board, net, plan, images):
    from fpgashare.dnn.tile_chain import TileChain

    board.rtl.reset()
    run = TileChain(board, net, plan).run(images)
    got = run.outputs.reshape(len(images), -1)
    want = logits(net, images)
    assert np.array_equal(got, want)
    assert np.array_equal(got.argmax(1), want.argmax(1))
    for stage, measured in zip(plan.stages, run.layer_cycles, strict=True):
        for model, seen in zip(stage.layer_cycles, measured, strict=True):
            assert abs(seen - model) <= 0.05 * model
    for stage, seen in zip(plan.stages, run.stage_image_cycles, strict=True):
        assert abs(seen - stage.cycles) <= 0.05 * stage.cycles
    return run


@pytest.mark.parametrize("k", [1, 2, 3, 4])
def test_digits_on_k_tiles(zcu_board, k):
    net = digits_cnn()
    images = digits_split()[2][:24]
    check_chain(zcu_board, net, plan_for(net, SPLITS[k]), images)
    check_chain(zcu_board, net, partition(net, k), images)   # the partitioner's own choice


def test_edge_cnn_on_four_tiles(zcu_board):
    net = edge_cnn()
    images = np.random.default_rng(3).integers(0, 256, (2, 128, 128), dtype=np.uint8)
    run = check_chain(zcu_board, net, partition(net, 4), images)
    assert len(run.stage_image_cycles) == 4


@pytest.mark.parametrize("k", [1, 2])
def test_digits_on_the_pynq_variant(board, pynq_z2, k):
    """The PYNQ-Z2's 4x4 block-RAM tile (its manifest's params) in its slots: the chain takes the
    platform's variant, bit-exact, cycles as its cycle model says."""
    from fpgashare.dnn.planning import link_model
    from fpgashare.dnn.tile_chain import TileChain

    net = digits_cnn()
    images = digits_split()[2][:12]
    plan = partition(net, k, link_model(pynq_z2), pynq_z2.dnn_tile, clock_hz=pynq_z2.fabric_clock_hz)
    assert len(plan.stages) == k
    run = TileChain(board, net, plan).run(images)
    assert np.array_equal(run.outputs.reshape(len(images), -1), logits(net, images))
    for stage, measured in zip(plan.stages, run.layer_cycles, strict=True):
        assert list(stage.layer_cycles) == measured                     # every layer, exactly
    # A stage upstream of a slower one waits for it to take each image (its image counter includes
    # the wait); the slowest stage runs as modelled, and so does the batch.
    slowest = max(range(k), key=lambda i: plan.stages[i].cycles)
    assert abs(run.stage_image_cycles[slowest] - plan.bottleneck_cycles) <= 0.05 * plan.bottleneck_cycles
    assert all(seen >= 0.95 * stage.cycles for stage, seen in zip(plan.stages, run.stage_image_cycles, strict=True))
    assert abs(run.cycles - plan.batch_cycles(len(images))) <= 0.05 * plan.batch_cycles(len(images))


def test_cli_eval_reports_and_rejects(tmp_path, capsys):
    path = tmp_path / "digits.npz"
    _, _, images, labels = digits_split()
    np.savez(path, images=images[:40], labels=labels[:40])
    assert main(["dnn", "eval", "--model", "digits_cnn", "--tiles", "3", "--images", str(path), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["images"] == 40 and report["agree_with_reference"] == 1.0
    assert report["accuracy"] >= 0.9
    assert report["predicted_cycles_per_image"] == report["plan"]["bottleneck_cycles"]
    assert report["cycles_per_image"] >= report["predicted_cycles_per_image"]
    for key in ("wall_s", "plan", "cycles_per_image"):
        assert key in report
    np.savez(path, images=images[:4].astype(np.int16))
    assert main(["dnn", "eval", "--model", "digits_cnn", "--tiles", "1", "--images", str(path)]) == 2
    assert "images must be uint8" in capsys.readouterr().err
    assert main(["dnn", "eval", "--model", "digits_cnn", "--tiles", "3", "--platform", "pynq-z2"]) == 2
    assert "2 slot(s) that can hold a dnn_tile" in capsys.readouterr().err


def test_cli_eval_takes_a_network_file(tmp_path, capsys):
    from fpgashare.dnn.network import save_network

    path = tmp_path / "net.npz"
    save_network(edge_cnn(), path)
    assert main(["dnn", "eval", "--model", str(path), "--tiles", "2", "--backend", "reference", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["model"] == "edge_cnn" and report["plan"]["tiles_used"] == 2
    assert main(["dnn", "eval", "--model", "resnet50", "--tiles", "1"]) == 2
    err = capsys.readouterr().err
    assert "unknown model 'resnet50'" in err and "digits_qdq" in err and "(.onnx)" in err
    (tmp_path / "bad.npz").write_bytes(b"junk")
    assert main(["dnn", "eval", "--model", str(tmp_path / "bad.npz"), "--tiles", "1"]) == 2
    assert "not a network file" in capsys.readouterr().err

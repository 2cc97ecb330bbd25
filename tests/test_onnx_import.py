"""The shipped ONNX example (digits_qdq): the script rebuilds it (the same integers and scales) with
numpy training and onnxruntime's quantize_static; imported, its integer reference matches
onnxruntime on the 540 held-out digits (>= 99% of values equal, none more than 1 apart, top-1
>= 99.5%) and reads them at >= 97%; the CLI reports the import and writes the outputs."""

from __future__ import annotations

import json

import numpy as np
import pytest
from fpgashare.cli.main import main
from fpgashare.dnn.onnx_example import build, split, to_input
from fpgashare.dnn.onnx_import import import_onnx
from fpgashare.dnn.onnx_model import onnxruntime_outputs
from fpgashare.dnn.onnx_shipped import SHIPPED_ONNX

pytest.importorskip("onnxruntime")
SHIPPED = SHIPPED_ONNX["digits_qdq"]


@pytest.fixture(scope="module")
def held_out():
    _, _, images, labels = split()
    return to_input(images), labels


def test_script_rebuilds_the_shipped_model(tmp_path):
    """Same integers and scales (the bytes may differ in names or order with another onnxruntime)."""
    result = build(tmp_path / "digits.onnx")
    assert result["held_out"] >= 500 and result["int8_accuracy"] >= 0.97
    rebuilt, shipped = import_onnx(tmp_path / "digits.onnx"), import_onnx(SHIPPED)
    assert rebuilt.input_q == shipped.input_q and rebuilt.output_q == shipped.output_q
    assert len(rebuilt.network.layers) == len(shipped.network.layers)
    for mine, theirs in zip(rebuilt.network.layers, shipped.network.layers, strict=True):
        assert (mine.kind, mine.relu, mine.kernel, mine.pad) == (theirs.kind, theirs.relu, theirs.kernel, theirs.pad)
        for name in ("weights", "bias", "mult", "shift") if mine.has_params else ():
            assert np.array_equal(getattr(mine, name), getattr(theirs, name)), name


def test_reference_matches_onnxruntime_on_the_held_out_set(held_out):
    x, labels = held_out
    assert len(x) >= 500
    imported = import_onnx(SHIPPED)
    ours, theirs = imported.reference(x), onnxruntime_outputs(SHIPPED, imported, x)
    assert ours.shape == theirs.shape == (len(x), 10)
    diff = np.abs(ours.astype(np.int32) - theirs)
    assert np.mean(diff == 0) >= 0.99 and diff.max() <= 1
    assert np.mean(ours.argmax(1) == theirs.argmax(1)) >= 0.995
    assert np.mean(ours.argmax(1) == labels) >= 0.97
    assert [ly.kind for ly in imported.network.layers] == ["conv", "maxpool", "conv", "maxpool", "fc", "fc"]
    assert all(ly.relu for ly in imported.network.layers if ly.has_params and ly is not imported.network.layers[-1])


def test_cli_import_and_eval_write_outputs(tmp_path, capsys, held_out):
    assert main(["dnn", "import", str(SHIPPED), "--json", "--out", str(tmp_path / "net.npz")]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["accepted"] and report["refused"] == [] and report["plan"]["tiles_used"] >= 1
    assert (tmp_path / "net.npz").exists()
    x, labels = held_out
    np.savez(tmp_path / "in.npz", images=x[:50], labels=labels[:50])
    out = tmp_path / "out.npz"
    assert main(["dnn", "eval", "--model", str(SHIPPED), "--images", str(tmp_path / "in.npz"), "--tiles", "2",
                 "--backend", "reference", "--out", str(out), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["onnxruntime"]["max_abs_diff"] <= 1
    with np.load(out) as data:
        assert np.array_equal(data["outputs"], import_onnx(SHIPPED).reference(x[:50]))
    np.savez(tmp_path / "bad.npz", images=(x[:4] * 255).astype(np.uint8))
    assert main(["dnn", "eval", "--model", str(SHIPPED), "--images", str(tmp_path / "bad.npz"), "--tiles", "1",
                 "--backend", "reference"]) == 2
    assert "is float of shape (N, 1, 8, 8)" in capsys.readouterr().err


def test_eval_runs_a_model_whose_batch_is_fixed_at_one(tmp_path, capsys, fresh_seed):
    """Exporters often write the input as (1, C, H, W): the comparison with onnxruntime feeds it one
    image at a time instead of failing on N images."""
    import onnx

    from tests.onnx_graphs import float_model, quantize, random_arch, with_fan_ins

    rng = np.random.default_rng(fresh_seed)
    dims, layers = random_arch(rng)
    layers = with_fan_ins(dims, layers)
    x = rng.random((12, *dims), dtype=np.float32)
    model = onnx.load(quantize(float_model(rng, dims, layers), x, tmp_path / "m.onnx"))
    for value in (*model.graph.input, *model.graph.output):
        value.type.tensor_type.shape.dim[0].dim_value = 1
    onnx.save(model, tmp_path / "fixed.onnx")
    np.savez(tmp_path / "in.npz", images=x[:5])
    assert main(["dnn", "eval", "--model", str(tmp_path / "fixed.onnx"), "--images", str(tmp_path / "in.npz"),
                 "--tiles", "1", "--backend", "reference", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["images"] == 5 and report["onnxruntime"]["max_abs_diff"] <= 1, (fresh_seed, report)


def test_example_script_help_is_its_whole_first_paragraph(capsys):
    from fpgashare.dnn import onnx_example

    with pytest.raises(SystemExit):
        onnx_example.main(["--help"])
    first = " ".join(onnx_example.__doc__.split("\n\n")[0].split())
    assert first in " ".join(capsys.readouterr().out.split())

"""What the importer refuses, and that it says which node and why: unreadable and malformed models,
operators the tiles do not run, attributes they cannot represent, asymmetric activations, float
weights; a generated model with one node changed names exactly that node."""

from __future__ import annotations

import sys

import numpy as np
import onnx
import pytest
from fpgashare.dnn.onnx_graph import UnsupportedModelError
from fpgashare.dnn.onnx_import import import_onnx
from fpgashare.errors import NetworkError
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from onnx import helper

from tests.onnx_graphs import float_model, quantize, with_fan_ins

pytest.importorskip("onnxruntime")
DIMS = (1, 8, 8)
LAYERS = [{"op": "conv", "oc": 4, "k": 3, "stride": 1, "pad": 1, "relu": True}, {"op": "pool"},
          {"op": "flatten"}, {"op": "gemm", "oc": 5, "relu": False}]


def small_float(seed: int = 0) -> onnx.ModelProto:
    return float_model(np.random.default_rng(seed), DIMS, with_fan_ins(DIMS, LAYERS))


def node(model: onnx.ModelProto, name: str):
    return next(n for n in model.graph.node if n.name == name)


def set_attr(n, name: str, value) -> None:
    for a in list(n.attribute):
        if a.name == name:
            n.attribute.remove(a)
    n.attribute.append(helper.make_attribute(name, value))


def quantized(model: onnx.ModelProto, tmp_path, symmetric: bool = True):
    x = np.random.default_rng(1).random((32, *DIMS), dtype=np.float32)
    return quantize(model, x, tmp_path / "m.onnx", symmetric=symmetric)


def refusal(path) -> str:
    with pytest.raises(UnsupportedModelError) as err:
        import_onnx(path)
    return str(err.value)


def test_unreadable_and_malformed_models(tmp_path):
    (tmp_path / "junk.onnx").write_bytes(b"\x08\x07garbage that is no protobuf \xff\xff")
    with pytest.raises(NetworkError, match=r"not an ONNX model|malformed"):
        import_onnx(tmp_path / "junk.onnx")
    with pytest.raises(NetworkError, match="no such file"):
        import_onnx(tmp_path / "missing.onnx")
    model = small_float()
    node(model, "conv0").input[1] = "no_such_tensor"
    with pytest.raises(NetworkError, match="malformed ONNX model"):
        import_onnx(model.SerializeToString())


def test_float_model_and_float_weights_are_refused(tmp_path):
    msg = refusal(small_float())
    assert "must go to exactly one QuantizeLinear" in msg and "the model is not quantized" in msg
    assert "quantize_static" in msg
    q = onnx.load(quantized(small_float(), tmp_path))
    conv = node(q, "conv0")
    dq = next(n for n in q.graph.node if n.output[0] == conv.input[1])
    w = next(i for i in q.graph.initializer if i.name == dq.input[0])
    scale = next(i for i in q.graph.initializer if i.name == dq.input[1])
    from onnx import numpy_helper

    floats = numpy_helper.to_array(w).astype(np.float32) * numpy_helper.to_array(scale)
    q.graph.initializer.append(numpy_helper.from_array(floats, "float_w"))
    conv.input[1] = "float_w"
    q.graph.node.remove(dq)
    msg = refusal(q)
    assert "'conv0' (Conv)" in msg and "float" in msg


@pytest.mark.parametrize("change,words", [
    (lambda m: set_attr(node(m, "conv0"), "dilations", [2, 2]), ["'conv0' (Conv)", "dilations"]),
    (lambda m: set_attr(node(m, "conv0"), "strides", [5, 5]), ["'conv0' (Conv)", "strides"]),
    (lambda m: set_attr(node(m, "conv0"), "pads", [1, 0, 1, 0]), ["'conv0' (Conv)", "pads"]),
    (lambda m: set_attr(node(m, "conv0"), "group", 2), ["'conv0' (Conv)", "group 2"]),
    (lambda m: set_attr(node(m, "conv0"), "kernel_shape", [3, 1]), ["'conv0' (Conv)", "kernel_shape"]),
    (lambda m: set_attr(node(m, "pool1"), "kernel_shape", [3, 3]), ["'pool1' (MaxPool)", "2x2"]),
    (lambda m: set_attr(node(m, "pool1"), "ceil_mode", 1), ["'pool1' (MaxPool)", "ceil_mode"]),
    (lambda m: set_attr(node(m, "fc3"), "alpha", 0.5), ["'fc3' (Gemm)", "alpha"]),
    (lambda m: set_attr(node(m, "flat2"), "axis", 2), ["'flat2' (Flatten)", "axis 2"]),
])
def test_attributes_the_tile_cannot_run_are_refused(tmp_path, change, words):
    """The quantized model's node changed after quantization: the importer reads the attribute."""
    model = onnx.load(quantized(small_float(), tmp_path))
    change(model)
    msg = refusal(model)
    for w in words:
        assert w in msg, msg


def test_asymmetric_activations_are_refused(tmp_path):
    msg = refusal(quantized(small_float(), tmp_path, symmetric=False))
    assert "zero point" in msg and "ActivationSymmetric" in msg and "(QuantizeLinear)" in msg


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1), op=st.sampled_from(["Sigmoid", "Tanh", "Softplus", "Elu"]))
def test_an_unsupported_operator_is_named(tmp_path, seed, op):
    """Insert ``op`` after a randomly chosen node of the chain: the refusal names it and its type."""
    model = small_float(seed % 1000)
    rng = np.random.default_rng(seed)
    nodes = list(model.graph.node)
    at = int(rng.integers(0, len(nodes)))
    src = nodes[at].output[0]
    name = f"inserted_{op.lower()}"
    for later in nodes[at + 1:]:
        for k, inp in enumerate(later.input):
            if inp == src:
                later.input[k] = name
    if model.graph.output[0].name == src:
        model.graph.output[0].name = name
    model.graph.node.insert(at + 1, helper.make_node(op, [src], [name], name=name))
    msg = refusal(quantized(model, tmp_path))
    assert f"'{name}' ({op})" in msg and "not one the tiles run" in msg


def test_missing_onnx_package_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "onnx", None)
    with pytest.raises(NetworkError, match=r"fpgashare\[onnx\]"):
        import_onnx("anything.onnx")


@pytest.mark.parametrize("value,words", [(1e-30, "rescale factor"), (np.full(3, 0.1), "quantized per tensor"),
                                         (-0.5, "positive float32")])
def test_scales_the_tile_cannot_represent_are_refused(tmp_path, value, words):
    """The scale of conv0's output requantization, replaced: the refusal names a node and the reason."""
    from onnx import numpy_helper

    model = onnx.load(quantized(small_float(), tmp_path))
    q = next(n for n in model.graph.node if n.op_type == "QuantizeLinear" and n.input[0] == "conv0")
    init = next(i for i in model.graph.initializer if i.name == q.input[1])
    init.CopyFrom(numpy_helper.from_array(np.asarray(value, np.float32), init.name))
    msg = refusal(model)
    assert words in msg and "node '" in msg, msg


def test_cli_import_lists_what_it_refuses(tmp_path, capsys):
    import json

    from fpgashare.cli.main import main

    model = small_float()
    nodes = list(model.graph.node)
    relu = next(n for n in nodes if n.op_type == "Relu")
    relu.op_type, relu.name = "Sigmoid", "squash"
    path = quantized(model, tmp_path)
    assert main(["dnn", "import", str(path), "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert not report["accepted"] and "'squash' (Sigmoid)" in report["refused"][0]
    (tmp_path / "junk.onnx").write_bytes(b"junk")
    assert main(["dnn", "import", str(tmp_path / "junk.onnx")]) == 2
    assert "not an ONNX model" in capsys.readouterr().err

"""Generated conv nets (random shapes, kernels, strides, pads, pools, fc widths, weights), quantized by
onnxruntime's quantize_static (QDQ or QOperator, per tensor or per channel): layer by layer (each
tile layer fed onnxruntime's own integers of its input) the outputs agree on >= 99% of values and
never by more than 1, the arithmetic's guarantee; end to end >= 99% of output values and >= 99% of
top-1 classes agree (one step upstream can move a value downstream by more than one step, so the
end-to-end maximum is the shipped example's test, not a property of every net)."""

from __future__ import annotations

import numpy as np
import pytest
from fpgashare.dnn.onnx_import import import_onnx
from fpgashare.dnn.onnx_model import onnxruntime_outputs
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.onnx_graphs import float_model, quantize, random_arch, with_fan_ins

pytest.importorskip("onnxruntime")


def layer_by_layer(path, imported, x) -> tuple[float, int, int]:
    """(share of equal values, largest difference, layers compared): each layer on onnxruntime's
    integers of its input, against onnxruntime's integers of its output."""
    import onnx
    import onnxruntime as ort
    from fpgashare.dnn.reference import run_layer

    model = onnx.shape_inference.infer_shapes(onnx.load(path))
    known = {v.name: v for v in model.graph.value_info}
    names = [t for t in imported.tensors if t in known]
    model.graph.output.extend(known[t] for t in names)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    got = dict(zip(names, sess.run(names, {imported.input_name: x}), strict=True))
    shapes = imported.network.shapes()

    def nhwc(t, hwc):
        h, w, c = hwc
        return t.reshape(len(t), c, h, w).transpose(0, 2, 3, 1).astype(np.int16) - (128 if t.dtype == np.uint8 else 0)

    equal, total, worst, compared = 0, 0, 0, 0
    for i, layer in enumerate(imported.network.layers):
        src, dst = imported.tensors[i], imported.tensors[i + 1]
        if src not in got or dst not in got:
            continue
        ours = run_layer(nhwc(got[src], shapes[i]).astype(np.int8), layer).astype(np.int16)
        diff = np.abs(ours - nhwc(got[dst], shapes[i + 1]))
        equal, total, compared = equal + int((diff == 0).sum()), total + diff.size, compared + 1
        worst = max(worst, int(diff.max()))
    return (equal / total if total else 1.0), worst, compared


def agreement(path, x):
    imported = import_onnx(path)
    ours, theirs = imported.reference(x), onnxruntime_outputs(path, imported, x)
    diff = np.abs(ours.astype(np.int32) - theirs)
    return imported, float(np.mean(diff == 0)), int(diff.max()), float(np.mean(ours.argmax(1) == theirs.argmax(1)))


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1), per_channel=st.booleans(), split_relu=st.booleans(), qoperator=st.booleans())
def test_generated_nets_agree_with_onnxruntime(tmp_path, seed, per_channel, split_relu, qoperator):
    rng = np.random.default_rng(seed)
    dims, layers = random_arch(rng)
    layers = with_fan_ins(dims, layers)
    x = rng.random((600, *dims), dtype=np.float32)
    overrides = None
    if split_relu:   # a conv's output range wider than its ReLU's: the import adds a rescale layer
        overrides = {f"conv{i}": [{"rmin": np.float32(-4.0), "rmax": np.float32(4.0)}]
                     for i, spec in enumerate(layers) if spec["op"] == "conv" and spec["relu"]}
    path = quantize(float_model(rng, dims, layers), x[:64], tmp_path / f"g{seed}.onnx", per_channel, True, overrides,
                    qoperator)
    imported, equal, worst, top1 = agreement(path, x[64:])
    assert equal >= 0.99 and top1 >= 0.99, (seed, layers, equal, worst, top1)
    layer_equal, layer_worst, compared = layer_by_layer(path, imported, x[64:])
    assert layer_equal >= 0.99 and layer_worst <= 1, (seed, layers, layer_equal, layer_worst)
    # QDQ quantizes every layer's output, so every layer is compared; QOperator graphs keep some in
    # float (a ReLU or max-pool after DequantizeLinear), and com.microsoft QGemm has no inferred type.
    assert compared == len(imported.network.layers) or qoperator, (compared, imported.tensors)
    convs = sum(1 for s in layers if s["op"] in ("conv", "gemm"))
    rescales = sum(1 for ly in imported.network.layers if ly.kind == "conv" and ly.kernel == 1
                   and ly.weights is not None and np.array_equal(ly.weights[:, 0, 0, :], np.eye(ly.out_channels)))
    assert len([ly for ly in imported.network.layers if ly.has_params]) >= convs
    if overrides and not qoperator:
        assert rescales >= 1


def test_uint8_zero_point_128_is_the_same_integers(tmp_path):
    """uint8 activations with zero point 128 (forced per tensor) import as int8 with zero point 0."""
    rng = np.random.default_rng(7)
    dims, layers = random_arch(rng)
    layers = with_fan_ins(dims, layers)
    model = float_model(rng, dims, layers)
    x = rng.random((300, *dims), dtype=np.float32)
    path = quantize(model, x[:64], tmp_path / "u8.onnx", symmetric=True)
    import onnx
    from onnx import numpy_helper

    m = onnx.load(path)
    for init in m.graph.initializer:   # re-express every int8 activation zero point 0 as uint8 128
        arr = numpy_helper.to_array(init)
        if init.name.endswith("zero_point") and arr.dtype == np.int8 and not init.name.startswith("w"):
            init.CopyFrom(numpy_helper.from_array((arr.astype(np.int16) + 128).astype(np.uint8), init.name))
    onnx.save(m, path)
    imported, equal, worst, top1 = agreement(path, x[64:])
    assert imported.output_q.dtype == "uint8" and imported.output_q.offset == 128
    assert equal >= 0.99 and worst <= 1 and top1 >= 0.995

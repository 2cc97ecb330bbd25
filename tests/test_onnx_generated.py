"""Generated conv nets (random shapes, kernels, strides, pads, pools, fc widths, weights), quantized by
onnxruntime's quantize_static (QDQ or QOperator, per tensor or per channel): the import's integer
reference agrees with onnxruntime on >= 99% of output values, never by more than 1, and on the
top-1 class of >= 99.5% of inputs."""

from __future__ import annotations

import numpy as np
import pytest
from fpgashare.dnn.onnx_import import import_onnx
from fpgashare.dnn.onnx_model import onnxruntime_outputs
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.onnx_graphs import float_model, quantize, random_arch, with_fan_ins

pytest.importorskip("onnxruntime")


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
    assert equal >= 0.99 and worst <= 1 and top1 >= 0.995, (seed, layers, equal, worst, top1)
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

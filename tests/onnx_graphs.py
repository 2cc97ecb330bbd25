"""Random float ONNX conv nets and their int8 quantization by onnxruntime's quantize_static, for the
import tests: a seeded generator of layer lists the tile can run (and of single-node mutations it
cannot)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static


def random_arch(rng: np.random.Generator) -> tuple[tuple[int, int, int], list[dict]]:
    """(input C, H, W) and a layer list: convs (kernel, stride, pad), ReLUs, pools, then fc layers."""
    c, h = int(rng.integers(1, 4)), int(rng.integers(6, 13))
    layers, size = [], h
    for _ in range(int(rng.integers(1, 4))):
        k = int(rng.choice([1, 3, 5])) if size >= 5 else 1
        stride = int(rng.integers(1, 3))
        pad = int(rng.integers(0, k // 2 + 1))
        layers.append({"op": "conv", "oc": int(rng.integers(2, 12)), "k": k, "stride": stride, "pad": pad,
                       "relu": bool(rng.random() < 0.8)})
        size = (size + 2 * pad - k) // stride + 1
        if size >= 4 and rng.random() < 0.5:
            layers.append({"op": "pool"})
            size //= 2
    layers.append({"op": "flatten"})
    for i in range(int(rng.integers(1, 3))):
        layers.append({"op": "gemm", "oc": int(rng.integers(3, 16)), "relu": i == 0 and rng.random() < 0.7})
    return (c, h, h), layers


def float_model(rng: np.random.Generator, dims: tuple[int, int, int], layers: list[dict]) -> onnx.ModelProto:
    """The layer list as a float ONNX graph with random weights (He-scaled) and biases."""
    nodes, inits, x = [], [], "x"
    c, h, w = dims
    width = c
    for i, spec in enumerate(layers):
        if spec["op"] == "conv":
            k = spec["k"]
            wt = rng.normal(0, np.sqrt(2 / (k * k * width)), (spec["oc"], width, k, k)).astype(np.float32)
            inits += [numpy_helper.from_array(wt, f"w{i}"),
                      numpy_helper.from_array(rng.normal(0, 0.1, spec["oc"]).astype(np.float32), f"b{i}")]
            nodes.append(helper.make_node("Conv", [x, f"w{i}", f"b{i}"], [f"conv{i}"], name=f"conv{i}",
                                          kernel_shape=[k, k], strides=[spec["stride"]] * 2, pads=[spec["pad"]] * 4))
            x, width = f"conv{i}", spec["oc"]
        elif spec["op"] == "pool":
            nodes.append(helper.make_node("MaxPool", [x], [f"pool{i}"], name=f"pool{i}", kernel_shape=[2, 2],
                                          strides=[2, 2]))
            x = f"pool{i}"
        elif spec["op"] == "flatten":
            nodes.append(helper.make_node("Flatten", [x], [f"flat{i}"], name=f"flat{i}", axis=1))
            x, width = f"flat{i}", None
        else:
            fan_in = spec.get("fan_in")
            wt = rng.normal(0, np.sqrt(2 / fan_in), (spec["oc"], fan_in)).astype(np.float32)
            inits += [numpy_helper.from_array(wt, f"w{i}"),
                      numpy_helper.from_array(rng.normal(0, 0.1, spec["oc"]).astype(np.float32), f"b{i}")]
            nodes.append(helper.make_node("Gemm", [x, f"w{i}", f"b{i}"], [f"fc{i}"], name=f"fc{i}", transB=1))
            x = f"fc{i}"
        if spec.get("relu"):
            nodes.append(helper.make_node("Relu", [x], [f"relu{i}"], name=f"relu{i}"))
            x = f"relu{i}"
    inp = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", c, h, w])
    out = helper.make_tensor_value_info(x, TensorProto.FLOAT, ["N", layers[-1]["oc"]])
    graph = helper.make_graph(nodes, "generated", [inp], [out], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def with_fan_ins(dims: tuple[int, int, int], layers: list[dict]) -> list[dict]:
    """Fill in each Gemm's input width from the shapes before it."""
    c, h, _ = dims
    size, width = h, c
    out = []
    for spec in layers:
        spec = dict(spec)
        if spec["op"] == "conv":
            size = (size + 2 * spec["pad"] - spec["k"]) // spec["stride"] + 1
            width = spec["oc"]
        elif spec["op"] == "pool":
            size //= 2
        elif spec["op"] == "flatten":
            width = width * size * size
        else:
            spec["fan_in"] = width
            width = spec["oc"]
        out.append(spec)
    return out


def quantize(model: onnx.ModelProto, calib: np.ndarray, path: Path, per_channel: bool = False,
             symmetric: bool = True, overrides: dict | None = None, qoperator: bool = False) -> Path:
    """quantize_static: QDQ (or QOperator: QLinearConv, QGemm), int8 weights, int8 activations
    (symmetric unless told otherwise)."""
    fpath = path.with_suffix(".float.onnx")
    onnx.save(model, fpath)

    class Reader(CalibrationDataReader):
        def __init__(self) -> None:
            self.it = iter([{"x": calib[i:i + 32]} for i in range(0, len(calib), 32)])

        def get_next(self):
            return next(self.it, None)

    extra = {"ActivationSymmetric": symmetric, "WeightSymmetric": True}
    if overrides:
        extra["TensorQuantOverrides"] = overrides
    fmt = QuantFormat.QOperator if qoperator else QuantFormat.QDQ
    quantize_static(str(fpath), str(path), Reader(), quant_format=fmt, per_channel=per_channel,
                    activation_type=QuantType.QInt8 if symmetric else QuantType.QUInt8,
                    weight_type=QuantType.QInt8, extra_options=extra)
    return path


def random_quantized(seed: int, tmp: Path, per_channel: bool = False) -> tuple[Path, np.ndarray, list[dict]]:
    """A random conv net quantized by onnxruntime, and float inputs (calibration is their first half)."""
    rng = np.random.default_rng(seed)
    dims, layers = random_arch(rng)
    layers = with_fan_ins(dims, layers)
    x = rng.random((128, *dims), dtype=np.float32)
    path = quantize(float_model(rng, dims, layers), x[:64], tmp / f"gen{seed}.onnx", per_channel=per_channel)
    return path, x, layers

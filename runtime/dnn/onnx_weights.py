"""Weights, biases and rescale factors of imported layers, in the tile's integer form.

Weights are the int8 values minus their zero point (which must make them symmetric), with one
scale per tensor or per output channel; biases are int32 in the accumulator's scale
s_x * s_w (onnxruntime's quantizer writes exactly that; a bias in another scale is rescaled by
rounding, a float bias is quantized by rounding); a rescale factor becomes the tile's
multiplier/shift pair, which holds a float32 ratio exactly.
"""

from __future__ import annotations

import numpy as np
from fpgashare.dnn.onnx_graph import Graph, QParams, refuse
from fpgashare.dnn.onnx_qonnx import constant_floats, constant_ints, is_qonnx_quant
from fpgashare.dnn.reference import multiplier_shift

INT32 = (-(2**31), 2**31 - 1)


def check_symmetric(node, q: QParams) -> None:
    """Refuse an activation quantization the tile cannot hold: its int8 values have zero point 0."""
    if (q.dtype, q.zero_point) not in (("int8", 0), ("uint8", 128)):
        raise refuse(node, f"activation quantized as {q.describe()}; the tile's activations are symmetric "
                           f"(int8 zero point 0, or uint8 zero point 128): quantize with ActivationSymmetric=True")


def rescale(node, ratio: np.float32) -> tuple[int, int]:
    """(multiplier, shift) of a rescale factor; refused if the tile's 31-bit multiplier and
    shift of 1..62 cannot hold it."""
    try:
        return multiplier_shift(float(ratio))
    except ValueError:
        raise refuse(node, f"rescale factor {float(ratio):.6g} (input scale x weight scale / output scale) is "
                           f"outside what the tile's multiplier and shift (1..62) hold") from None


def centered(node, values: np.ndarray, zero_point: np.ndarray, what: str) -> np.ndarray:
    """int8 values - zero point, refused unless the zero point makes them symmetric int8."""
    zp = np.unique(zero_point.astype(np.int64)) if zero_point is not None else np.array([0])
    want = 128 if values.dtype == np.uint8 else 0
    if values.dtype not in (np.int8, np.uint8) or zp.size != 1 or zp[0] != want:
        raise refuse(node, f"{what} are {values.dtype} with zero point(s) {zp.tolist()[:4]}; the tile takes "
                           f"symmetric int8 {what} (int8 zero point 0, or uint8 zero point 128)")
    return (values.astype(np.int16) - want).astype(np.int8)


def weight_scales(node, scale: np.ndarray, shape: tuple[int, ...], axis: int, out_axis: int, what: str) -> np.ndarray:
    """One float32 scale, or one per output channel along ``out_axis``."""
    if scale.dtype != np.float32 or not np.all(np.isfinite(scale)) or np.any(scale <= 0):
        raise refuse(node, f"{what} scales must be positive float32 values")
    if scale.size == 1:
        return scale.reshape(()).astype(np.float32)
    if scale.ndim != 1 or axis % len(shape) != out_axis or scale.size != shape[out_axis]:
        raise refuse(node, f"{what} have {scale.size} scales along axis {axis}; per-channel scales must follow "
                           f"the output channels (axis {out_axis} of {list(shape)})")
    return scale.astype(np.float32)


def weights_of(g: Graph, node, index: int, out_axis: int) -> tuple[np.ndarray, np.ndarray]:
    """(int8 weights, scales) of a float operator's weight input, the DequantizeLinear of a constant."""
    if index >= len(node.input) or not node.input[index]:
        raise refuse(node, "has no weight input")
    name = node.input[index]
    dq = g.producer.get(name)
    if is_qonnx_quant(dq):
        return constant_ints(g, dq, out_axis)
    if name in g.constants or dq is None or dq.op_type != "DequantizeLinear":
        raise refuse(node, f"weights {name!r} are float; the tile needs int8 weights (DequantizeLinear of an "
                           f"int8 constant, as quantize_static writes)")
    values = g.constant(dq, 0, "weights")
    zp = g.optional_constant(dq, 2, "weight zero point")
    scale = g.constant(dq, 1, "weight scale")
    axis = g.attrs(dq).get("axis", 1)
    return centered(dq, values, zp, "weights"), weight_scales(dq, scale, values.shape, axis, out_axis, "weights")


def int32_bias(node, values: np.ndarray, oc: int) -> np.ndarray:
    values = np.asarray(values).reshape(-1)
    if values.size != oc:
        raise refuse(node, f"bias has {values.size} values for {oc} output channels")
    if np.any(values < INT32[0]) or np.any(values > INT32[1]):
        raise refuse(node, "bias does not fit int32 in the accumulator's scale (input scale x weight scale)")
    return values.astype(np.int32)


def layer_bias(g: Graph, node, index: int | None, s_x: np.float32, w_scale: np.ndarray, oc: int) -> np.ndarray:
    """int32 bias [OC] in the accumulator's scale s_x * s_w of input ``index`` (zeros if absent)."""
    if index is None or index >= len(node.input) or not node.input[index]:
        return np.zeros(oc, np.int32)
    acc_scale = (np.float32(s_x) * w_scale).astype(np.float32)
    name = node.input[index]
    if name in g.constants:
        values = g.constants[name]
        if values.dtype == np.int32:
            return int32_bias(node, values, oc)
        if values.dtype.kind != "f":
            raise refuse(node, f"bias of type {values.dtype}; expected float or int32")
        return int32_bias(node, np.round(values.reshape(-1).astype(np.float64) / acc_scale), oc)
    dq = g.producer.get(name)
    if is_qonnx_quant(dq):
        return int32_bias(dq, np.round(constant_floats(g, dq).reshape(-1) / acc_scale), oc)
    if dq is None or dq.op_type != "DequantizeLinear":
        raise refuse(node, f"bias {name!r} must be a constant or the DequantizeLinear of an int32 constant")
    values = g.constant(dq, 0, "bias").reshape(-1).astype(np.int64)
    scale = g.constant(dq, 1, "bias scale").reshape(-1).astype(np.float32)
    zp = g.optional_constant(dq, 2, "bias zero point")
    if zp is not None and np.any(zp != 0):
        raise refuse(dq, "bias zero point must be 0")
    if scale.size not in (1, oc) or np.any(scale <= 0):
        raise refuse(dq, f"bias needs one positive scale or {oc}, got {scale.size}")
    if np.array_equal(np.broadcast_to(scale, (oc,)), np.broadcast_to(acc_scale, (oc,))):
        return int32_bias(dq, values, oc)
    # Another scale than the accumulator's: rescale, rounding to the nearest accumulator step.
    return int32_bias(dq, np.round(values * scale.astype(np.float64) / acc_scale.astype(np.float64)), oc)

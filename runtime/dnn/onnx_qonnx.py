"""QONNX's integer quantizer (``Quant`` / ``IntQuant``, as Brevitas and FINN export it) in the tile's terms.

``IntQuant(x, scale, zeropt, bitwidth)`` is ``(clamp(round(x / scale + zeropt), lo, hi) - zeropt) * scale``:
a QuantizeLinear and a DequantizeLinear in one node. On an activation the importer reads it as
exactly that (a per-tensor int8 quantization followed by the on-grid float); on a weight or bias
constant it computes the integers. What the tile can hold: zero point 0; activations signed 8-bit
(ints -128..127), or unsigned 7-bit (0..127, which is the tile's ReLU clamp); weights of at most 8
bits; rounding ROUND (half to even, as QuantizeLinear) or HALF_UP (the tile's own rounding).
"""

from __future__ import annotations

import numpy as np
from fpgashare.dnn.onnx_graph import Graph, QParams, refuse

QONNX_DOMAINS = ("qonnx.custom_op.general", "finn.custom_op.general", "onnx.brevitas")
QONNX_QUANT = ("Quant", "IntQuant")


def is_qonnx_quant(node) -> bool:
    return node is not None and node.op_type in QONNX_QUANT and node.domain in QONNX_DOMAINS


def _params(g: Graph, node) -> tuple[np.ndarray, int, bool, bool, str]:
    scale = g.constant(node, 1, "scale").astype(np.float32)
    zeropt = g.constant(node, 2, "zero point")
    bits = g.constant(node, 3, "bit width").reshape(-1)
    a = g.attrs(node)
    mode = a.get("rounding_mode", b"ROUND")
    mode = (mode.decode() if isinstance(mode, bytes) else str(mode)).upper()
    if np.any(zeropt != 0):
        raise refuse(node, "zero point must be 0: the tile's integers are symmetric")
    if bits.size != 1 or bits[0] != int(bits[0]) or not 1 <= int(bits[0]) <= 8:
        raise refuse(node, f"bit width {bits.tolist()[:4]}: the tile holds integers of at most 8 bits")
    if not np.all(np.isfinite(scale)) or np.any(scale <= 0):
        raise refuse(node, "scale must be positive")
    return scale, int(bits[0]), bool(a.get("signed", 1)), bool(a.get("narrow", 0)), mode


def _bounds(bits: int, signed: bool, narrow: bool) -> tuple[int, int]:
    if signed:
        return -(2 ** (bits - 1)) + int(narrow), 2 ** (bits - 1) - 1
    return 0, 2**bits - 1 - int(narrow)


_ROUND = {"ROUND": np.rint, "HALF_EVEN": np.rint, "HALF_UP": lambda v: np.floor(v + 0.5),
          "FLOOR": np.floor, "CEIL": np.ceil}


def activation_qparams(g: Graph, node) -> tuple[QParams, bool]:
    """(per-tensor int8 quantization, whether it clamps at 0 like a ReLU) of an activation quantizer."""
    scale, bits, signed, narrow, mode = _params(g, node)
    if scale.size != 1:
        raise refuse(node, f"{scale.size} scales: activations must be quantized per tensor")
    if mode not in ("ROUND", "HALF_EVEN", "HALF_UP"):
        raise refuse(node, f"rounding_mode {mode}: an activation's requantization rounds to nearest on the tile")
    lo, hi = _bounds(bits, signed, narrow)
    if (lo, hi) == (-128, 127):
        return QParams(np.float32(scale.reshape(-1)[0]), 0, "int8"), False
    if (lo, hi) == (0, 127):
        return QParams(np.float32(scale.reshape(-1)[0]), 0, "int8"), True
    raise refuse(node, f"{'signed' if signed else 'unsigned'} {bits}-bit{' narrow' if narrow else ''} activations "
                       f"(integers {lo}..{hi}); the tile's are signed 8-bit (-128..127) or, after a ReLU, 0..127")


def constant_ints(g: Graph, node, out_axis: int) -> tuple[np.ndarray, np.ndarray]:
    """(int8 values, float32 scales: one, or one per output channel) of a quantized weight constant."""
    x = g.constant(node, 0, "weights").astype(np.float32)
    scale, bits, signed, narrow, mode = _params(g, node)
    if mode not in _ROUND:
        raise refuse(node, f"rounding_mode {mode} is not one of {', '.join(_ROUND)}")
    lo, hi = _bounds(bits, signed, narrow)
    if hi > 127:
        raise refuse(node, f"unsigned {bits}-bit weights reach {hi}; the tile's weights are int8")
    if scale.size != 1:
        if scale.ndim != x.ndim or scale.size != x.shape[out_axis] or scale.shape[out_axis] != scale.size:
            raise refuse(node, f"scales of shape {scale.shape}: per-channel scales must follow the output "
                               f"channels (axis {out_axis} of {list(x.shape)})")
    values = _ROUND[mode](np.clip(x / scale, lo, hi))
    return values.astype(np.int8), scale.reshape(-1) if scale.size > 1 else scale.reshape(())


def constant_floats(g: Graph, node) -> np.ndarray:
    """The float values a quantizer gives a constant (a bias): integers times scale."""
    x = g.constant(node, 0, "bias").astype(np.float32)
    scale, bits, signed, narrow, mode = _bias_params(g, node)
    lo, hi = _bounds(bits, signed, narrow)
    return (_ROUND.get(mode, np.rint)(np.clip(x / scale, lo, hi)) * scale).astype(np.float64)


def _bias_params(g: Graph, node) -> tuple[np.ndarray, int, bool, bool, str]:
    """A bias quantizer may be wide (e.g. 32 bits): only its values matter, the accumulator holds them."""
    scale = g.constant(node, 1, "scale").astype(np.float32)
    if np.any(g.constant(node, 2, "zero point") != 0) or np.any(scale <= 0):
        raise refuse(node, "a bias quantizer needs zero point 0 and a positive scale")
    a = g.attrs(node)
    mode = a.get("rounding_mode", b"ROUND")
    bits = int(g.constant(node, 3, "bit width").reshape(-1)[0])
    return scale.reshape(-1), bits, bool(a.get("signed", 1)), bool(a.get("narrow", 0)), \
        (mode.decode() if isinstance(mode, bytes) else str(mode)).upper()

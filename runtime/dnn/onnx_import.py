"""Import a quantized int8 ONNX graph as a tile network (runtime/dnn/network.py).

Three ways of writing a quantized graph are read, also mixed:

- QDQ (``onnxruntime.quantization.quantize_static`` with ``QuantFormat.QDQ``): float operators
  between DequantizeLinear and QuantizeLinear nodes; weights and biases are DequantizeLinear of
  int8/int32 constants;
- QOperator: ``QLinearConv``, ``QLinearMatMul``, ``QGemm`` on int8 tensors, MaxPool/Flatten/Reshape
  on int8 tensors directly;
- QONNX (Brevitas, FINN): ``IntQuant``/``Quant`` nodes, each a QuantizeLinear and its
  DequantizeLinear in one (onnx_qonnx.py).

The graph is walked as one chain from its input to its output. The walk is a small state machine
over what the current tensor is: *quantized* (int8 values with a QParams), *on grid* (the float
DequantizeLinear of a quantized tensor, possibly with a ReLU pending: every value is still
scale * integer) or *accumulated* (the float output of a Conv/Gemm/MatMul not yet quantized). Why
this is exact: a Conv/Gemm/MatMul of on-grid inputs and DequantizeLinear'd int weights is, before
its QuantizeLinear, ``s_x * s_w * (int32 accumulator)``; its QuantizeLinear with scale s_y is the
tile's requantization by the ratio s_x * s_w / s_y; a ReLU before that QuantizeLinear is the tile's
ReLU clamp; MaxPool, Flatten and (flattening) Reshape do not change any value on the grid; ReLU
commutes with max-pool (both monotone), so a ReLU after pools folds into the layer before them; a
QuantizeLinear of an on-grid tensor with a new scale is a rescale, which the tile runs as a 1x1
convolution with identity weights. Anything else is refused with the node's name and the reason.

Activations must be symmetric: int8 with zero point 0, or uint8 with zero point 128 (the same
integers plus 128). Where the tile's fixed-point requantization parts from onnxruntime's float
arithmetic is written down in docs/dnn-import.md.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from fpgashare.dnn.network import Layer, Network
from fpgashare.dnn.onnx_graph import Graph, QParams, UnsupportedModelError, load_graph, node_label, refuse
from fpgashare.dnn.onnx_layers import conv_geometry, fc_weights, gemm_trans_b, input_dims, input_hwc
from fpgashare.dnn.onnx_model import ImportedModel, NodeRole
from fpgashare.dnn.onnx_qonnx import QONNX_DOMAINS, activation_qparams, is_qonnx_quant
from fpgashare.dnn.onnx_weights import centered, check_symmetric, layer_bias, rescale, weight_scales, weights_of
from fpgashare.errors import NetworkError

log = logging.getLogger(__name__)

#: What the tiles run, as the refusal message says it.
SUPPORTED = ("QuantizeLinear, DequantizeLinear, Conv, QLinearConv, Gemm, QGemm, MatMul (+ Add of a bias), "
             "QLinearMatMul, Relu, MaxPool (2x2, stride 2), Flatten, Reshape (flattening), QONNX IntQuant/Quant")


@dataclass
class _Pending:
    """A Conv/Gemm/MatMul whose QuantizeLinear has not been reached yet."""

    node: object
    kind: str
    weights: np.ndarray          #: int8 [OC, KH, KW, C]
    w_scale: np.ndarray          #: float32 [OC]
    in_q: QParams
    bias: np.ndarray | None      #: int32 [OC] or None (MatMul until its Add)
    kernel: int = 1
    stride: int = 1
    pad: int = 0


@dataclass
class _Walk:
    graph: Graph
    shape: tuple[int, int, int]                   #: HWC shape of the current tensor
    q: QParams
    mode: str = "quant"                           #: quant | grid | acc
    relu: bool = False                            #: a ReLU waits for the next requantization
    flat: bool = False
    pending: _Pending | None = None
    layers: list[Layer] = field(default_factory=list)
    roles: list[NodeRole] = field(default_factory=list)
    #: layer index -> the ONNX tensor whose integers equal that layer's output (-1: the input)
    tensors: dict[int, str] = field(default_factory=dict)

    def holds(self, tensor: str) -> None:
        """``tensor`` holds the integers of the last layer's output (or of the input, before any)."""
        self.tensors[len(self.layers) - 1] = tensor

    def role(self, node, what: str) -> None:
        self.roles.append(NodeRole(node.name, node.op_type, what))

    def add(self, layer: Layer, node=None) -> None:
        """Append ``layer``; ``node`` (if given) is recorded as having become it."""
        self.layers.append(layer)
        self.shape = layer.output_shape(self.shape)
        if node is not None:
            self.role(node, f"layer {len(self.layers) - 1} ({layer.kind})")

    def fold_relu(self, node) -> bool:
        """Put a pending ReLU into the last conv/fc layer, if only max-pools came after it."""
        for i in range(len(self.layers) - 1, -1, -1):
            layer = self.layers[i]
            if layer.kind == "maxpool":
                continue
            if layer.relu:
                return True         # already clamped at zero: the ReLU changes nothing
            self.layers[i] = _with_relu(layer)
            self.role(node, f"ReLU of layer {i}")
            for j in range(i, len(self.layers)):         # their tensors held values before the ReLU
                self.tensors.pop(j, None)
            return True
        return False


def _with_relu(layer: Layer) -> Layer:
    return Layer(layer.kind, layer.out_channels, layer.kernel, layer.stride, layer.pad, True,
                 layer.weights, layer.bias, layer.mult, layer.shift)


def _requant(walk: _Walk, node, q_new: QParams, relu: bool) -> None:
    """A rescale of the current tensor: a 1x1 convolution with identity weights."""
    c = walk.shape[2]
    mult, shift = rescale(node, np.float32(walk.q.scale / q_new.scale))
    layer = Layer("conv", c, 1, 1, 0, relu, np.eye(c, dtype=np.int8).reshape(c, 1, 1, c), np.zeros(c, np.int32),
                  np.full(c, mult, np.int32), np.full(c, shift, np.uint8))
    walk.add(layer, node)


# ---- handlers: each takes the walk and the node reading the current tensor, returns the next tensor
def _quantize(walk: _Walk, node) -> str:
    q_new = walk.graph.qparams(node, 1, 2, "output")
    check_symmetric(node, q_new)
    return _requantize(walk, node, q_new)


def _intquant(walk: _Walk, node) -> str:
    """QONNX IntQuant/Quant: a QuantizeLinear and its DequantizeLinear in one node."""
    q_new, clamps_at_zero = activation_qparams(walk.graph, node)
    if walk.mode == "quant":
        raise refuse(node, "quantizes a tensor that is already quantized")
    walk.relu = walk.relu or clamps_at_zero
    out = _requantize(walk, node, q_new)
    walk.mode = "grid"
    return out


def _requantize(walk: _Walk, node, q_new) -> str:
    if walk.mode == "quant":
        raise refuse(node, "quantizes a tensor that is already quantized")
    if walk.mode == "acc":
        _finish(walk, q_new)
        walk.role(node, f"requantization of layer {len(walk.layers) - 1}")
    elif q_new.same_as(walk.q) and not walk.relu:
        walk.role(node, "no-op (same quantization)")
    elif q_new.same_as(walk.q) and walk.fold_relu(node):
        pass
    else:
        _requant(walk, node, q_new, walk.relu)
    walk.mode, walk.q, walk.relu = "quant", q_new, False
    walk.holds(node.output[0])
    return node.output[0]


def _dequantize(walk: _Walk, node) -> str:
    if walk.mode != "quant":
        raise refuse(node, "dequantizes a tensor that is not quantized")
    q = walk.graph.qparams(node, 1, 2, "input")
    if not q.same_as(walk.q):
        raise refuse(node, f"dequantizes with {q.describe()}, but the tensor was quantized with {walk.q.describe()}")
    walk.mode = "grid"
    walk.role(node, "dequantize (the next node reads integers)")
    return node.output[0]


def _relu(walk: _Walk, node) -> str:
    if walk.mode == "quant":
        raise refuse(node, "ReLU of a quantized tensor without DequantizeLinear")
    walk.relu = True
    walk.role(node, "ReLU (the clamp of the next requantization)")
    return node.output[0]


def _maxpool(walk: _Walk, node) -> str:
    a = walk.graph.attrs(node)
    if walk.mode == "acc":
        raise refuse(node, "max-pool of an unquantized Conv/Gemm output: the tile pools int8 values")
    if len([o for o in node.output if o]) != 1:
        raise refuse(node, "max-pool with an indices output; the tile has none")
    problems = [f"{k} {v}" for k, v, ok in (
        ("kernel_shape", a.get("kernel_shape"), list(a.get("kernel_shape", [])) == [2, 2]),
        ("strides", a.get("strides"), list(a.get("strides", [1, 1])) == [2, 2]),
        ("pads", a.get("pads"), not any(a.get("pads", [0]))),
        ("dilations", a.get("dilations"), list(a.get("dilations", [1, 1])) == [1, 1]),
        ("ceil_mode", a.get("ceil_mode"), not a.get("ceil_mode", 0)),
        ("auto_pad", a.get("auto_pad"), a.get("auto_pad", b"NOTSET") in (b"NOTSET", b"VALID")),
        ("storage_order", a.get("storage_order"), not a.get("storage_order", 0))) if not ok]
    if problems:
        raise refuse(node, f"the tile's max-pool is 2x2, stride 2, no padding or dilation; got {', '.join(problems)}")
    if walk.flat or walk.shape[0] < 2 or walk.shape[1] < 2:
        raise refuse(node, f"max-pool needs a spatial input of at least 2x2, got {walk.shape[0]}x{walk.shape[1]}")
    if walk.relu and not walk.fold_relu(node):
        raise refuse(node, "a ReLU before this max-pool has no conv/fc layer to clamp")
    walk.relu = False
    walk.add(Layer("maxpool"), node)
    if walk.mode == "quant":             # QOperator: MaxPool on the int8 tensor itself
        walk.holds(node.output[0])
    return node.output[0]


def _flatten(walk: _Walk, node) -> str:
    g = walk.graph
    if walk.mode == "acc":
        raise refuse(node, "reshapes an unquantized Conv/Gemm output")
    h, w, c = walk.shape
    if node.op_type == "Flatten":
        axis = g.attrs(node).get("axis", 1)
        if axis != 1:
            raise refuse(node, f"Flatten axis {axis}: only axis 1 (one row per image) is a no-op on the tile")
    else:
        target = [int(v) for v in g.constant(node, 1, "shape").reshape(-1)]
        if len(target) != 2 or target[0] not in (0, -1, 1) or target[1] not in (-1, h * w * c) or target == [-1, -1]:
            raise refuse(node, f"Reshape to {target}: only flattening each image ([N, {h * w * c}] or [0, -1]) "
                               f"is a no-op on the tile")
    walk.flat = True
    walk.role(node, "no-op (flatten)")
    return node.output[0]


def _linear(walk: _Walk, node) -> str:
    """Conv, Gemm or MatMul on an on-grid tensor: the start of a conv/fc layer."""
    if walk.mode != "grid":
        raise refuse(node, "its input must be the DequantizeLinear of an int8 tensor")
    if walk.relu and not walk.fold_relu(node):
        raise refuse(node, "a ReLU before it has no conv/fc layer to clamp")
    walk.relu = False
    g, c = walk.graph, walk.shape[2]
    if node.op_type == "Conv":
        kind, geometry = "conv", conv_geometry(g, node, walk.shape, walk.flat)
        weights, w_scale = weights_of(g, node, 1, out_axis=0)
        weights = weights.transpose(0, 2, 3, 1) if weights.ndim == 4 else weights
        bias_index = 2
    else:
        kind, geometry = "fc", (1, 1, 0)
        trans_b = gemm_trans_b(node, g) if node.op_type == "Gemm" else 0
        weights, w_scale = weights_of(g, node, 1, out_axis=0 if trans_b else 1)
        if weights.ndim != 2:
            raise refuse(node, f"weights of shape {weights.shape}; expected a matrix")
        weights = weights if trans_b else weights.T
        weights = fc_weights(node, weights, walk.shape, walk.flat)
        bias_index = 2 if node.op_type == "Gemm" else None
    if kind == "conv" and (weights.ndim != 4 or weights.shape[1:] != (geometry[0], geometry[0], c)):
        raise refuse(node, f"weights of shape {weights.shape} (as OC, KH, KW, C) do not fit a "
                           f"{geometry[0]}x{geometry[0]} kernel on {c} channels")
    oc = weights.shape[0]
    w_scale = np.broadcast_to(w_scale, (oc,)).astype(np.float32)
    bias = layer_bias(g, node, bias_index, walk.q.scale, w_scale, oc) if bias_index is not None else None
    walk.pending = _Pending(node, kind, weights, w_scale, walk.q, bias, *geometry)
    walk.role(node, f"layer {len(walk.layers)} ({kind})")
    walk.mode = "acc"
    return node.output[0]


def _add(walk: _Walk, node) -> str:
    p = walk.pending
    if walk.mode != "acc" or p is None or p.bias is not None or walk.relu:
        raise refuse(node, "the only Add the tiles run is the bias right after a MatMul")
    other = 1 if node.input[0] == p.node.output[0] else 0
    g = walk.graph
    p.bias = layer_bias(g, node, other, p.in_q.scale, p.w_scale, p.weights.shape[0])
    walk.role(node, "bias of the layer before")
    return node.output[0]


def _finish(walk: _Walk, q_out: QParams) -> None:
    p = walk.pending
    ratios = (p.in_q.scale * p.w_scale) / q_out.scale          # float32, as onnxruntime computes it
    ms = [rescale(p.node, r) for r in ratios.astype(np.float32)]
    oc = p.weights.shape[0]
    bias = p.bias if p.bias is not None else np.zeros(oc, np.int32)
    layer = Layer(p.kind, oc, p.kernel, p.stride, p.pad, walk.relu, p.weights, bias,
                  np.array([m for m, _ in ms], np.int32), np.array([s for _, s in ms], np.uint8))
    walk.add(layer)
    walk.flat = walk.flat and p.kind != "fc"
    walk.pending = None


#: QLinear* input positions: activation, its scale and zero point, weights, their scale and zero
#: point, output scale and zero point, bias (None: the op has none).
_QLINEAR = {"QLinearConv": (0, 1, 2, 3, 4, 5, 6, 7, 8), "QLinearMatMul": (0, 1, 2, 3, 4, 5, 6, 7, None),
            "QGemm": (0, 1, 2, 3, 4, 5, 7, 8, 6)}


def _qlinear(walk: _Walk, node) -> str:
    """QLinearConv / QLinearMatMul / QGemm: int8 in, int8 out, in one node."""
    if walk.mode != "quant":
        raise refuse(node, "its input must be an int8 tensor")
    g = walk.graph
    _, xs, xz, wi, ws, wz, ys, yz, bi = _QLINEAR[node.op_type]
    q_in = g.qparams(node, xs, xz, "input")
    if not q_in.same_as(walk.q):
        raise refuse(node, f"reads its input as {q_in.describe()}, but it was quantized as {walk.q.describe()}")
    if len(node.input) <= ys or not node.input[ys]:
        raise refuse(node, "has no output scale: its output is float, the tiles' is int8")
    q_out = g.qparams(node, ys, yz, "output")
    check_symmetric(node, q_out)
    if walk.relu and not walk.fold_relu(node):
        raise refuse(node, "a ReLU before it has no conv/fc layer to clamp")
    raw = g.constant(node, wi, "weights")
    if node.op_type == "QLinearConv":
        kind, geometry, out_axis = "conv", conv_geometry(g, node, walk.shape, walk.flat), 0
    else:
        kind, geometry = "fc", (1, 1, 0)
        trans_b = gemm_trans_b(node, g) if node.op_type == "QGemm" else 0
        out_axis = 0 if trans_b else 1
    weights = centered(node, raw, g.optional_constant(node, wz, "weight zero point"), "weights")
    w_scale = weight_scales(node, g.constant(node, ws, "weight scale"), raw.shape, out_axis, out_axis, "weights")
    if kind == "conv":
        if weights.ndim != 4:
            raise refuse(node, f"weights of shape {weights.shape}; expected OC, C, KH, KW")
        weights = weights.transpose(0, 2, 3, 1)
    else:
        if weights.ndim != 2:
            raise refuse(node, f"weights of shape {weights.shape}; expected a matrix")
        weights = fc_weights(node, weights if trans_b else weights.T, walk.shape, walk.flat)
    if kind == "conv" and weights.shape[1:] != (geometry[0], geometry[0], walk.shape[2]):
        raise refuse(node, f"weights of shape {weights.shape} (as OC, KH, KW, C) do not fit a "
                           f"{geometry[0]}x{geometry[0]} kernel on {walk.shape[2]} channels")
    oc = weights.shape[0]
    w_scale = np.broadcast_to(w_scale, (oc,)).astype(np.float32)
    bias = layer_bias(g, node, bi, walk.q.scale, w_scale, oc) if bi is not None else None
    walk.pending, walk.mode, walk.relu = _Pending(node, kind, weights, w_scale, walk.q, bias, *geometry), "acc", False
    walk.role(node, f"layer {len(walk.layers)} ({kind})")
    _finish(walk, q_out)
    walk.mode, walk.q = "quant", q_out
    walk.holds(node.output[0])
    return node.output[0]


HANDLERS = {"QuantizeLinear": _quantize, "DequantizeLinear": _dequantize, "Relu": _relu, "MaxPool": _maxpool,
            "Flatten": _flatten, "Reshape": _flatten, "Conv": _linear, "Gemm": _linear, "MatMul": _linear,
            "Add": _add, "QLinearConv": _qlinear, "QLinearMatMul": _qlinear, "QGemm": _qlinear,
            "Quant": _intquant, "IntQuant": _intquant}
DOMAINS = ("", "ai.onnx", "com.microsoft", *QONNX_DOMAINS)


def import_onnx(model: str | Path | bytes | object, name: str | None = None) -> ImportedModel:
    """The tile network of a quantized ONNX model; UnsupportedModelError names the first node it cannot run."""
    g = load_graph(model)
    try:
        return _import(g, name)
    except UnsupportedModelError as exc:
        if str(exc).startswith(f"{g.where}: "):
            raise
        raise UnsupportedModelError(f"{g.where}: {exc}") from None


def _import(g: Graph, name: str | None) -> ImportedModel:
    where = g.where
    if len(g.inputs) != 1 or len(g.outputs) != 1:
        raise NetworkError(f"{where}: the graph has {len(g.inputs)} inputs and {len(g.outputs)} outputs; "
                           f"the tiles run one chain from one input to one output")
    inp = g.inputs[0]
    dims = input_dims(where, inp)
    first = g.consumers.get(inp.name, [])
    if len(first) != 1 or not (first[0].op_type == "QuantizeLinear" or is_qonnx_quant(first[0])):
        quantized = any(n.op_type in ("QuantizeLinear", "QLinearConv", "QGemm", "QLinearMatMul")
                        or is_qonnx_quant(n) for n in g.nodes)
        hint = "" if quantized else ("; the model is not quantized (float): the tiles run int8, so quantize it first "
                                     "with onnxruntime.quantization.quantize_static (QDQ, activation_type QInt8, "
                                     "ActivationSymmetric=True)")
        raise UnsupportedModelError(f"{where}: input {inp.name!r} must go to exactly one QuantizeLinear (or QONNX "
                                    f"IntQuant), it goes to {', '.join(node_label(n) for n in first) or 'nothing'}"
                                    + hint)
    if first[0].op_type == "QuantizeLinear":
        q_in = g.qparams(first[0], 1, 2, "input")
        check_symmetric(first[0], q_in)
    else:
        q_in, clamps = activation_qparams(g, first[0])
        if clamps:
            raise refuse(first[0], "an unsigned input quantizer: the host quantizes inputs to signed int8")
    walk = _Walk(g, input_hwc(dims), q_in, mode="grid" if is_qonnx_quant(first[0]) else "quant")
    walk.role(first[0], "input quantization (on the host)")
    walk.holds(first[0].output[0])
    cur, node = first[0].output[0], first[0]
    while True:
        nxt = g.only_consumer(cur, node)
        if nxt is None:
            if cur not in g.output_names:
                raise refuse(node, f"its output {cur!r} reaches no graph output")
            break
        if cur in g.output_names:
            raise refuse(nxt, f"reads the graph output {cur!r}; the tiles run one chain to one output")
        handler = HANDLERS.get(nxt.op_type) if nxt.domain in DOMAINS else None
        if handler is None:
            raise refuse(nxt, f"operator {nxt.domain + '.' if nxt.domain else ''}{nxt.op_type} is not one the "
                              f"tiles run ({SUPPORTED})")
        cur, node = handler(walk, nxt), nxt
    if walk.mode == "acc":
        raise refuse(walk.pending.node, f"the graph output {cur!r} is its float result; quantize it "
                                        f"(QuantizeLinear): the tiles' output is int8")
    if walk.relu and not walk.fold_relu(node):
        raise refuse(node, "a ReLU at the output has no conv/fc layer to clamp")
    if not walk.layers:
        raise UnsupportedModelError(f"{where}: no layer the tiles run (only {len(walk.roles)} quantization node(s))")
    label = name or g.model.graph.name or (Path(where).stem if where != "model" else "onnx_model")
    net = Network(label, input_hwc(dims), tuple(walk.layers))
    try:
        net.validate(where)
    except NetworkError as exc:
        raise UnsupportedModelError(str(exc)) from None
    log.info("%s: %d layers from %d nodes", where, len(net.layers), len(g.nodes))
    tensors = tuple(walk.tensors.get(i) for i in range(-1, len(net.layers)))
    return ImportedModel(net, inp.name, tuple(dims), q_in, walk.q, cur, tuple(walk.roles), where, tensors)

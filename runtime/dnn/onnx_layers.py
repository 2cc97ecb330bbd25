"""Geometry of imported Conv and Gemm nodes: what the tile's conv/fc layer can take, and the fc
weights reordered from ONNX's CHW flattening to the tile's HWC."""

from __future__ import annotations

import numpy as np
from fpgashare.dnn.onnx_graph import Graph, UnsupportedModelError, refuse

MAX_KERNEL, MAX_STRIDE = 7, 4    #: what network.py's conv layer accepts


def conv_geometry(g: Graph, node, shape: tuple[int, int, int], flat: bool) -> tuple[int, int, int]:
    """(kernel, stride, pad) of a Conv/QLinearConv node, refused unless the tile runs it."""
    a = g.attrs(node)
    if flat:
        raise refuse(node, "convolution of a flattened tensor")
    ks = list(a.get("kernel_shape", []))
    strides = list(a.get("strides", [1, 1]))
    pads = list(a.get("pads", [0, 0, 0, 0]))
    auto = a.get("auto_pad", b"NOTSET")
    if a.get("group", 1) != 1:
        raise refuse(node, f"group {a['group']}: the tile runs only ordinary (group 1) convolutions")
    if list(a.get("dilations", [1, 1])) != [1, 1]:
        raise refuse(node, f"dilations {list(a['dilations'])}: the tile has no dilated convolution")
    if len(ks) != 2 or ks[0] != ks[1] or not 1 <= ks[0] <= MAX_KERNEL:
        raise refuse(node, f"kernel_shape {ks}: the tile runs square kernels of 1..{MAX_KERNEL}")
    if len(strides) != 2 or strides[0] != strides[1] or not 1 <= strides[0] <= MAX_STRIDE:
        raise refuse(node, f"strides {strides}: the tile runs equal strides of 1..{MAX_STRIDE}")
    k, s = ks[0], strides[0]
    if auto in (b"SAME_UPPER", b"SAME_LOWER") and s == 1 and k % 2 == 1:
        pads = [k // 2] * 4
    elif auto == b"VALID":
        pads = [0, 0, 0, 0]
    elif auto != b"NOTSET":
        raise refuse(node, f"auto_pad {auto.decode()} with kernel {k}, stride {s}: padding would be uneven")
    if len(set(pads)) != 1 or not 0 <= pads[0] < k:
        raise refuse(node, f"pads {pads}: the tile pads all four sides alike, by less than the kernel ({k})")
    h, w, _ = shape
    if h + 2 * pads[0] < k or w + 2 * pads[0] < k:
        raise refuse(node, f"kernel {k} is larger than the padded {h}x{w} input")
    return k, s, pads[0]


def gemm_trans_b(node, g: Graph) -> int:
    """transB of a Gemm/QGemm node, refused unless it is A x B' + C (alpha = beta = 1)."""
    a = g.attrs(node)
    if a.get("transA", 0) or a.get("alpha", 1.0) != 1.0 or a.get("beta", 1.0) != 1.0:
        raise refuse(node, f"Gemm with transA {a.get('transA', 0)}, alpha {a.get('alpha', 1.0)}, "
                           f"beta {a.get('beta', 1.0)}: the tile runs A x B' + C with alpha = beta = 1")
    return int(a.get("transB", 0))


def fc_weights(node, w: np.ndarray, shape: tuple[int, int, int], flat: bool) -> np.ndarray:
    """[OC, K] weights over ONNX's CHW flattening -> the tile's [OC, H, W, C] over HWC."""
    h, w_, c = shape
    if not flat and (h, w_) != (1, 1):
        raise refuse(node, f"a fully connected layer needs a flattened input, got an {h}x{w_}x{c} tensor")
    if w.shape[1] != h * w_ * c:
        raise refuse(node, f"weights take {w.shape[1]} inputs, the tensor has {h * w_ * c}")
    return w.reshape(w.shape[0], c, h, w_).transpose(0, 2, 3, 1)


def input_hwc(dims: tuple[int, ...]) -> tuple[int, int, int]:
    """The tile's HWC shape of ONNX per-image dims (C, H, W) or (K,)."""
    return (dims[1], dims[2], dims[0]) if len(dims) == 3 else (1, 1, dims[0])


def input_dims(where: str, inp) -> tuple[int, ...]:
    """Per-image dims of the graph input (float32, [N, C, H, W] or [N, K], every size after N fixed)."""
    from onnx import TensorProto

    t = inp.type.tensor_type
    if t.elem_type != TensorProto.FLOAT:
        raise UnsupportedModelError(f"{where}: input {inp.name!r} must be float32 (the host quantizes it)")
    dims = [d.dim_value if d.HasField("dim_value") else None for d in t.shape.dim]
    if len(dims) not in (2, 4) or any(d is None or d < 1 for d in dims[1:]):
        raise UnsupportedModelError(f"{where}: input {inp.name!r} has shape {dims}; the tiles take [N, C, H, W] "
                                    f"or [N, K] with every size after N fixed")
    return tuple(int(d) for d in dims[1:])

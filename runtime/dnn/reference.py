"""numpy int8 reference of the dnn_tile arithmetic, bit for bit.

Rules (the RTL implements exactly these):
- input: an 8-bit image pixel p becomes the int8 activation p >> 1 (scale 2, zero point 0);
- conv/fc: products of int8 activations and int8 weights summed in int32 (two's-complement wrap),
  zero padding, then + bias (int32, wrapping);
- requantization per output channel: y = (acc * M + 2**(S-1)) >> S in 64-bit arithmetic with an
  arithmetic (floor) shift, i.e. round half up; then saturate to [-128, 127], or [0, 127] with ReLU;
- 2x2 max-pool, stride 2, floor on odd sizes, on int8 values.
"""

from __future__ import annotations

import math

import numpy as np
from fpgashare.dnn.network import Layer, Network
from fpgashare.errors import NetworkError


def quantize_input(images: np.ndarray) -> np.ndarray:
    """uint8 images [N, H, W] or [N, H, W, C] -> int8 HWC activations (p >> 1)."""
    if images.dtype != np.uint8:
        raise NetworkError(f"images must be uint8, got {images.dtype}")
    if images.ndim == 3:
        images = images[..., None]
    if images.ndim != 4:
        raise NetworkError(f"images must be N x H x W (or N x H x W x C), got shape {images.shape}")
    return (images >> 1).astype(np.int8)


def wrap32(x: np.ndarray) -> np.ndarray:
    """Two's-complement wrap of int64 values to int32, as a 32-bit accumulator does."""
    return ((x.astype(np.int64) + 2**31) % 2**32 - 2**31).astype(np.int64)


def requantize(acc: np.ndarray, mult: np.ndarray, shift: np.ndarray, relu: bool) -> np.ndarray:
    """int32 accumulators [..., OC] -> int8 by the per-channel multiplier/shift rule above."""
    s = shift.astype(np.int64)
    y = (acc.astype(np.int64) * mult.astype(np.int64) + (np.int64(1) << (s - 1))) >> s
    return np.clip(y, 0 if relu else -128, 127).astype(np.int8)


def multiplier_shift(real: float) -> tuple[int, int]:
    """(M, S) with M / 2**S ~= real, 2**30 <= M < 2**31: the integer form of a rescale factor."""
    if not 0 < real < 2**30:
        raise ValueError(f"rescale factor {real} out of range")
    mant, exp = math.frexp(real)          # real = mant * 2**exp, 0.5 <= mant < 1
    mult, shift = round(mant * 2**31), 31 - exp
    if mult == 2**31:
        mult, shift = 2**30, shift - 1
    if not 1 <= shift <= 62:
        raise ValueError(f"rescale factor {real} needs shift {shift}, outside 1..62")
    return mult, shift


def accumulate(x: np.ndarray, layer: Layer) -> np.ndarray:
    """int32 accumulators (bias included) of a conv/fc layer on int8 input [N, H, W, C]."""
    kh, kw = layer.kernel_hw(x.shape[1:])
    stride, pad = (1, 0) if layer.kind == "fc" else (layer.stride, layer.pad)
    # In float64 through BLAS: int8 x int8 products sum exactly while |sum| < 2**53, i.e. for
    # fewer than 2**53 / 128**2 (~5e11) terms per output, far beyond any layer a tile runs.
    xp = np.pad(x.astype(np.float64), ((0, 0), (pad, pad), (pad, pad), (0, 0)))
    win = np.lib.stride_tricks.sliding_window_view(xp, (kh, kw), axis=(1, 2))[:, ::stride, ::stride]
    # win: [N, OH, OW, C, KH, KW]; weights: [OC, KH, KW, C] -> [C * KH * KW, OC] in win's order
    n, oh, ow = win.shape[:3]
    cols = win.reshape(n * oh * ow, -1)
    w = layer.weights.astype(np.float64).transpose(3, 1, 2, 0).reshape(-1, layer.weights.shape[0])
    acc = np.rint(cols @ w).astype(np.int64).reshape(n, oh, ow, -1)
    return wrap32(wrap32(acc) + layer.bias.astype(np.int64))


def maxpool2x2(x: np.ndarray) -> np.ndarray:
    n, h, w, c = x.shape
    x = x[:, : h // 2 * 2, : w // 2 * 2]
    return x.reshape(n, h // 2, 2, w // 2, 2, c).max(axis=(2, 4))


def run_layer(x: np.ndarray, layer: Layer) -> np.ndarray:
    """One layer on int8 activations [N, H, W, C]."""
    if layer.kind == "maxpool":
        return maxpool2x2(x)
    return requantize(accumulate(x, layer), layer.mult, layer.shift, layer.relu)


def run_network(net: Network, x: np.ndarray, start: int = 0, stop: int | None = None) -> np.ndarray:
    """Layers [start, stop) of ``net`` on int8 activations [N, H, W, C]; returns int8 [N, H', W', C']."""
    want = net.shapes()[start]
    if x.dtype != np.int8 or x.shape[1:] != want:
        raise NetworkError(f"{net.name}: layer {start} takes int8 input of shape (N, {', '.join(map(str, want))}), "
                           f"got {x.dtype} {x.shape}")
    for layer in net.layers[start:stop]:
        x = run_layer(x, layer)
    return x


def logits(net: Network, images: np.ndarray) -> np.ndarray:
    """int8 output of the whole network for uint8 images, flattened to [N, outputs]."""
    out = run_network(net, quantize_input(images))
    return out.reshape(out.shape[0], -1)

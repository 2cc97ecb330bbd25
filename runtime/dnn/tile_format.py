"""What a dnn_tile holds and how it is fed: its sizes, the load stream, the activation layout.

The layout and the load-stream format are specified in hdl_sim/rtl/dnn_tile.sv; this module writes
them. Activations travel as "entries" of P int8 channels (HWC, channel groups zero-padded), P/4
little-endian 32-bit words per entry.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from fpgashare.dnn.network import Layer, Network
from fpgashare.errors import NetworkError
from fpgashare.hwtables.tables import SEC_BIAS, SEC_DESC, SEC_MULT, SEC_SHIFT, SEC_WEIGHTS

DESC_WORDS = 8


@dataclass(frozen=True)
class TileSpec:
    """Sizes of one dnn_tile (the RTL parameters of the same names)."""

    p: int = 8                   #: MAC array is p x p; entries hold p channels
    act_entries: int = 16384     #: entries per activation buffer (two buffers)
    w_entries: int = 8192        #: weight entries of p*p int8
    pg_entries: int = 256        #: output-channel groups of bias/multiplier/shift
    max_layers: int = 16
    uram: bool = True            #: activations and weights in UltraRAM (else block RAM); no effect on cycles

    def rtl_parameters(self) -> dict[str, int]:
        return {"DNN_P": self.p, "DNN_ACT_ENTRIES": self.act_entries, "DNN_W_ENTRIES": self.w_entries,
                "DNN_PG_ENTRIES": self.pg_entries, "DNN_MAX_LAYERS": self.max_layers, "DNN_URAM": int(self.uram)}

    def groups(self, channels: int) -> int:
        return -(-channels // self.p)

    def entries(self, shape: tuple[int, int, int]) -> int:
        """Activation entries of an HWC tensor."""
        return shape[0] * shape[1] * self.groups(shape[2])

    def words(self, shape: tuple[int, int, int]) -> int:
        """Stream words of an HWC tensor."""
        return self.entries(shape) * self.p // 4


DEFAULT_TILE = TileSpec()


@dataclass(frozen=True)
class SegmentFootprint:
    """What a segment of layers needs from one tile."""

    layers: int
    act_entries: int     #: largest tensor the segment reads or writes
    w_entries: int
    pg_entries: int

    def problem(self, spec: TileSpec) -> str | None:
        """None if the segment fits ``spec``, else what does not fit."""
        for name, need, have in (("layers", self.layers, spec.max_layers),
                                 ("activation entries", self.act_entries, spec.act_entries),
                                 ("weight entries", self.w_entries, spec.w_entries),
                                 ("parameter groups", self.pg_entries, spec.pg_entries)):
            if need > have:
                return f"needs {need} {name}, a tile has {have}"
        return None


def footprint(net: Network, start: int, stop: int, spec: TileSpec = DEFAULT_TILE) -> SegmentFootprint:
    shapes = net.shapes()
    act = max(spec.entries(s) for s in shapes[start: stop + 1])
    w = pg = 0
    for i in range(start, stop):
        layer, shape = net.layers[i], shapes[i]
        if layer.has_params:
            kh, kw = layer.kernel_hw(shape)
            og = spec.groups(layer.out_channels)
            w += og * kh * kw * spec.groups(shape[2])
            pg += og
    return SegmentFootprint(stop - start, act, w, pg)


def pack_activations(x: np.ndarray, spec: TileSpec = DEFAULT_TILE) -> np.ndarray:
    """int8 HWC tensor -> uint32 stream words (channel groups zero-padded to p)."""
    h, w, c = x.shape
    padded = np.zeros((h, w, spec.groups(c) * spec.p), np.int8)
    padded[..., :c] = x
    return padded.reshape(-1).view(np.uint8).view("<u4").astype(np.uint32)


def unpack_activations(words: np.ndarray, shape: tuple[int, int, int], spec: TileSpec = DEFAULT_TILE) -> np.ndarray:
    """uint32 stream words -> int8 HWC tensor of ``shape``."""
    h, w, c = shape
    want = spec.words(shape)
    if words.size != want:
        raise NetworkError(f"expected {want} words for a {h}x{w}x{c} tensor, got {words.size}")
    raw = words.astype("<u4").view(np.uint8).view(np.int8)
    return raw.reshape(h, w, spec.groups(c) * spec.p)[..., :c].copy()


def _section(sec: int, data: np.ndarray) -> list[np.ndarray]:
    data = np.asarray(data, dtype=np.uint32).reshape(-1)
    if data.size >= 1 << 28:
        raise NetworkError(f"load section {sec} too long ({data.size} words)")
    return [np.array([(sec << 28) | data.size], np.uint32), data]


def _weight_entries(layer: Layer, shape: tuple[int, int, int], spec: TileSpec) -> np.ndarray:
    """Weights [OC, KH, KW, IC] -> entries (og, ky, kx, cg) of p*p bytes, byte o*p + i."""
    p = spec.p
    oc, kh, kw, ic = layer.weights.shape
    og, cg = spec.groups(oc), spec.groups(ic)
    w = np.zeros((og * p, kh, kw, cg * p), np.int8)
    w[:oc, :, :, :ic] = layer.weights
    w = w.reshape(og, p, kh, kw, cg, p).transpose(0, 2, 3, 4, 1, 5)  # og, ky, kx, cg, o, i
    return np.ascontiguousarray(w).reshape(-1).view(np.uint8).view("<u4")


def _per_channel(values: np.ndarray, groups: int, p: int) -> np.ndarray:
    out = np.zeros(groups * p, np.int64)
    out[: values.size] = values
    return (out & 0xFFFFFFFF).astype(np.uint32)


def load_stream(net: Network, start: int, stop: int, spec: TileSpec = DEFAULT_TILE) -> np.ndarray:
    """The load stream that makes a tile run layers [start, stop) of ``net``."""
    need = footprint(net, start, stop, spec)
    problem = need.problem(spec)
    if problem:
        raise NetworkError(f"{net.name}: layers {start}..{stop - 1} do not fit one tile: {problem}")
    shapes = net.shapes()
    desc, weights, bias, mult, shift = [], [], [], [], []
    wbase = pbase = 0
    for i in range(start, stop):
        layer, (h, w, c), (oh, ow, oc) = net.layers[i], shapes[i], shapes[i + 1]
        kh, kw = layer.kernel_hw((h, w, c))
        stride, pad = (2, 0) if layer.kind == "maxpool" else (1, 0) if layer.kind == "fc" else (layer.stride, layer.pad)
        d0 = (1 if layer.kind == "maxpool" else 0) | (int(layer.relu) << 2)
        desc += [d0, h | w << 16, spec.groups(c) | spec.groups(oc) << 16, oh | ow << 16,
                 kh | kw << 8 | stride << 16 | pad << 24, wbase, pbase, 0]
        if layer.has_params:
            entries = _weight_entries(layer, (h, w, c), spec)
            weights.append(entries)
            wbase += entries.size // (spec.p * spec.p // 4)
            groups = spec.groups(oc)
            bias.append(_per_channel(layer.bias, groups, spec.p))
            mult.append(_per_channel(layer.mult, groups, spec.p))
            shift.append(_per_channel(layer.shift, groups, spec.p))
            pbase += groups
    parts = _section(SEC_DESC, np.array(desc, np.uint32))
    for sec, chunks in ((SEC_WEIGHTS, weights), (SEC_BIAS, bias), (SEC_MULT, mult), (SEC_SHIFT, shift)):
        if chunks:
            parts += _section(sec, np.concatenate(chunks))
    return np.concatenate(parts).astype(np.uint32)

"""Network description: a list of int8 layers with their quantized parameters, and its file format.

A network file is an ``.npz`` archive holding ``spec`` (JSON: name, input shape, layer list) and,
for every conv/fc layer ``i``, the arrays ``l{i}_weights`` (int8, [OC, KH, KW, IC]), ``l{i}_bias``
(int32, [OC]), ``l{i}_mult`` (int32, [OC], 0 < M < 2**31) and ``l{i}_shift`` (uint8, [OC], 1..62).
Tensors are HWC. ``fc`` flattens its HWC input: its weights have KH = H and KW = W.
"""

from __future__ import annotations

import json
import zipfile
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import BinaryIO

import numpy as np
from fpgashare.errors import NetworkError

KINDS = ("conv", "fc", "maxpool")
MAX_SHIFT = 62


@dataclass(frozen=True)
class Layer:
    """One layer. ``conv``/``fc`` carry quantized parameters; ``maxpool`` is 2x2, stride 2."""

    kind: str
    out_channels: int = 0
    kernel: int = 1
    stride: int = 1
    pad: int = 0
    relu: bool = False
    weights: np.ndarray | None = field(default=None, repr=False, compare=False)
    bias: np.ndarray | None = field(default=None, repr=False, compare=False)
    mult: np.ndarray | None = field(default=None, repr=False, compare=False)
    shift: np.ndarray | None = field(default=None, repr=False, compare=False)

    @property
    def has_params(self) -> bool:
        return self.kind in ("conv", "fc")

    def output_shape(self, shape: tuple[int, int, int]) -> tuple[int, int, int]:
        """HWC output shape for an HWC input shape."""
        h, w, _ = shape
        if self.kind == "maxpool":
            return (h // 2, w // 2, shape[2])
        if self.kind == "fc":
            return (1, 1, self.out_channels)
        return ((h + 2 * self.pad - self.kernel) // self.stride + 1,
                (w + 2 * self.pad - self.kernel) // self.stride + 1, self.out_channels)

    def kernel_hw(self, shape: tuple[int, int, int]) -> tuple[int, int]:
        """(KH, KW) on an input of ``shape``: fc covers the whole input, maxpool is 2x2."""
        if self.kind == "fc":
            return shape[0], shape[1]
        if self.kind == "maxpool":
            return 2, 2
        return self.kernel, self.kernel


@dataclass(frozen=True)
class Network:
    """A named layer list on an HWC int8 input."""

    name: str
    input_shape: tuple[int, int, int]
    layers: tuple[Layer, ...]

    def shapes(self) -> list[tuple[int, int, int]]:
        """Tensor shapes: the input, then every layer's output (len(layers) + 1 entries)."""
        return list(self._shapes)

    @cached_property
    def _shapes(self) -> tuple[tuple[int, int, int], ...]:
        out = [self.input_shape]
        for layer in self.layers:
            out.append(layer.output_shape(out[-1]))
        return tuple(out)

    @property
    def output_shape(self) -> tuple[int, int, int]:
        return self.shapes()[-1]

    def validate(self, where: str = "network") -> Network:
        """Check every layer against the shape it receives; raise NetworkError naming the layer."""
        if len(self.input_shape) != 3 or min(self.input_shape) < 1:
            raise NetworkError(f"{where}: input shape must be (H, W, C) with every size >= 1, "
                               f"got {self.input_shape}")
        if not self.layers:
            raise NetworkError(f"{where}: the network has no layers")
        shape = self.input_shape
        for i, layer in enumerate(self.layers):
            _check_layer(f"{where}: layer {i} ({layer.kind})", layer, shape)
            shape = layer.output_shape(shape)
        return self


def _check_layer(where: str, layer: Layer, shape: tuple[int, int, int]) -> None:
    if layer.kind not in KINDS:
        raise NetworkError(f"{where}: unknown kind, expected one of {', '.join(KINDS)}")
    h, w, c = shape
    if layer.kind == "maxpool":
        if h < 2 or w < 2:
            raise NetworkError(f"{where}: 2x2 max-pool needs an input of at least 2x2, got {h}x{w}")
        return
    if layer.out_channels < 1:
        raise NetworkError(f"{where}: out_channels must be >= 1")
    if layer.kind == "conv":
        if not (1 <= layer.kernel <= 7 and 1 <= layer.stride <= 4 and 0 <= layer.pad < layer.kernel):
            raise NetworkError(f"{where}: need 1 <= kernel <= 7, 1 <= stride <= 4, 0 <= pad < kernel; "
                               f"got kernel {layer.kernel}, stride {layer.stride}, pad {layer.pad}")
        if h + 2 * layer.pad < layer.kernel or w + 2 * layer.pad < layer.kernel:
            raise NetworkError(f"{where}: kernel {layer.kernel} larger than the padded {h}x{w} input")
    kh, kw = layer.kernel_hw(shape)
    oc = layer.out_channels
    expect = {"weights": (np.int8, (oc, kh, kw, c)), "bias": (np.int32, (oc,)),
              "mult": (np.int32, (oc,)), "shift": (np.uint8, (oc,))}
    for name, (dtype, dims) in expect.items():
        value = getattr(layer, name)
        if value is None:
            raise NetworkError(f"{where}: {name} missing")
        if value.dtype != dtype or value.shape != dims:
            raise NetworkError(f"{where}: {name} must be {np.dtype(dtype).name} of shape {dims}, "
                               f"got {value.dtype} of shape {value.shape}")
    if np.any(layer.mult <= 0):
        raise NetworkError(f"{where}: every mult must be in 1..2**31-1")
    if np.any(layer.shift < 1) or np.any(layer.shift > MAX_SHIFT):
        raise NetworkError(f"{where}: every shift must be in 1..{MAX_SHIFT}")


def save_network(net: Network, path: str | Path) -> None:
    """Write ``net`` as a network file (deterministic bytes for the same network)."""
    spec = {"name": net.name, "input": list(net.input_shape), "layers": [
        {"kind": ly.kind, "out_channels": ly.out_channels, "kernel": ly.kernel, "stride": ly.stride,
         "pad": ly.pad, "relu": ly.relu} for ly in net.layers]}
    arrays: dict[str, np.ndarray] = {"spec": np.frombuffer(json.dumps(spec, sort_keys=True).encode(), np.uint8)}
    for i, ly in enumerate(net.layers):
        if ly.has_params:
            for name in ("weights", "bias", "mult", "shift"):
                arrays[f"l{i}_{name}"] = getattr(ly, name)
    with open(path, "wb") as f:
        np.savez(f, **arrays)


def load_network(path: str | Path | BinaryIO) -> Network:
    """Read and validate a network file; NetworkError names the file and the problem.

    The file may be a client's (runtime/dnn/network_wire.py), so nothing in it is trusted: a member
    numpy cannot read and a spec field of the wrong JSON type are refused here. A field that only
    compares like an int (4.0, a string where a flag goes) would pass the shape checks and fail later
    in the daemon's engine, where a failure stops the daemon for every tenant."""
    where = str(path)
    try:
        archive = np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise NetworkError(f"{where}: no such file") from None
    except (OSError, ValueError, EOFError, MemoryError, zipfile.BadZipFile) as exc:
        raise NetworkError(f"{where}: not a network file (.npz): {exc}") from None
    with archive:
        if "spec" not in archive.files:
            raise NetworkError(f"{where}: no 'spec' entry")
        try:
            spec = json.loads(_member(archive, "spec", where).tobytes().decode())
        except (ValueError, RecursionError) as exc:     # RecursionError: nested past the parser's depth
            raise NetworkError(f"{where}: spec is not valid: not JSON ({str(exc)[:80]})") from None
        if not isinstance(spec, dict) or not isinstance(spec.get("layers"), list):
            raise NetworkError(f"{where}: spec is not valid: it must be a map with a 'layers' list")
        name = spec.get("name")
        shape = spec.get("input")
        if not isinstance(name, str) or not isinstance(shape, list) or not all(_is_int(v) for v in shape):
            raise NetworkError(f"{where}: spec is not valid: it needs a 'name' (a string) and an 'input' "
                               "(a list of integers)")
        layers = []
        for i, entry in enumerate(spec["layers"]):
            fields = _layer_fields(f"{where}: layer {i}", entry)
            params = {}
            if fields["kind"] in ("conv", "fc"):
                for pname in ("weights", "bias", "mult", "shift"):
                    key = f"l{i}_{pname}"
                    if key not in archive.files:
                        raise NetworkError(f"{where}: layer {i}: array {key} missing")
                    params[pname] = _member(archive, key, where)
            layers.append(Layer(**fields, **params))
    return Network(name, tuple(shape), tuple(layers)).validate(where)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _layer_fields(where: str, entry: object) -> dict:
    """A layer's spec fields, each of its one JSON type (``kind`` one of KINDS, ``relu`` a
    boolean, the rest integers); NetworkError naming the first that is not."""
    if not isinstance(entry, dict) or not all(k in entry for k in _FIELD_TYPES):
        raise NetworkError(f"{where}: needs kind, out_channels, kernel, stride, pad, relu")
    for key, (check, what) in _FIELD_TYPES.items():
        if isinstance(entry[key], (list, dict)) or not check(entry[key]):     # (a list is no kind, nor hashable)
            if key == "kind":
                raise NetworkError(f"{where}: unknown kind {str(entry[key])[:40]!r}, expected {what}")
            raise NetworkError(f"{where}: {key} must be {what}, got {str(entry[key])[:40]!r}")
    return {key: entry[key] for key in _FIELD_TYPES}


_FIELD_TYPES = {"kind": (lambda v: v in KINDS, f"one of {', '.join(KINDS)}"),
                "out_channels": (_is_int, "an integer"), "kernel": (_is_int, "an integer"),
                "stride": (_is_int, "an integer"), "pad": (_is_int, "an integer"),
                "relu": (lambda v: isinstance(v, bool), "true or false")}


def _member(archive, key: str, where: str) -> np.ndarray:
    """Array ``key`` of an open archive; a member numpy cannot read (cut short, a bad CRC, an object
    or oversized array, a bad header, no header at all) is a NetworkError naming it."""
    try:
        value = archive[key]
    except (OSError, ValueError, EOFError, MemoryError, zipfile.BadZipFile) as exc:
        raise NetworkError(f"{where}: array {key} cannot be read: {str(exc)[:80]}") from None
    if not isinstance(value, np.ndarray):       # numpy hands a member without the .npy magic back as bytes
        raise NetworkError(f"{where}: array {key} cannot be read: not an .npy array")
    return value

"""An ONNX graph read for import: constants, producers and consumers, attributes, quantization
parameters, and the error that names a node.

Everything the importer reads goes through here, so that a malformed model (a missing tensor, a
scale that is not a positive number, a zero point of the wrong type) fails with the node's name
and op type, never with a KeyError from deep inside.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
from fpgashare.dnn.onnx_deps import need_onnx
from fpgashare.errors import NetworkError

#: Largest model file the importer reads (the tiles hold a few MB of weights at most).
MAX_MODEL_BYTES = 64 << 20


class UnsupportedModelError(NetworkError):
    """The model has a node (or tensor) the tiles cannot run; the message names it and says why."""


def node_label(node) -> str:
    return f"node {node.name or '(unnamed)'!r} ({node.op_type})"


def refuse(node, why: str) -> UnsupportedModelError:
    return UnsupportedModelError(f"{node_label(node)}: {why}")


@dataclass(frozen=True)
class QParams:
    """A per-tensor quantization: real = scale * (q - zero_point), q of ``dtype`` (int8/uint8)."""

    scale: np.float32
    zero_point: int
    dtype: str

    @property
    def offset(self) -> int:
        """What the tile's int8 value adds to get q: 0 for int8, 128 for uint8 (zero point 128)."""
        return 128 if self.dtype == "uint8" else 0

    def same_as(self, other: QParams) -> bool:
        return self.scale == other.scale and self.zero_point == other.zero_point and self.dtype == other.dtype

    def describe(self) -> str:
        return f"{self.dtype} scale {float(self.scale):.6g} zero point {self.zero_point}"


class Graph:
    """One ONNX model's main graph, indexed for walking a chain of nodes."""

    def __init__(self, model, where: str) -> None:
        from onnx import numpy_helper

        self.where = where
        self.model = model
        g = model.graph
        self.constants: dict[str, np.ndarray] = {}
        for init in g.initializer:
            self.constants[init.name] = numpy_helper.to_array(init)
        self.nodes = list(g.node)
        self.producer: dict[str, object] = {}
        self.consumers: dict[str, list] = {}
        for node in self.nodes:
            if node.op_type == "Constant" and node.domain in ("", "ai.onnx"):
                self.constants[node.output[0]] = self._constant_value(node)
                continue
            for out in node.output:
                if out in self.producer:
                    raise refuse(node, f"tensor {out!r} is also produced by {node_label(self.producer[out])}")
                self.producer[out] = node
            for name in node.input:
                if name:
                    self.consumers.setdefault(name, []).append(node)
        self.inputs = [i for i in g.input if i.name not in self.constants]
        self.outputs = list(g.output)
        self.output_names = {o.name for o in g.output}

    def _constant_value(self, node) -> np.ndarray:
        from onnx import numpy_helper

        for attr in node.attribute:
            if attr.name == "value":
                return numpy_helper.to_array(attr.t)
        raise refuse(node, "a Constant without a tensor 'value' attribute")

    # ---- reading
    def constant(self, node, index: int, what: str) -> np.ndarray:
        """Input ``index`` of ``node``, which must be a constant (initializer or Constant node)."""
        if index >= len(node.input) or not node.input[index]:
            raise refuse(node, f"input {index} ({what}) is missing")
        name = node.input[index]
        if name not in self.constants:
            raise refuse(node, f"{what} {name!r} must be a constant (an initializer), not a computed tensor")
        return self.constants[name]

    def optional_constant(self, node, index: int, what: str) -> np.ndarray | None:
        if index >= len(node.input) or not node.input[index]:
            return None
        return self.constant(node, index, what)

    def attrs(self, node) -> dict:
        from onnx import helper

        return {a.name: helper.get_attribute_value(a) for a in node.attribute}

    def only_consumer(self, tensor: str, after) -> object | None:
        """The one node reading ``tensor``; None if nothing does; refused if several do."""
        users = self.consumers.get(tensor, [])
        if len(users) > 1:
            raise refuse(after, f"its output {tensor!r} feeds {len(users)} nodes "
                                f"({', '.join(node_label(u) for u in users)}); the tiles run a chain of layers")
        return users[0] if users else None

    def qparams(self, node, scale_index: int, zp_index: int, what: str) -> QParams:
        """Per-tensor quantization parameters of a Q/DQ (or QLinear*) node's activation."""
        scale = self.constant(node, scale_index, f"{what} scale")
        zp = self.optional_constant(node, zp_index, f"{what} zero point")
        if scale.size != 1:
            raise refuse(node, f"{what} has {scale.size} scales; activations must be quantized per tensor")
        s = np.float32(scale.reshape(-1)[0])
        if scale.dtype != np.float32 or not np.isfinite(s) or s <= 0:
            raise refuse(node, f"{what} scale must be one positive float32, got {scale.dtype} {s}")
        if zp is None:
            return QParams(s, 0, "uint8")    # the ONNX default zero point is uint8 0
        if zp.size != 1 or zp.dtype not in (np.int8, np.uint8):
            raise refuse(node, f"{what} zero point must be one int8 or uint8, got {zp.dtype} of size {zp.size}")
        return QParams(s, int(zp.reshape(-1)[0]), zp.dtype.name)


def load_graph(model: str | Path | bytes | object) -> Graph:
    """An ONNX model from a path, its bytes or a ModelProto, checked; NetworkError if malformed."""
    onnx = need_onnx()
    from google.protobuf.message import DecodeError

    where = "model"
    if isinstance(model, (str, Path)):
        where = str(model)
        path = Path(model)
        if not path.is_file():
            raise NetworkError(f"{where}: no such file")
        if path.stat().st_size > MAX_MODEL_BYTES:
            raise NetworkError(f"{where}: {path.stat().st_size} bytes, more than the {MAX_MODEL_BYTES} an import reads")
        model = path.read_bytes()
    if isinstance(model, (bytes, bytearray)):
        if len(model) > MAX_MODEL_BYTES:
            raise NetworkError(f"{where}: {len(model)} bytes, more than the {MAX_MODEL_BYTES} an import reads")
        try:
            model = onnx.load_model_from_string(bytes(model))
        except (DecodeError, ValueError, RuntimeError) as exc:
            raise NetworkError(f"{where}: not an ONNX model: {exc}") from None
    if not isinstance(model, onnx.ModelProto):
        raise NetworkError(f"{where}: expected an ONNX model (path, bytes or ModelProto), got {type(model).__name__}")
    try:
        onnx.checker.check_model(model)
    except onnx.checker.ValidationError as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else "invalid"
        raise NetworkError(f"{where}: malformed ONNX model: {first}") from None
    if not model.graph.node:
        raise NetworkError(f"{where}: the graph has no nodes")
    return Graph(model, where)

"""A client's DNN pipeline of an imported ONNX model: the client converts the model, sends the
converted network in its registration, quantizes each float input and reads the output integers.

The daemon's DNN input stage takes uint8 pixels p and gives the tiles p >> 1 (reference.py); an
imported model's int8 input q >= 0 therefore travels as p = 2q, exactly. A model whose input
quantizes to a negative value cannot travel this way and its input is refused (image inputs, the
common case, quantize to q >= 0).
"""

from __future__ import annotations

import numpy as np
from fpgashare.dnn.onnx_import import import_onnx
from fpgashare.dnn.onnx_model import ImportedModel
from fpgashare.dnn.onnx_shipped import onnx_path
from fpgashare.errors import FrameError, NetworkError


def registration(model: str) -> tuple[ImportedModel, dict]:
    """(imported model, the fields a ``dnn`` registration carries for it)."""
    from fpgashare.dnn.network_wire import MAX_WIRE_BYTES, network_bytes

    path = onnx_path(model)
    if path is None:
        raise NetworkError(f"{model}: not an ONNX model (.onnx)")
    imported = import_onnx(path)
    data = network_bytes(imported.network)
    if len(data) > MAX_WIRE_BYTES:
        raise NetworkError(f"{model}: the converted network is {len(data)} bytes; a registration carries at most "
                           f"{MAX_WIRE_BYTES}")
    label = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in path.stem)[:40] or "onnx"
    return imported, {"model": label, "network": data}


def to_pixels(imported: ImportedModel, x: np.ndarray) -> np.ndarray:
    """One float input (the model's input shape) -> the uint8 frame that carries its int8 values."""
    q = imported.quantize_input(np.asarray(x))
    if len(q) != 1:
        raise FrameError(f"{imported.network.name}: submit one input at a time, got {len(q)}")
    if q.min() < 0:
        raise FrameError(f"{imported.network.name}: this input quantizes to negative int8 values, which the "
                         f"daemon's pixel input (p >> 1) cannot carry")
    frame = q[0].astype(np.uint8) * 2
    return frame[..., 0] if frame.shape[2] == 1 else frame


class ImportedFuture:
    """``result()``: the output integers of one input (ONNX order, the output's zero point)."""

    def __init__(self, future, imported: ImportedModel) -> None:
        self._future, self.imported = future, imported

    def result(self, timeout: float | None = None) -> np.ndarray:
        raw = np.asarray(self._future.result(timeout), dtype=np.int8)
        return self.imported.outputs(raw.reshape(1, *self.imported.network.output_shape))[0]


class ImportedDnnPipeline:
    """A DnnPipeline of an imported model: ``submit(x)`` takes one float input in the model's
    input shape; every other attribute is the pipeline's (ring, placement, close, ...)."""

    def __init__(self, pipe, imported: ImportedModel) -> None:
        self.pipe, self.imported = pipe, imported

    def submit(self, x: np.ndarray, timeout: float | None = None) -> ImportedFuture:
        return ImportedFuture(self.pipe.submit(to_pixels(self.imported, x), timeout), self.imported)

    def __getattr__(self, name: str):
        return getattr(self.pipe, name)

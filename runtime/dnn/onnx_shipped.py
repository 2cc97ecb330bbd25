"""Which model names are ONNX files: a path ending in ``.onnx``, or an example fpgashare ships; and
the names a DNN model may take, for the error naming an unknown one."""

from __future__ import annotations

from pathlib import Path

from fpgashare.dnn.models import MODELS, MODELS_DIR

#: ONNX examples shipped with the package (runtime/dnn/onnx_example.py makes digits_qdq).
SHIPPED_ONNX = {"digits_qdq": MODELS_DIR / "digits_qdq.onnx"}


def shipped_onnx(model: str) -> Path | None:
    return SHIPPED_ONNX.get(model)


def onnx_path(model: str) -> Path | None:
    """The ONNX file ``model`` names, or None if it names no ONNX model."""
    if model in SHIPPED_ONNX:
        return SHIPPED_ONNX[model]
    return Path(model) if model.lower().endswith(".onnx") else None


def known_models(network_files: bool) -> str:
    """What a DNN model may name: the shipped networks, the shipped ONNX examples, a quantized ONNX
    model (.onnx), and with ``network_files`` a network file (.npz). ``fpgashare dnn eval`` and the
    daemon both say it from here so neither leaves a kind out; the daemon takes no network file,
    since a client sends the network itself, not a path."""
    names = ", ".join((*MODELS, *SHIPPED_ONNX))
    if network_files:
        return f"{names}, a network file (.npz) or a quantized ONNX model (.onnx)"
    return f"{names} or a quantized ONNX model (.onnx)"

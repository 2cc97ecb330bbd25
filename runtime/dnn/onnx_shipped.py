"""Which model names are ONNX files: a path ending in ``.onnx``, or an example fpgashare ships."""

from __future__ import annotations

from pathlib import Path

from fpgashare.dnn.models import MODELS_DIR

#: ONNX examples shipped with the package (runtime/dnn/onnx_example.py makes digits_qdq).
SHIPPED_ONNX = {"digits_qdq": MODELS_DIR / "digits_qdq.onnx"}


def shipped_onnx(model: str) -> Path | None:
    return SHIPPED_ONNX.get(model)


def onnx_path(model: str) -> Path | None:
    """The ONNX file ``model`` names, or None if it names no ONNX model."""
    if model in SHIPPED_ONNX:
        return SHIPPED_ONNX[model]
    return Path(model) if model.lower().endswith(".onnx") else None

"""The optional ``onnx`` extra: one place that imports it and says how to get it when it is missing."""

from __future__ import annotations

from fpgashare.errors import NetworkError

HINT = "ONNX import needs the onnx extra: pip install 'fpgashare[onnx]'"


def need_onnx():
    """The ``onnx`` module, or NetworkError telling how to install it."""
    try:
        import onnx
    except ImportError:
        raise NetworkError(f"{HINT} (the onnx package is not installed)") from None
    return onnx


def need_onnxruntime():
    """The ``onnxruntime`` module, or NetworkError telling how to install it."""
    try:
        import onnxruntime
    except ImportError:
        raise NetworkError(f"{HINT} (the onnxruntime package is not installed)") from None
    return onnxruntime

"""Hardware access behind one small interface: the simulated board in RTL (``sim``) or its
analytical twin (``model``); the board via pynq comes next. Nothing above knows which it has."""

from __future__ import annotations

from runtime.backends.base import Backend, FrameReport, LoadReport
from runtime.errors import FpgashareError
from runtime.platform import Platform

BACKENDS = ("model", "sim")


def make_backend(name: str, platform: Platform) -> Backend:
    """The backend called ``name`` for ``platform``."""
    if name == "model":
        from runtime.backends.model import ModelBackend

        return ModelBackend(platform)
    if name == "sim":
        from runtime.backends.sim import SimBackend

        return SimBackend(platform)
    raise FpgashareError(f"unknown backend {name!r}; known: {', '.join(BACKENDS)}")


__all__ = ["BACKENDS", "Backend", "FrameReport", "LoadReport", "make_backend"]

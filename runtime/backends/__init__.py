"""Hardware access behind one small interface: the simulated board in RTL (``sim``), its
analytical twin (``model``), the twin with faults injected on demand (``faulty``), or the board
through pynq (``pynq``: partial loads so far). Nothing above knows which it has. What a backend may
raise, and what the engine does then: fpgashare.errors.HardwareError."""

from __future__ import annotations

from fpgashare.backends.base import Backend, FrameReport, LoadReport
from fpgashare.catalogue.platform import Platform
from fpgashare.errors import FpgashareError

BACKENDS = ("model", "sim", "pynq", "faulty")


def backend_class(name: str) -> type[Backend]:
    """The class of the backend called ``name`` (without building it: the sim backend compiles RTL)."""
    if name == "model":
        from fpgashare.backends.model import ModelBackend

        return ModelBackend
    if name == "faulty":
        from fpgashare.backends.faulty import FaultyBackend

        return FaultyBackend
    if name == "sim":
        from fpgashare.backends.sim import SimBackend

        return SimBackend
    if name == "pynq":
        from fpgashare.backends.pynq_board import PynqBackend

        return PynqBackend
    raise FpgashareError(f"unknown backend {name!r}; known: {', '.join(BACKENDS)}")


def make_backend(name: str, platform: Platform, streams: int | None = None, **options) -> Backend:
    """The backend called ``name`` for ``platform`` (``pynq`` takes ``bitstreams=`` and the
    optional ``firmware_dir=`` / ``fpga_manager=`` paths). ``streams``: run that many video streams
    at once (capped by what the backend carries); the simulated board then co-simulates overlapping
    work (backends/sim.py). Without it the sim backend runs one operation at a time on stream 0."""
    if name == "model":
        from fpgashare.backends.model import ModelBackend

        return ModelBackend(platform, streams)
    if name == "faulty":
        from fpgashare.backends.faulty import FaultyBackend

        return FaultyBackend(platform, streams)
    if name == "sim":
        from fpgashare.backends.sim import SimBackend

        return SimBackend(platform, streams)
    if name == "pynq":
        from fpgashare.backends.pynq_board import PynqBackend

        return PynqBackend(platform, **options)
    raise FpgashareError(f"unknown backend {name!r}; known: {', '.join(BACKENDS)}")


__all__ = ["BACKENDS", "Backend", "FrameReport", "LoadReport", "backend_class", "make_backend"]

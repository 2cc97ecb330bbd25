"""fpgashare runtime: platforms, bitstreams, backends, slot manager, scheduler, daemon and client API."""

__version__ = "0.1.0"

from fpgashare.client import AdmissionRejected, DeadlineMissed, FrameDropped, FrameFailed, connect

__all__ = ["AdmissionRejected", "DeadlineMissed", "FrameDropped", "FrameFailed", "connect"]

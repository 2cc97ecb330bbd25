"""What the client raises: the daemon's refusals (``DaemonError`` and its kinds) and a frame's
outcomes other than a result."""

from __future__ import annotations

import numpy as np
from fpgashare.errors import FpgashareError


class DaemonError(FpgashareError):
    """The daemon refused a request; ``kind`` is the protocol's error kind."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


class QuotaExceeded(DaemonError):  # noqa: N818 (the API's names: what happened, not 'Error')
    """A limit of the daemon refused the request; the message names the limit and its value."""


class AdmissionRejected(DaemonError):  # noqa: N818 (the API's names: what happened, not 'Error')
    """Admission control turned the pipeline away; the message says what does not fit."""


class FrameDropped(FpgashareError):  # noqa: N818 (the API's names: what happened, not 'Error')
    """The frame was dropped; ``reason`` says why (deadline out of reach, client gone, ...)."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"frame dropped: {reason}")
        self.reason = reason


class DeadlineMissed(FpgashareError):  # noqa: N818 (the API's names: what happened, not 'Error')
    """The frame finished after its deadline; ``output`` still holds the result, ``reason`` what
    the daemon knows of why (e.g. its host ran late), or ''."""

    def __init__(self, latency_ms: float, output: np.ndarray, reason: str = "") -> None:
        why = f" ({reason})" if reason else ""
        super().__init__(f"frame finished {latency_ms:.2f} ms after its release, past its deadline{why}")
        self.latency_ms, self.output, self.reason = latency_ms, output, reason


class FrameFailed(FpgashareError):  # noqa: N818 (the API's names: what happened, not 'Error')
    """The hardware path failed for this frame."""


def daemon_error(error: dict) -> DaemonError:
    """The exception for an error reply's ``error`` map (``kind``, ``message``)."""
    cls = {"admission": AdmissionRejected, "quota": QuotaExceeded}.get(error["kind"], DaemonError)
    return cls(error["kind"], error["message"])


def unwrap(message: dict) -> dict:
    """``message`` if the daemon answered ok, else its error raised."""
    if message.get("ok"):
        return message
    raise daemon_error(message["error"])

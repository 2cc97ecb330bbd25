"""The client API: how an app asks the daemon for pipelines and streams frames through them.

    from fpgashare import connect
    with connect() as fpga:
        edges = fpga.pipeline("edges", stages=["gauss3x3", "sobel_mag"],
                              period_ms=33.3, deadline_ms=33.3, frame_shape=(480, 640))
        fut = edges.submit(frame)                  # non-blocking
        out = fut.result(timeout=1.0)              # ndarray; raises DeadlineMissed / FrameDropped

Frames go into the pipeline's shared-memory ring (runtime/wire/shm.py); only the ring slot's index
crosses the socket. Every submitted frame ends in exactly one outcome: its output (on time),
``DeadlineMissed`` (late; the output is on the exception), ``FrameDropped`` (with the daemon's
reason) or ``FrameFailed``.

The ring is the app's alone: its descriptor arrives with the registration's reply (SCM_RIGHTS)
and nothing else can open it. When the daemon goes, every call raises ``DaemonError`` (kind
``gone``), never a raw OSError; ``connect(reconnect=True)`` instead connects again on the next
call and registers the app's pipelines anew (frames in flight at the loss end ``gone``).

The package, by idea: ``fpga`` (``connect``, the ``Fpga`` API and reconnecting), ``connection``
(the socket, replies matched to requests), ``pipeline`` (pipelines and their frames' futures),
``errors`` (what it raises).
"""

from fpgashare.client.errors import (
                                     AdmissionRejected,
                                     DaemonError,
                                     DeadlineMissed,
                                     FrameDropped,
                                     FrameFailed,
                                     QuotaExceeded,
)
from fpgashare.client.fpga import Fpga, connect
from fpgashare.client.pipeline import DnnFuture, DnnPipeline, FrameFuture, Pipeline

__all__ = ["AdmissionRejected", "DaemonError", "DeadlineMissed", "DnnFuture", "DnnPipeline", "Fpga", "FrameDropped",
           "FrameFailed", "FrameFuture", "Pipeline", "QuotaExceeded", "connect"]

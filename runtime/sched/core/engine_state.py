"""What the engine's parts share of it, as a type: the event loop they post completions into, the
work they end, and the figures they add to.

The parts (``PortDriver`` in port_use.py, ``Placement`` in slot_use.py, ``DnnJobs`` in
dnn_jobs.py, ``CpuJobs`` in cpu_jobs.py, ``Foresight`` in foresight.py, ``FrameStream`` in
frame_stream.py) are each handed the engine
as an ``EngineState``. They never import engine.py, so the core has no import cycle, and each part
states here exactly what it reads and calls of the engine, instead of seeing all of it.
"""

from __future__ import annotations

from collections.abc import MutableSequence
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import numpy as np
    from fpgashare.backends.base import Backend, Pending
    from fpgashare.catalogue.platform import Platform
    from fpgashare.catalogue.workload import PipelineSpec
    from fpgashare.sched.analysis.schedulability import AdmissionContract
    from fpgashare.sched.core.demand import Demand
    from fpgashare.sched.core.jobs import DnnRequest, Frame, TraceEvent
    from fpgashare.sched.core.slots import SlotManager
    from fpgashare.sched.host.cpu_work import CpuExecutor


class StreamState(Protocol):
    """The engine's video stream (``FrameStream``, frame_stream.py) as the other parts use it."""

    works: dict[str, Pending]         #: each streaming frame's DMA, by frame key
    def free(self) -> bool: ...
    def free_at(self) -> float: ...
    def changed(self) -> None: ...
    def job_done(self, frame: Frame) -> None: ...
    def trace(self, name: str, start: float, end: float, pipeline: str) -> None: ...


class PortState(Protocol):
    """The engine's port driver (``PortDriver``, port_use.py) as the watchdog reads it."""

    started: dict[int, float]         #: when each slot's load in flight started


class EngineState(Protocol):
    """The engine as its parts see it."""

    # ---- the loop
    @property
    def now(self) -> float: ...
    def push(self, t: float, kind: str, data: object) -> None: ...
    def when_done(self, work: Pending, end: float, kind: str, data: object) -> None: ...

    # ---- what it runs on and keeps to
    backend: Backend
    slots: SlotManager
    port: PortState
    def working_platform(self) -> Platform: ...
    contract: AdmissionContract
    pin_moves: int
    planned_reloads: dict[int, tuple[str, float]]
    stream_id: int
    dnn_stream_id: int | None
    control_s: float
    video_streams: int
    want_output: bool
    cpu: CpuExecutor                  #: the host's workers for CPU stages
    cpu_besteffort: CpuExecutor       #: ... and for best-effort DNN images

    # ---- real-time work
    pipelines: list[PipelineSpec]
    pending: list[Frame]
    running: dict[str, Frame]
    stream_info: list[tuple[float, float, frozenset[str]]]
    demand: Demand
    @property
    def end_s(self) -> float: ...
    def next_release_s(self, pipeline: PipelineSpec) -> float: ...
    committed: Frame | None
    stream: StreamState
    def test_pixels(self, frame: Frame) -> np.ndarray: ...
    def fabric_release(self, frame: Frame) -> None: ...

    # ---- how work ends, and what is counted
    trace: MutableSequence[TraceEvent]
    frames: list[Frame]
    dnn_pipelines: list[PipelineSpec]
    cpu_pipelines: list[PipelineSpec]
    dnn_images: dict[str, int]
    dnn_busy_s: float
    def finish(self, frame: Frame, outcome: str, reason: str = "") -> None: ...
    def finish_dnn(self, request: DnnRequest, outcome: str, reason: str = "") -> None: ...
    def drop(self, frame: Frame, reason: str) -> None: ...

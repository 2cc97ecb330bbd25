"""What the engine keeps about work: a real-time frame (and the pass it is at), a best-effort DNN
image and batch, and one slice of the trace."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
from fpgashare.catalogue.workload import PipelineSpec
from fpgashare.errors import FpgashareError

#: The engine's event kinds (runtime/sched/core/engine.py, cpu_jobs.py).
RELEASE, LOAD_DONE, JOB_DONE, WAKE = "release", "load_done", "job_done", "wake"
CPU_START, CPU_DONE = "cpu_start", "cpu_done"


@dataclass
class Frame:
    pipeline: PipelineSpec
    index: int
    release: float
    deadline: float                 #: absolute
    seq: int
    start: float | None = None
    end: float | None = None
    slots: tuple[int, ...] = ()
    expected_end: float | None = None   #: when the job running it will end (known at start)
    outcome: str | None = None
    reason: str = ""
    pixels: np.ndarray | None = None    #: the frame's input (None: the workload's test frame)
    output: np.ndarray | None = None    #: the chain's output, when the engine was asked for it
    results: dict = field(default_factory=dict)   #: result registers by stage name (moments, template_match)
    step: int = 0                       #: the pass it is at (runtime/catalogue/passes.py); 0 for one-pass chains
    carry: np.ndarray | None = None     #: the previous pass's output, parked in memory
    streamed: list[tuple[float, float]] = field(default_factory=list)   #: (start, end) of each pass
    #: When the app's frame came (its latency counts from here): ``release`` unless CPU stages run
    #: first, then ``release`` is when the fabric takes it (runtime/sched/host/cpu_work.py).
    origin: float | None = None
    #: A frame committed before it arrives (runtime/sched/analysis/early_commit.py): pending from
    #: ``release`` on, it streams only from here. None: it has arrived at ``release``.
    arrives: float | None = None
    #: Its CPU stages were still computing when their bound was up (cpu_jobs.py): the host's
    #: overrun, which the arrival curve keeps from delaying the pipeline's later frames.
    overran: bool = False

    @cached_property
    def key(self) -> str:
        # Made once: a frame's pipeline and index never change, and the engine asks often.
        return f"{self.pipeline.name}/{self.index}"

    def __post_init__(self) -> None:
        if self.origin is None:
            self.origin = self.release
        self._at_pass(0)

    @property
    def due(self) -> float:
        """The frame's own deadline, CPU stages included (``deadline`` is the fabric part's): what
        the guarantee promises from when the frame came, the host's late hand-overs included."""
        return self.origin + self.pipeline.due_s + self.pipeline.handover_s

    def _at_pass(self, step: int) -> None:
        """The pass at hand: what the scheduler places, loads and streams next (plain attributes:
        the scheduler reads them for every pending frame at every decision)."""
        p = self.pipeline
        self.step = step
        self.modules: tuple[str, ...] = p.pass_modules[step]
        self.module_counts: dict[str, int] = p.pass_module_counts[step]
        self.exec_s: float = p.pass_seconds[step]
        self.remaining_s: float = p.pass_remaining[step]      #: this pass and every later one


@dataclass
class DnnRequest:
    """One image a client submitted to a best-effort DNN pipeline (the daemon's; a workload's DNN
    pipelines are always backlogged with stand-in images instead)."""

    pipeline: PipelineSpec
    image: np.ndarray
    seq: int
    release: float
    end: float | None = None
    output: np.ndarray | None = None      #: the network's int8 output, flattened
    outcome: str | None = None            #: "done", "dropped" or "error"
    reason: str = ""


@dataclass
class DnnJob:
    """A batch of images of a best-effort DNN pipeline on dnn_tile slots."""

    pipeline: PipelineSpec
    slots: tuple[int, ...]
    images: int
    start: float
    end: float
    requests: list[DnnRequest] = field(default_factory=list)
    outputs: np.ndarray | None = None
    work: object = None         #: the backend's Pending[DnnReport]

    @property
    def key(self) -> str:
        return f"{self.pipeline.name}/dnn@{','.join(map(str, self.slots))}"


@dataclass
class TraceEvent:
    """One slice of the run: a frame on its slots, a load on the port."""

    track: str
    name: str
    start: float
    end: float
    args: dict = field(default_factory=dict)


def arrived(frames: Iterable[Frame]) -> float:
    """When the first of ``frames`` (pending ones) came: a frame committed before it arrives
    (``Frame.arrives``) waits for the port only from then (inf for none)."""
    return min((f.release if f.arrives is None else f.arrives for f in frames), default=float("inf"))


def fault_reason(exc: Exception) -> str:
    """The reason a frame or image ends ``error`` when the backend raised ``exc``."""
    return str(exc) if isinstance(exc, FpgashareError) else f"hardware fault: {type(exc).__name__}: {exc}"

"""The scheduler core: a deterministic event-driven state machine over an injected clock.

Events (frame releases, load completions, job completions) are taken in (time, sequence) order;
after each one the policy decides what to start and what to load. Hardware work goes to the
backend, which reports its duration in hardware time (cycles at the platform's clocks); the engine
schedules the completion that far ahead, or takes the end a co-simulated board reports (its RTL
runs up to each event first, ``run_hardware``: an end before it becomes the next event). Under a
VirtualClock a run of thousands of frames takes seconds; under a WallClock the same code paces
itself to real time.

Every released frame ends in exactly one outcome: ``on_time``, ``late``, ``dropped`` (with a
reason) or ``error``.

Where frames come from is the engine's *release source* (sched/sources/): a workload's periodic
releases (bench, the tests) or the frames apps submit (the daemon, whose pipelines come and go
through the registrations part, sched/board/registrations.py). Everything else is the same.

Slots are not the only shared resource: an engine drives one of the shell's video streams (an
input and an output, hdl_sim/rtl/shell.sv), so it streams one frame or one DNN batch at a time,
whatever slots are free (``FrameStream.free``). A shell with several streams runs one engine per
partition of the fabric, a stream and slots of its own, on one clock and one configuration port
(``Board``, runtime/sched/board/board.py).
"""

from __future__ import annotations

import heapq
import logging
from collections import deque
from collections.abc import Sequence
from dataclasses import replace

import numpy as np
from fpgashare.backends.base import Backend, Pending
from fpgashare.catalogue.platform import Platform
from fpgashare.catalogue.workload import PipelineSpec, Workload
from fpgashare.sched.analysis.control_traffic import control_seconds
from fpgashare.sched.analysis.schedulability import UNCONSTRAINED, AdmissionContract
from fpgashare.sched.core.clock import Clock, VirtualClock
from fpgashare.sched.core.cpu_jobs import CpuJobs
from fpgashare.sched.core.demand import Demand
from fpgashare.sched.core.dnn_jobs import DnnJobs
from fpgashare.sched.core.foresight import Foresight
from fpgashare.sched.core.frame_stream import VIDEO_STREAMS, FrameStream
from fpgashare.sched.core.jobs import (
    CPU_DONE,
    CPU_START,
    JOB_DONE,
    LOAD_DONE,
    RELEASE,
    WAKE,
    DnnJob,
    DnnRequest,
    Frame,
    TraceEvent,
    arrived,
)
from fpgashare.sched.core.port_use import PortDriver
from fpgashare.sched.core.release_source import ReleaseSource
from fpgashare.sched.core.run_summary import summarize
from fpgashare.sched.core.slot_use import Placement
from fpgashare.sched.core.slots import SlotManager, SlotState
from fpgashare.sched.core.watchdog import Watchdog
from fpgashare.sched.host.cpu_work import CpuExecutor

log = logging.getLogger(__name__)


class Engine:
    """Runs real-time pipelines under ``policy`` on ``backend``, their frames from ``source``
    (``workload``'s periodic releases, or the frames apps submit). Its parts, each handed the engine as an
    ``EngineState`` (engine_state.py): ``port`` drives the configuration port, ``placement`` fits
    frames to slots and keeps the contract's pins, ``dnn`` runs DNN batches, ``cpu_jobs`` the
    host's work, ``stream`` carries frames and batches through the shell's video stream,
    ``foresight`` forecasts what modules are wanted when, ``watchdog`` (if asked for) ends
    hardware work that overruns, ``members`` (the daemon's, set by its board) takes pipelines
    that come and go."""

    def __init__(self, workload: Workload, backend: Backend, policy, clock: Clock | None = None,
                 replacement: str = "belady", want_output: bool = False, drain_s: float = 1.0,
                 contract: AdmissionContract | None = None, dnn_jobs: type[DnnJobs] = DnnJobs,
                 source: ReleaseSource | None = None, watchdog: bool = False,
                 trace_limit: int | None = None, video_streams: int = VIDEO_STREAMS) -> None:
        if source is None:
            raise TypeError("an engine needs a release source (runtime/sched/sources/)")
        if video_streams < 1:
            raise ValueError(f"an engine carries at least one video stream, not {video_streams}")
        self.workload, self.backend, self.policy, self.source = workload, backend, policy, source
        self.clock = clock or VirtualClock()
        self.slots = SlotManager(backend, replacement)
        self.want_output = want_output
        self.drain_s = drain_s
        self.pipelines = [p for p in workload.pipelines if p.realtime]
        self.dnn_pipelines = [p for p in workload.pipelines if not p.realtime]
        self.cpu_pipelines: list[PipelineSpec] = []   #: real-time pipelines wholly on the host (the daemon's)
        self.port = PortDriver(self)
        self.placement = Placement(self)
        self.dnn = dnn_jobs(self)         #: the daemon's engine hands in a part with a queue of submitted images
        self.cpu_jobs = CpuJobs(self)
        self.foresight = Foresight(self, self.port)
        self.stream = FrameStream(self, self.dnn, self.cpu_jobs)
        self.dnn_images: dict[str, int] = {p.name: 0 for p in self.dnn_pipelines}
        self.frames: list[Frame] = []
        self.pending: list[Frame] = []
        self.running: dict[str, Frame] = {}
        #: a daemon runs for days: it keeps the newest ``trace_limit`` slices
        self.trace: list[TraceEvent] | deque[TraceEvent] = [] if trace_limit is None else deque(maxlen=trace_limit)
        self._events: list[tuple[float, int, str, object]] = []
        self._seq = 0
        self._last = 0.0
        self.exposed_reconfig_s = 0.0     #: port busy while no slot computes
        self.stalled_reconfig_s = 0.0     #: ... and a real-time frame is waiting
        self.steady_exposed_s = 0.0       #: exposed after the registration window (from t0 on)
        self.busy_by_slot = [0.0] * len(self.slots.slots)   #: seconds each slot spent computing
        self.dnn_busy_s = 0.0             #: stream time of DNN batches (the DNN's compute time)
        self.exposed_by_reason: dict[str, float] = {}
        self.demand = Demand(source.need_time)
        self.stream_info: list[tuple[float, float, frozenset[str]]] = []   # per pipeline: deadline, run time, modules
        source.attach(self)
        self.pipelines_changed()
        self._wakes: set[float] = set()
        self.on_finish = None      #: called with each frame as it ends (the daemon answers its client)
        #: called with each event's time after the event, before its decision (the daemon answers then,
        #: and checks the event was taken in time)
        self.on_event_taken = None
        self.contract: AdmissionContract = UNCONSTRAINED  #: what edf keeps to (sched/analysis)
        self.pin_moves = 0                #: pins moved to hide a load (runtime/sched/policies/pin_move.py)
        self.planned_reloads: dict[int, tuple[str, float]] = {}   #: slot -> (module, by when)
        #: The frame that holds the port for its loads until it streams (edf's commitment), if any.
        self.committed: Frame | None = None
        self.cpu = CpuExecutor()          #: the host's worker for CPU stages (the daemon's has threads)
        #: best-effort work on the host (DNN images) has workers of its own: it never queues ahead
        #: of a real-time frame's CPU stages
        self.cpu_besteffort = CpuExecutor()
        self.stream_id = 0                #: the shell's video stream this engine's work takes (trace)
        #: a spare stream the DNN's batches take beside the frames (None: they share ``stream_id``;
        #: runtime/sched/policies/backfill.py says when a batch may run beside a frame's pass)
        self.dnn_stream_id: int | None = None
        #: an operation's register traffic beyond its cycles (the analysis's X; a board's own: board.py)
        self.control_s = control_seconds(workload.platform)
        #: how many of the shell's streams (stream_id on) it carries at once: 1 but for a table
        #: that plans several streams over shared slots (runtime/sched/policies/planned.py)
        self.video_streams = video_streams
        #: False: no load but a committed frame's after the first release (a partition whose every
        #: module is pinned: runtime/sched/board/stream_plan.py counts no port time for it)
        self.loads_after_t0 = True
        self.watchdog = Watchdog(self) if watchdog else None
        #: the daemon's part that takes pipelines as they come and go (registrations.py), if any
        self.members = None
        if contract is not None:
            self.placement.set_contract(contract)
        # A workload's pipelines register before their first frame: the policy may fill every
        # slot once (setup and prefetch) before releases begin, the same warm-up for every policy
        # (each load with its register traffic, as the analysis's L: the first frames find it done).
        self.t0 = (self.port.longest_load_s() + self.control_s) * len(self.slots.slots) if source.warm_up else 0.0

    # ---- the event loop
    def push(self, t: float, kind: str, data: object) -> None:
        self._seq += 1
        heapq.heappush(self._events, (t, self._seq, kind, data))

    @property
    def now(self) -> float:
        return self.clock.now()

    @property
    def end_s(self) -> float:
        """When releases stop and best-effort work is no longer counted."""
        return self.t0 + self.workload.duration_s

    def run(self) -> Engine:
        """The whole workload under virtual (or wall) time, then every unfinished frame dropped."""
        self.source.schedule()
        self.begin()
        self.advance_to(self.horizon_s)
        self.end_run()
        return self

    @property
    def horizon_s(self) -> float:
        """When a run stops taking events: the releases, then ``drain_s`` for the last frames, and
        at least the last release's latest deadline (an admitted frame is owed all of it)."""
        owed = (p.jitter_s + p.deadline_s for p in self.pipelines)
        return self.t0 + self.workload.duration_s + max([self.drain_s, *owed])

    def end_run(self) -> None:
        """The run is over: every frame not finished yet ends ``dropped``."""
        horizon = self.horizon_s
        self._advance(max(self.now, min(horizon, self.t0 + self.workload.duration_s)))
        for frame in [*self.pending, *self.running.values(), *(f for f, _, _ in self.cpu_jobs.running.values())]:
            self.finish(frame, "dropped", "the run ended before it completed")
        self.cpu_jobs.running.clear()
        self.pending.clear()
        self.running.clear()
        self.stream.works.clear()
        self.stream.lanes.clear()
        self.stream.changed()

    def begin(self) -> None:
        """Let the policy set up (warm-up loads) before the first event."""
        self.policy.setup(self)
        self.port.kick()

    def next_event_s(self) -> float | None:
        """When the next event is due (None when nothing is scheduled)."""
        return self._events[0][0] if self._events else None

    def when_done(self, work: Pending, end: float, kind: str, data: object) -> None:
        """Take ``work``'s end as event ``kind``: at ``end`` (start + its seconds), or where the
        backend reports it (a HardwarePending: the co-simulated board's cycles)."""
        if work.timed_by_hardware:
            work.when_done(lambda t: self.push(max(t, self.now), kind, data))
        else:
            self.push(end, kind, data)

    def advance_to(self, horizon: float) -> None:
        """Take every event due by ``horizon``, in order; after each, the policy decides."""
        while True:
            self.backend.run_hardware(min(self._events[0][0], horizon) if self._events else horizon)
            if not self._events or self._events[0][0] > horizon:
                break
            t, _, kind, data = heapq.heappop(self._events)
            self._advance(t)
            if kind == RELEASE:
                self.pending.append(data)
                self._released(data)
            elif kind == WAKE:
                self._wakes.discard(t)
            elif kind == LOAD_DONE:
                self._load_done()
            elif kind == CPU_START:
                self.cpu_jobs.start(data)
            elif kind == CPU_DONE:
                self.cpu_jobs.done(data)
            elif kind == JOB_DONE:
                if isinstance(data, DnnJob):
                    self.dnn.done(data)
                else:
                    self._job_done(data)
            if self.slots.quarantined:
                self._drop_unplaceable()
            if self.on_event_taken is not None:
                self.on_event_taken(t)
            self.decide()

    def decide(self) -> None:
        """What the loop does after every event: the policy, the mode change, the port."""
        self.policy.dispatch(self)
        self.after_dispatch()
        self.port.kick()

    def _load_done(self) -> None:
        """A load's end is due (the watchdog, if any, first checks it is done)."""
        if self.watchdog is None or not self.watchdog.hold_load():
            self.port.load_done()

    def _drop_unplaceable(self) -> None:
        """A slot is quarantined: frames (and queued DNN images) nothing can place any more end."""
        self.placement.drop_unplaceable()
        self.dnn.drop_unplaceable()

    def after_dispatch(self) -> None:
        """After the policy's decisions at each event: the mode change under way takes its next
        step (mode_change.py)."""
        if self.members is not None:
            self.members.changes.step()

    @property
    def changing(self) -> bool:
        """Whether a mode change is under way, here or on the whole board (a re-layout waiting
        for a board-idle instant): DNN batches, lends, prefetch and pin moves wait for it. A
        workload's set never changes."""
        return self.members is not None and self.members.changing

    def idle(self) -> bool:
        """Nothing in flight on the fabric: no frame waiting or streaming, no DNN batch, no load."""
        port = self.slots.port
        return (not self.pending and not self.running and not self.dnn.running and self.committed is None
                and port.current is None and not port.queue)

    def working_platform(self) -> Platform:
        """The platform without its quarantined slots: what admission may count on (slots keep
        their indices)."""
        platform = self.backend.platform
        failed = {s.index for s in self.slots.slots if s.state is SlotState.FAILED}
        if not failed:
            return platform
        return replace(platform, slots=tuple(s for s in platform.slots if s.index not in failed))

    def pipelines_changed(self) -> None:
        """The set of real-time pipelines changed: look-ahead state starts over."""
        self.placement.pipelines_changed()
        self.demand.reset(self.pipelines)
        self.stream_info = [(p.deadline_s, p.exec_s, frozenset(p.modules)) for p in self.pipelines]

    def _released(self, frame: Frame) -> None:
        self.source.released(frame)

    def next_release_s(self, pipeline: PipelineSpec) -> float:
        """Earliest time the next unreleased frame of ``pipeline`` can be released (its source's
        forecast: a workload's nominal release, a daemon's arrival curve); inf after the last."""
        return self.source.next_release_s(pipeline)

    @property
    def slot_busy_s(self) -> float:
        """Slot-seconds spent computing, all slots together."""
        return sum(self.busy_by_slot)

    def wake(self, t: float) -> None:
        """Make sure the policy is asked again at ``t`` even if nothing else happens then."""
        if t > self.now and t not in self._wakes:
            self._wakes.add(t)
            self.push(t, WAKE, None)

    def poke(self) -> None:
        """Ask the policy again as soon as events are next taken (something arrived)."""
        self.push(self.now, WAKE, None)

    def _advance(self, t: float) -> None:
        dt = t - self._last
        if dt > 0:
            busy = 0
            for slot in self.slots.slots:
                if slot.state == SlotState.BUSY:
                    busy += 1
                    self.busy_by_slot[slot.index] += dt
            current = self.slots.port.current
            if current is not None and busy == 0:
                self.exposed_reconfig_s += dt
                self.exposed_by_reason[current.reason] = self.exposed_by_reason.get(current.reason, 0.0) + dt
                self.steady_exposed_s += max(0.0, t - max(self._last, self.t0))
                if self.pending:            # and a frame waits: reconfiguration that costs time
                    # (from when it came: a frame committed before it arrives waits for nothing
                    # until then, and a load before it comes is a prefetch, as in the exact model)
                    self.stalled_reconfig_s += max(0.0, t - max(self._last, arrived(self.pending)))
        self.clock.wait_until(max(t, self.clock.now()))
        self._last = t

    # ---- jobs
    @property
    def platform(self):
        """The platform of the slots this engine drives (a partition's view on several streams)."""
        return self.backend.platform

    @property
    def runs_dnn(self) -> bool:
        """Whether the backend runs DNN batches."""
        return self.backend.runs_dnn

    def test_pixels(self, frame: Frame) -> np.ndarray:
        """The source's stand-in input for a frame that came without pixels."""
        return self.source.test_pixels(frame)

    # ---- the policy's actions beside ``start`` and ``drop`` (view.py)
    def load(self, slot: int, module: str, reason: str = "demand", stamp: float = 0.0) -> None:
        """Queue a load of ``module`` into ``slot`` (BLANK or READY) on the port."""
        self.slots.request(slot, module, reason, stamp)

    def commit(self, frame: Frame) -> None:
        """``frame`` holds the port for its loads until it streams (edf's commitment)."""
        self.committed = frame

    def start_dnn(self, pipeline: PipelineSpec, slots: Sequence[int], images: int) -> DnnJob | None:
        """Run a batch of up to ``images`` images of a best-effort DNN pipeline on dnn_tile ``slots``."""
        return self.dnn.start(pipeline, slots, images)

    def move_pin(self, slot: int, to: int) -> None:
        """The module pinned at ``slot`` is pinned at ``to`` from now on."""
        self.placement.move_pin(slot, to)

    def plan_reload(self, slot: int, module: str, by: float) -> None:
        """Load ``module`` into ``slot`` as soon as it is free, if that can be by ``by``."""
        self.placement.plan_reload(slot, module, by)

    def start(self, frame: Frame, slots: Sequence[int]) -> None:
        """Start ``frame``'s next pass on ``slots`` (frame_stream.py)."""
        self.stream.start(frame, slots)

    def _job_done(self, frame: Frame) -> None:
        """A frame's pass is due to end (the watchdog, if any, first checks it is done)."""
        if self.watchdog is None or not self.watchdog.hold_frame(frame):
            self.stream.job_done(frame)

    def summary(self, wall_s: float) -> dict:
        """Outcomes and latencies per pipeline, port and slot figures (runtime/sched/core/run_summary.py)."""
        return summarize(self, wall_s)

    def finish(self, frame: Frame, outcome: str, reason: str = "") -> None:
        if frame.outcome is not None:
            raise RuntimeError(f"frame {frame.key} already ended {frame.outcome}")
        if self.committed is frame:
            self.committed = None
        frame.outcome, frame.reason = outcome, reason
        if self.on_finish is not None:
            self.on_finish(frame)
        self.source.ended(frame)

    def finish_dnn(self, request: DnnRequest, outcome: str, reason: str = "") -> None:
        if request.outcome is not None:
            raise RuntimeError(f"DNN image {request.seq} already ended {request.outcome}")
        request.outcome, request.reason = outcome, reason
        if self.on_finish is not None:
            self.on_finish(request)

    def drop(self, frame: Frame, reason: str) -> None:
        self.pending.remove(frame)
        self.finish(frame, "dropped", reason)

    def fabric_release(self, frame: Frame) -> None:
        """The CPU prefix is done: the fabric part is released (its source says when)."""
        self.source.fabric_release(frame)

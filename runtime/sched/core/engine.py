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

Slots are not the only shared resource: an engine drives one of the shell's video streams (an
input and an output, hdl_sim/rtl/shell.sv), so it streams one frame or one DNN batch at a time,
whatever slots are free (``stream_free``). A shell with several streams runs one engine per
partition of the fabric, a stream and slots of its own, on one clock and one configuration port
(runtime/sched/board/streams.py).
"""

from __future__ import annotations

import heapq
import logging
import time
from collections.abc import Sequence

import numpy as np
from fpgashare.backends.base import Backend, FrameReport, Pending
from fpgashare.catalogue.workload import PipelineSpec, Workload
from fpgashare.sched.analysis.schedulability import UNCONSTRAINED, AdmissionContract
from fpgashare.sched.core.clock import Clock, VirtualClock
from fpgashare.sched.core.cpu_jobs import CpuJobs
from fpgashare.sched.core.demand import Demand
from fpgashare.sched.core.dnn_jobs import DnnJobs
from fpgashare.sched.core.foresight import Foresight
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
    fault_reason,
)
from fpgashare.sched.core.port_use import PortUse
from fpgashare.sched.core.run_summary import summarize
from fpgashare.sched.core.slot_use import SlotUse
from fpgashare.sched.core.slots import SlotManager, SlotState
from fpgashare.sched.host.cpu_work import CpuExecutor, chain_shape

log = logging.getLogger(__name__)

#: Frames or DNN batches one engine streams at once: one video input and one output of the shell.
VIDEO_STREAMS = 1
NOT_BUSY = float("-inf")     # Engine._stream_at while the stream can take work


class Engine(PortUse, SlotUse, DnnJobs, CpuJobs, Foresight):
    """Runs ``workload``'s real-time pipelines under ``policy`` on ``backend``."""

    def __init__(self, workload: Workload, backend: Backend, policy, clock: Clock | None = None,
                 replacement: str = "belady", want_output: bool = False, drain_s: float = 1.0,
                 contract: AdmissionContract | None = None) -> None:
        self.workload, self.backend, self.policy = workload, backend, policy
        self.clock = clock or VirtualClock()
        self.slots = SlotManager(backend, replacement)
        self.want_output = want_output
        self.drain_s = drain_s
        self.pipelines = [p for p in workload.pipelines if p.realtime]
        self.dnn_pipelines = [p for p in workload.pipelines if not p.realtime]
        self.cpu_pipelines: list[PipelineSpec] = []   #: real-time pipelines wholly on the host (the daemon's)
        self.dnn_running: dict[str, DnnJob] = {}     #: by job key (one job per slot group)
        self.dnn_images: dict[str, int] = {p.name: 0 for p in self.dnn_pipelines}
        self.frames: list[Frame] = []
        self.pending: list[Frame] = []
        self.running: dict[str, Frame] = {}
        self._streaming: dict[str, Pending[FrameReport]] = {}   # by frame key: its report, when done
        self._stream_at: float | None = None     # stream_free_at() while the stream is busy
        self.trace: list[TraceEvent] = []
        self._events: list[tuple[float, int, str, object]] = []
        self._seq = 0
        self._last = 0.0
        self.exposed_reconfig_s = 0.0     #: port busy while no slot computes
        self.stalled_reconfig_s = 0.0     #: ... and a real-time frame is waiting
        self.steady_exposed_s = 0.0       #: exposed after the registration window (from t0 on)
        self.busy_by_slot = [0.0] * len(self.slots.slots)   #: seconds each slot spent computing
        self.dnn_busy_s = 0.0             #: stream time of DNN batches (the DNN's compute time)
        self._pixels = self._test_frames()
        self._load_started: dict[int, float] = {}
        self._load_s: dict[int, float] = {}
        self._longest_load_s: float | None = None
        self.port_by_reason: dict[str, float] = {}   # demand, prefetch, warm-up, dnn, static
        self.exposed_by_reason: dict[str, float] = {}
        self._next_index = {p.name: 0 for p in self.pipelines}   # next frame not yet released
        self.demand = Demand(self._need_time)
        self.stream_info: list[tuple[float, float, frozenset[str]]] = []   # per pipeline: deadline, run time, modules
        self.pipelines_changed()
        self._wakes: set[float] = set()
        self.on_finish = None      #: called with each frame as it ends (the daemon answers its client)
        self.contract: AdmissionContract = UNCONSTRAINED  #: what edf keeps to (sched/analysis)
        self.pin_moves = 0                #: pins moved to hide a load (runtime/sched/policies/pin_move.py)
        self.planned_reloads: dict[int, tuple[str, float]] = {}   #: slot -> (module, by when)
        #: The frame that holds the port for its loads until it streams (edf's commitment), if any.
        self.committed: Frame | None = None
        self.cpu = CpuExecutor()          #: the host's worker for CPU stages (the daemon's has threads)
        #: best-effort work on the host (DNN images) has workers of its own: it never queues ahead
        #: of a real-time frame's CPU stages
        self.cpu_besteffort = CpuExecutor()
        self.on_cpu: dict[str, tuple[Frame, str, object]] = {}   #: frame key -> (frame, "before"/"after", Pending)
        self.cpu_overruns = 0             #: CPU parts that took longer than their bound
        self._cpu_late: set[str] = set()
        #: The shared port's round-robin grants when this engine runs one partition of the fabric
        #: (runtime/sched/board/port_share.py, streams.py); None: the port is this engine's alone.
        self.port_arbiter = None
        self.stream_id = 0                #: the shell's video stream this engine's work takes (trace)
        #: False: no load but a committed frame's after the first release (a partition whose every
        #: module is pinned: runtime/sched/board/stream_plan.py counts no port time for it)
        self.loads_after_t0 = True
        if contract is not None:
            self.set_contract(contract)
        # Pipelines register before their first frame: the policy may fill every slot once
        # (setup and prefetch) before releases begin, the same warm-up for every policy.
        self.t0 = self.longest_load_s() * len(self.slots.slots)

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
        self._schedule_releases()
        self.begin()
        self.advance_to(self.horizon_s)
        self.end_run()
        return self

    @property
    def horizon_s(self) -> float:
        """When a run stops taking events: the releases, then ``drain_s`` for the last frames."""
        return self.t0 + self.workload.duration_s + self.drain_s

    def end_run(self) -> None:
        """The run is over: every frame not finished yet ends ``dropped``."""
        horizon = self.horizon_s
        self._advance(max(self.now, min(horizon, self.t0 + self.workload.duration_s)))
        for frame in [*self.pending, *self.running.values(), *(f for f, _, _ in self.on_cpu.values())]:
            self.finish(frame, "dropped", "the run ended before it completed")
        self.on_cpu.clear()
        self.pending.clear()
        self.running.clear()
        self._streaming.clear()
        self._stream_at = None

    def begin(self) -> None:
        """Let the policy set up (warm-up loads) before the first event."""
        self.policy.setup(self)
        self._kick_port()

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
                self._cpu_start(data)
            elif kind == CPU_DONE:
                self._cpu_done(data)
            elif kind == JOB_DONE:
                if isinstance(data, DnnJob):
                    self._dnn_done(data)
                else:
                    self._job_done(data)
            if self.slots.quarantined:
                self._drop_unplaceable()
            self.policy.dispatch(self)
            self.after_dispatch()
            self._kick_port()

    def after_dispatch(self) -> None:
        """After the policy's decisions at each event (the daemon's engine steps its mode changes)."""

    @property
    def changing(self) -> bool:
        """Whether a mode change is under way (a workload's set never changes)."""
        return False

    def pipelines_changed(self) -> None:
        """The set of real-time pipelines changed: look-ahead state starts over."""
        self._copies: dict[str, int] = {}
        for p in self.pipelines:
            for module, count in p.module_counts.items():
                self._copies[module] = max(self._copies.get(module, 0), count)
        self.demand.reset(self.pipelines)
        self.stream_info = [(p.deadline_s, p.exec_s, frozenset(p.modules)) for p in self.pipelines]

    def _released(self, frame: Frame) -> None:
        self._next_index[frame.pipeline.name] = frame.index + 1
        self.demand.moved(frame.pipeline)

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
                    self.stalled_reconfig_s += dt
        self.clock.wait_until(max(t, self.clock.now()))
        self._last = t

    def _schedule_releases(self) -> None:
        seq = 0
        for p in self.pipelines:
            k = 0
            while p.offset_s + k * p.period_s < self.workload.duration_s:
                release = self.t0 + p.release_s(k, self.workload.seed)
                frame = Frame(p, k, release, release + p.deadline_s, seq)
                seq += 1
                self.frames.append(frame)
                self.push(release, RELEASE, frame)
                k += 1

    def _test_frames(self) -> dict[str, np.ndarray]:
        rng = np.random.default_rng(self.workload.seed)
        out = {}
        for p in self.pipelines:
            shape = p.stages[0].kind.input_shape(*p.frame)
            out[p.name] = rng.integers(0, 256, shape, dtype=np.uint8)
        return out

    # ---- jobs
    @property
    def platform(self):
        """The platform of the slots this engine drives (a partition's view on several streams)."""
        return self.backend.platform

    @property
    def runs_dnn(self) -> bool:
        """Whether the backend runs DNN batches."""
        return self.backend.runs_dnn

    @property
    def port_shared(self) -> bool:
        """Whether another partition may load through the same port after the first release (its
        loads may come between this one's; a quiet partition's never do)."""
        return self.port_arbiter is not None and any(e.loads_after_t0 for e in self.port_arbiter.engines
                                                     if e is not self)

    def stream_free(self) -> bool:
        """Whether the shell's video stream can take a frame or a DNN batch now."""
        return len(self.running) + len(self.dnn_running) < VIDEO_STREAMS

    def stream_free_at(self) -> float:
        """When the video stream can next take a frame or a batch (now if it can)."""
        at = self._stream_at              # asked for every pending frame; changes only at a start or an end
        if at is None:
            at = self._stream_at = NOT_BUSY if self.stream_free() else min(self._job_ends())
        return self.now if at is NOT_BUSY else at

    def _job_ends(self) -> list[float]:
        """When each frame and DNN batch on the stream ends."""
        return [f.expected_end for f in self.running.values()] + [j.end for j in self.dnn_running.values()]

    def start(self, frame: Frame, slots: Sequence[int]) -> None:
        if not self.stream_free():
            raise RuntimeError(f"frame {frame.key} cannot start: the video stream is carrying other work")
        self.pending.remove(frame)
        if self.committed is frame:
            self.committed = None
        self.slots.acquire(slots, frame.key)
        if frame.step == 0:
            frame.start = self.now
        frame.slots = tuple(slots)
        try:
            if frame.step:
                pixels = frame.carry
            else:
                pixels = frame.pixels if frame.pixels is not None else self._pixels[frame.pipeline.name]
            # A pass before the last must hand its pixels on (a backend may skip them only at the end).
            work = self.backend.start_frame(slots, frame.pipeline.pass_stages[frame.step], pixels, self.want_output,
                                            stream=self.stream_id)
        except Exception as exc:     # a hardware fault by the backend's contract (errors.HardwareError)
            self.slots.release(slots, self.now)
            self.finish(frame, "error", fault_reason(exc))
            return
        self.running[frame.key] = frame
        self._streaming[frame.key] = work
        self._stream_at = None
        # Hardware time from the start: on a wall clock, the host's time to simulate is not the
        # board's (a dilated clock absorbs it).
        frame.expected_end = self.now + work.seconds
        frame.streamed.append((self.now, frame.expected_end))
        self.when_done(work, frame.expected_end, JOB_DONE, frame)

    def _job_done(self, frame: Frame) -> None:
        failure = None
        try:
            report = self._streaming.pop(frame.key).report()   # on a board: waits for the DMA if need be
        except Exception as exc:     # a hardware fault by the backend's contract
            failure = fault_reason(exc)
        else:
            frame.results.update(report.results)
        self.running.pop(frame.key)
        self._stream_at = None
        end = self.now
        self.slots.release(frame.slots, end)
        self._trace_stream(frame.key, frame.streamed[-1][0], end, frame.pipeline.name)
        for slot in frame.slots:
            self.trace.append(TraceEvent(f"slot {slot}", frame.key, frame.streamed[-1][0], end,
                                         {"pipeline": frame.pipeline.name}))
        if failure is None and frame.step < len(frame.pipeline.pass_stages) - 1:
            # The next pass reads this one's output from memory once the port has loaded its stages.
            frame._at_pass(frame.step + 1)
            # Timing only (the model backend without outputs): the next pass needs just the size.
            frame.carry = report.output if report.output is not None else \
                np.zeros(frame.pipeline.pass_input_shapes[frame.step], np.uint8)
            frame.expected_end = None
            self.pending.append(frame)
            return
        if failure is None and frame.pipeline.cpu_after:
            p = frame.pipeline
            pixels = report.output if report.output is not None else np.zeros(
                p.cpu_after[0].kind.input_shape(*chain_shape(p.stages, *p.frame)), np.uint8)
            self._run_on_cpu(frame, "after", pixels)
            return
        if failure is None:
            frame.end = end
            frame.output = report.output if self.want_output else None
            self.finish(frame, "on_time" if end <= frame.due + 1e-12 else "late")
        else:
            self.finish(frame, "error", failure)
        self.trace.append(TraceEvent(f"pipeline {frame.pipeline.name}", frame.key, frame.release, end,
                                     {"outcome": frame.outcome}))

    def _trace_stream(self, name: str, start: float, end: float, pipeline: str) -> None:
        self.trace.append(TraceEvent(f"stream {self.stream_id}", name, start, end, {"pipeline": pipeline}))

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

    def finish_dnn(self, request: DnnRequest, outcome: str, reason: str = "") -> None:
        if request.outcome is not None:
            raise RuntimeError(f"DNN image {request.seq} already ended {request.outcome}")
        request.outcome, request.reason = outcome, reason
        if self.on_finish is not None:
            self.on_finish(request)

    def drop(self, frame: Frame, reason: str) -> None:
        self.pending.remove(frame)
        self.finish(frame, "dropped", reason)

def run_workload(workload: Workload, backend: Backend, policy, **kw) -> tuple[Engine, dict]:
    start = time.perf_counter()
    engine = Engine(workload, backend, policy, **kw).run()
    return engine, engine.summary(time.perf_counter() - start)

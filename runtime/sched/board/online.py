"""The engine with pipelines that come and go and frames submitted as they arrive (the daemon).

The same event loop, policies and slot manager as a workload run; what differs is where frames
come from: ``submit`` releases a frame now, with its own pixels, and the caller drives time with
``advance_to`` (the daemon calls it with its clock's now whenever something arrives or the next
event is due). Admission for a new real-time pipeline is the one ``edf`` uses for workload files,
run against the pipelines already admitted.

Admission trusts a pipeline's declared period as a minimum inter-arrival time (the analysis's
sporadic model), so the engine holds it to it: a frame submitted sooner than a period after the
previous release is *held* until then, and its deadline counts from that release. An app that
submits faster than it declared only delays its own frames: it cannot take the time promised to
others. (A camera's early frame after a late one waits the difference.)
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import numpy as np
from fpgashare.backends.base import Backend, Pending
from fpgashare.catalogue.platform import Platform
from fpgashare.catalogue.workload import PipelineSpec, Workload
from fpgashare.errors import FpgashareError, HardwareTimeout
from fpgashare.sched.analysis.arrivals import ArrivalCurves
from fpgashare.sched.analysis.join import join_verdict
from fpgashare.sched.analysis.mode_change import ModeChanges
from fpgashare.sched.analysis.schedulability import analyse
from fpgashare.sched.board.dnn_queue import QueuedDnnJobs
from fpgashare.sched.core.clock import Clock
from fpgashare.sched.core.engine import DnnRequest, Engine, Frame
from fpgashare.sched.core.jobs import CPU_START, JOB_DONE, LOAD_DONE, RELEASE
from fpgashare.sched.core.slots import SlotState
from fpgashare.sched.host.cpu_work import host_inference

log = logging.getLogger(__name__)

#: Trace slices kept (the newest): a daemon runs for days; the demo's whole run fits easily.
TRACE_LIMIT = 100_000
#: The watchdog: a load or frame still not done this long after its expected end (a fraction of
#: its expected time, plus a floor) is ended with a HardwareTimeout; meanwhile it is polled.
WATCHDOG_MARGIN = 1.0
WATCHDOG_FLOOR_S = 0.002
WATCHDOG_POLL_S = 0.0005


class OnlineEngine(Engine):
    def __init__(self, platform: Platform, backend: Backend, policy, clock: Clock,
                 replacement: str = "belady") -> None:
        empty = Workload(Path("<daemon>"), platform, 0, float("inf"), ())
        super().__init__(empty, backend, policy, clock, replacement, want_output=True, dnn_jobs=QueuedDnnJobs)
        self.t0 = 0.0                       # pipelines register whenever they like; no warm-up window
        self.trace = deque(maxlen=TRACE_LIMIT)
        self.arrivals = ArrivalCurves()       #: the curve each pipeline declared (runtime/sched/analysis/arrivals.py)
        self.dnn_queue: dict[str, list[DnnRequest]] = self.dnn.queue   # the images apps submitted
        #: pipeline -> (target version, its analysis, the pins-given-back step before it or None)
        self._verdicts: dict[str, tuple[int, object, object]] = {}
        self.pins_given_back = 0           #: joins that gave pins back first (analysis/join.py)
        #: Registrations and departures, each a mode change analysed step by step (mode_change.py).
        self.changes = ModeChanges(self)
        self.held_by_board = False          #: set by the board while a re-layout waits (relayout.py)
        self._held: dict[str, list[Frame]] = {}    # frames submitted before their pipeline's switch
        self.watchdog_margin, self.watchdog_floor_s = WATCHDOG_MARGIN, WATCHDOG_FLOOR_S
        self.watchdog_fired = 0                  #: loads and frames the watchdog ended
        self._host_nets: dict[str, host_inference] = {}   # DNN pipelines on the host: their networks
        #: Extra arguments of every analysis: a partition of the board (online_streams.py) counts the
        #: port shared with the others, the board's register traffic, and leaves DDR to the board.
        self.analysis_kw: dict = {}
        #: the most partitions the board may re-partition into: admissions keep slack for a pin
        #: load with the port shared that many ways (analyse's ``afford_share``)
        self.afford_share: int | None = None

    # ---- the watchdog: hardware completions are polled (Pending.ready), never waited for
    def _overdue(self, started: float, seconds: float) -> float:
        return started + seconds * (1.0 + self.watchdog_margin) + self.watchdog_floor_s

    def _load_done(self) -> None:
        pending, request = self.slots._pending, self.slots.port.current
        if pending is not None and request is not None and not pending.ready():
            limit = self._overdue(self.port.started.get(request.slot, self.now), pending.seconds)
            if self.now < limit:                 # still on the port: look again soon
                self.push(min(limit, self.now + WATCHDOG_POLL_S), LOAD_DONE, None)
                return
            self.watchdog_fired += 1
            self.slots._pending = _timed_out(f"load of {request.module} into slot {request.slot}", pending.seconds)
        super()._load_done()

    def _job_done(self, frame: Frame) -> None:
        work = self.stream.works.get(frame.key)
        if work is not None and not work.ready():
            limit = self._overdue(frame.streamed[-1][0], work.seconds)
            if self.now < limit:                 # the DMA is not done: look again soon
                frame.expected_end = min(limit, self.now + WATCHDOG_POLL_S)
                self.stream.changed()
                self.push(frame.expected_end, JOB_DONE, frame)
                return
            self.watchdog_fired += 1
            self.stream.works[frame.key] = _timed_out(f"frame {frame.key} on slots {list(frame.slots)}", work.seconds)
            super()._job_done(frame)
            self.slots.reset(frame.slots, self.now)      # reset through the decoupler, reloaded when needed
            return
        super()._job_done(frame)

    def slot_streams(self) -> list[int]:
        """The video stream each slot's work takes (all this engine's)."""
        return [self.stream_id] * len(self.slots.slots)

    # ---- pipelines
    def admission_test(self, spec: PipelineSpec):
        """A callable that says why ``spec`` cannot join the pipelines registered now, or None if
        it can (edf's schedulability analysis, runtime/sched/analysis/schedulability.py; policies without it
        admit everything). It works on a snapshot, so it may run off the engine's thread. The
        pins already in force stay where they are."""
        taken = self._name_taken(spec.name)
        if taken:
            return lambda: taken
        if not spec.realtime or not self.policy.admission or spec.on_cpu_only:
            return lambda: None
        changes = self.changes
        version, before, loads = changes.version, changes.target_pipelines, dict(changes.target_loads)
        platform = self.working_platform()
        working = {s.index for s in platform.slots}
        pinned = {s: m for s, m in changes.target_contract.pinned.items() if s in working}
        lost = [m for m in spec.modules if not platform.slots_for(m)]
        if lost:
            return lambda: f"every slot that can hold {lost[0]} is quarantined"
        afford = self.afford_share

        def test() -> str | None:
            verdict, give_back, why = join_verdict(before, loads, spec, platform, pinned, self.analysis_kw, afford)
            self._verdicts[spec.name] = (version, verdict, give_back)
            return why

        return test

    def working_platform(self) -> Platform:
        """The platform without its quarantined slots: what admission may count on (slots keep
        their indices)."""
        platform = self.backend.platform
        failed = {s.index for s in self.slots.slots if s.state is SlotState.FAILED}
        if not failed:
            return platform
        return replace(platform, slots=tuple(s for s in platform.slots if s.index not in failed))

    def _name_taken(self, name: str) -> str | None:
        every = (*self.pipelines, *self.changes.joining(), *self.dnn_pipelines, *self.cpu_pipelines)
        if name in {p.name for p in every}:
            return f"a pipeline named {name!r} is already registered"
        return None

    def admit(self, spec: PipelineSpec) -> str | None:
        """Why ``spec`` cannot join the admitted set, or None if it can."""
        return self.admission_test(spec)()

    def add_pipeline(self, spec: PipelineSpec, admitted: bool = False,
                     on_ready: Callable[[], None] | None = None,
                     on_refused: Callable[[str], None] | None = None) -> None:
        """Register ``spec``; ``admitted``: the caller ran ``admission_test`` against the current set.
        A real-time pipeline joins through a mode change (runtime/sched/analysis/mode_change.py):
        ``on_ready`` is called once its frames can run under the guarantee (at once for other
        pipelines); frames submitted before then wait for it, their deadlines counting from their
        arrival. ``on_refused`` is never called here (a partition's change, once admitted, always
        completes); the board's re-layout may refuse (runtime/sched/board/relayout.py)."""
        reason = self._name_taken(spec.name) or (None if admitted else self.admission_test(spec)())
        if reason:
            raise FpgashareError(reason)
        if spec.on_cpu_only:                # the host's alone: nothing on the fabric changes
            self.cpu_pipelines.append(spec)
            if not spec.realtime:
                self.dnn_images[spec.name] = 0
                self._host_nets[spec.name] = host_inference(spec.model)
            if on_ready is not None:
                on_ready()
            return
        if not spec.realtime and "dnn_tile" not in self.backend.platform.modules:
            raise FpgashareError(f"{self.backend.platform.name} has no dnn_tile slots for {spec.model}")
        if spec.realtime and self.policy.admission:
            version, verdict, give_back = self._verdicts.pop(spec.name, (None, None, None))
            if verdict is None or not verdict.ok or version != self.changes.version:
                why = self.admission_test(spec)()       # against the set as it is now
                if why:
                    raise FpgashareError(why)
                _, verdict, give_back = self._verdicts.pop(spec.name)
            if give_back is not None:               # pins given back first (analysis/join.py)
                self.changes.ask(give_back, self.changes.target_pipelines, None, None)
                self.pins_given_back += 1
            self.changes.ask(verdict, [*self.changes.target_pipelines, spec], spec, on_ready)
            self._decide()
            return
        if spec.realtime:                   # a policy without admission: no contract to change
            self.joined(spec)
            if on_ready is not None:
                on_ready()
            return
        self.dnn_pipelines.append(spec)
        self.dnn_images[spec.name] = 0
        self.dnn_queue[spec.name] = []
        try:
            self.pipelines_changed()
        except BaseException:               # all or nothing: the set is as it was
            self.pipelines = [p for p in self.pipelines if p is not spec]
            self.dnn_pipelines = [p for p in self.dnn_pipelines if p is not spec]
            self.pipelines_changed()
            raise
        self._decide()
        if on_ready is not None:
            on_ready()

    def _decide(self) -> None:
        """What the loop does after every event: the policy, the mode change, the port."""
        self.policy.dispatch(self)
        self.after_dispatch()
        self.port.kick()

    def after_dispatch(self) -> None:
        """The mode change at the head of the queue takes its next step (mode_change.py)."""
        self.changes.step()

    @property
    def changing(self) -> bool:
        """Whether a mode change is under way, here or on the whole board (a re-layout waiting
        for a board-idle instant, ``held_by_board``): DNN batches, lends, prefetch and pin moves
        wait for it."""
        return self.changes.active or self.held_by_board

    def joined(self, spec: PipelineSpec, cancelled: bool = False) -> None:
        """``spec``'s switch came (or, without admission, its registration): its frames are
        released from now on; those that came before it are released now, their deadlines still
        counting from their arrival. ``cancelled``: its app left meanwhile."""
        held = self._held.pop(spec.name, [])
        if cancelled:
            for frame in held:
                self.finish(frame, "dropped", "the pipeline was closed before it could run")
            return
        self.pipelines.append(spec)
        self._next_index[spec.name] = 0
        try:
            self.pipelines_changed()
        except BaseException:               # all or nothing: the set is as it was
            self.pipelines = [p for p in self.pipelines if p is not spec]
            self.pipelines_changed()
            raise
        for frame in held:
            self._arrive(frame)

    def pipeline_state(self, name: str) -> tuple:
        """What moves with real-time pipeline ``name`` to another partition (runtime/sched/board/relayout.py):
        its submission count and its arrival curve so far."""
        return self.arrivals.state(name), self._next_index.get(name, 0)

    def adopt(self, spec: PipelineSpec, state: tuple) -> None:
        """Take real-time pipeline ``spec`` from another partition, with ``pipeline_state``'s
        ``state`` (its contract comes with the partition's next mode change)."""
        curve, nxt = state
        self.arrivals.restore(spec.name, curve)
        self.pipelines.append(spec)
        self._next_index[spec.name] = nxt

    def idle(self) -> bool:
        """Nothing in flight on the fabric: no frame waiting or streaming, no DNN batch, no load."""
        port = self.slots.port
        return (not self.pending and not self.running and not self.dnn.running and self.committed is None
                and port.current is None and not port.queue)

    def remove_pipeline(self, name: str, reason: str) -> list[Frame]:
        """End a pipeline: its waiting frames are dropped with ``reason`` (returned); frames
        already running finish on the fabric and are reported as usual. The contract it was
        admitted under stays in force until the partition's next idle instant (mode_change.py)."""
        dropped = [f for f in self.pending if f.pipeline.name == name]
        for frame in dropped:
            self.drop(frame, reason)
        for frame in self._held.pop(name, []):
            dropped.append(frame)
            self.finish(frame, "dropped", reason)
        for request in self.dnn_queue.pop(name, []):
            self.finish_dnn(request, "dropped", reason)
        for request, _, _ in [e for e in self.cpu_jobs.running.values() if isinstance(e[0], DnnRequest)]:
            if request.pipeline.name == name and request.outcome is None:
                self.finish_dnn(request, "dropped", reason)
        self._host_nets.pop(name, None)
        was_realtime = any(p.name == name for p in self.pipelines)
        joining = self.changes.cancel(name)
        self.pipelines = [p for p in self.pipelines if p.name != name]
        self.dnn_pipelines = [p for p in self.dnn_pipelines if p.name != name]
        self.cpu_pipelines = [p for p in self.cpu_pipelines if p.name != name]
        if self.policy.admission and (was_realtime or joining):
            self._ask_departure(name)
        held = [f for f in self.frames if f.pipeline.name == name and f.outcome is None
                and f.start is None and f not in self.pending]
        for frame in held:                  # released later (an arrival held to its curve)
            self.finish(frame, "dropped", reason)
        self._next_index.pop(name, None)
        self.arrivals.forget(name)
        self.pipelines_changed()
        self._decide()
        return dropped

    def _ask_departure(self, name: str) -> None:
        """A mode change to the set without ``name``: pins of modules no pipeline left uses are
        given back, the rest keep their slots. Fewer frames need no more time than the set
        admitted, so the contract in force stays valid until the switch."""
        changes = self.changes
        left = [p for p in changes.target_pipelines if p.name != name]
        used = {m for p in left for m in p.modules}
        kept = {s: m for s, m in changes.target_contract.pinned.items() if m in used}
        verdict = analyse(left, self.working_platform(), keep_pinned=kept, few_pins=True, **self.analysis_kw)
        if not verdict.ok or set(verdict.contract.pinned.items()) - set(kept.items()):
            return                          # keep the contract in force (valid for any subset)
        changes.ask(verdict, left, None, None)

    # ---- frames
    def submit(self, name: str, pixels: np.ndarray) -> Frame:
        """A frame of pipeline ``name`` arrives now. It is released at once unless the pipeline
        sends faster than the arrival curve it declared (period and jitter: the analysis's
        model), then at the earliest time the curve allows; before the pipeline's switch it
        waits for it. Its deadline as the app sees it counts from now (``Frame.due``)."""
        spec = next((p for p in (*self.pipelines, *self.changes.joining(), *self.cpu_pipelines) if p.name == name),
                    None)
        if spec is None:
            raise FpgashareError(f"no real-time pipeline {name!r}")
        index = self.arrivals.next_index(name)
        self._seq += 1
        # CPU stages first: the fabric takes the frame when their bound has passed (cpu_work.py).
        fabric = self.now + spec.cpu_before_s
        frame = Frame(spec, index, fabric, fabric + spec.deadline_s, self._seq, pixels=pixels, origin=self.now)
        self.frames.append(frame)
        if spec.cpu_before:
            self.push(self.now, CPU_START, frame)
        else:
            self.fabric_release(frame)
        return frame

    def fabric_release(self, frame: Frame) -> None:
        if any(p.name == frame.pipeline.name for p in self.changes.joining()):
            self._held.setdefault(frame.pipeline.name, []).append(frame)
        else:
            self._arrive(frame)

    def _arrive(self, frame: Frame) -> None:
        """Release ``frame`` no earlier than its pipeline's arrival curve allows (arrivals.py).
        An app that sends faster only delays its own frames: a frame held to the curve has its
        deadline count from its allowed release; one that waited for its pipeline's switch keeps
        its arrival's (that wait is the daemon's, not the app's)."""
        p = frame.pipeline
        allowed = self.arrivals.earliest(p, frame.index)
        release = max(self.now, frame.release, allowed)
        if release > frame.release:
            frame.origin += max(0.0, allowed - frame.release)
            frame.release = release
            frame.deadline = release + p.deadline_s
        self.arrivals.decided(p, frame.index, release)
        self.push(release, RELEASE, frame)

    def _drop_unplaceable(self) -> None:
        super()._drop_unplaceable()
        if "dnn_tile" in self.backend.platform.modules and not self.working_platform().slots_for("dnn_tile"):
            for queue in self.dnn_queue.values():
                for request in queue:
                    self.finish_dnn(request, "dropped", "every dnn_tile slot is quarantined")
                queue.clear()

    def submit_dnn(self, name: str, image: np.ndarray) -> DnnRequest:
        """Queue an image for best-effort DNN pipeline ``name``; it runs in the next batch."""
        spec = next((p for p in (*self.dnn_pipelines, *self.cpu_pipelines) if p.name == name and not p.realtime),
                    None)
        if spec is None:
            raise FpgashareError(f"no DNN pipeline {name!r}")
        self._seq += 1
        request = DnnRequest(spec, image, self._seq, self.now)
        if spec.host:
            self.cpu_jobs.run_dnn_on_host(request, spec.cpu_before_s, self._host_nets[name])
            return request
        self.dnn_queue[name].append(request)
        self.poke()                        # let the backfill see it at the next step
        return request

    def _released(self, frame: Frame) -> None:
        if frame.outcome is not None:       # held, and its pipeline ended before its release
            self.pending.remove(frame)
            return
        self.arrivals.taken(frame.pipeline, frame.index, frame.release)
        self.demand.moved(frame.pipeline)

    def next_release_s(self, pipeline: PipelineSpec) -> float:
        """The earliest the pipeline's next frame may be released: its arrival curve from the
        frames released so far (arrivals.py); now before its first."""
        return self.arrivals.next_release(pipeline, self.now)

    def _need_time(self, pipeline: PipelineSpec) -> float:
        return self.next_release_s(pipeline) + pipeline.deadline_s

    def finish(self, frame: Frame, outcome: str, reason: str = "") -> None:
        super().finish(frame, outcome, reason)
        # A daemon runs for days: ended frames leave the engine once the daemon has been told.
        self.frames.remove(frame)


def _timed_out(what: str, seconds: float) -> Pending:
    def overrun():
        raise HardwareTimeout(f"watchdog: {what} overran its expected {seconds * 1e3:.3f} ms; slot reset")
    return Pending(seconds, overrun)

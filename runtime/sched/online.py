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
from dataclasses import replace
from pathlib import Path

import numpy as np
from fpgashare.backends.base import Backend, Pending
from fpgashare.clock import Clock
from fpgashare.errors import FpgashareError, HardwareTimeout
from fpgashare.platform import Platform
from fpgashare.sched.analysis import analyse
from fpgashare.sched.cpu_work import host_inference
from fpgashare.sched.engine import DnnRequest, Engine, Frame
from fpgashare.sched.jobs import CPU_START, JOB_DONE, LOAD_DONE, RELEASE
from fpgashare.slots import SlotState
from fpgashare.workload import PipelineSpec, Workload

log = logging.getLogger(__name__)

_RESIDENT = (SlotState.READY, SlotState.BUSY)

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
        super().__init__(empty, backend, policy, clock, replacement, want_output=True)
        self.t0 = 0.0                       # pipelines register whenever they like; no warm-up window
        self.trace = deque(maxlen=TRACE_LIMIT)
        self._last_release: dict[str, float] = {}
        self._counts: dict[str, int] = {}
        self._due: dict[str, float] = {}     # per pipeline: when its next frame is due at its declared rate
        self.dnn_queue: dict[str, list[DnnRequest]] = {}
        self._verdicts: dict[str, object] = {}     # pipeline -> the analysis that admitted it
        self._warming: dict[str, set[int]] = {}    # pipeline -> pinned slots it waits for
        self._held: dict[str, list[Frame]] = {}    # frames submitted while their pipeline warms up
        self.watchdog_margin, self.watchdog_floor_s = WATCHDOG_MARGIN, WATCHDOG_FLOOR_S
        self.watchdog_fired = 0                  #: loads and frames the watchdog ended
        self._host_nets: dict[str, host_inference] = {}   # DNN pipelines on the host: their networks
        #: Extra arguments of every analysis: a partition of the board (online_streams.py) counts the
        #: port shared with the others, the board's register traffic, and leaves DDR to the board.
        self.analysis_kw: dict = {}

    # ---- the watchdog: hardware completions are polled (Pending.ready), never waited for
    def _overdue(self, started: float, seconds: float) -> float:
        return started + seconds * (1.0 + self.watchdog_margin) + self.watchdog_floor_s

    def _load_done(self) -> None:
        pending, request = self.slots._pending, self.slots.port.current
        if pending is not None and request is not None and not pending.ready():
            limit = self._overdue(self._load_started.get(request.slot, self.now), pending.seconds)
            if self.now < limit:                 # still on the port: look again soon
                self.push(min(limit, self.now + WATCHDOG_POLL_S), LOAD_DONE, None)
                return
            self.watchdog_fired += 1
            self.slots._pending = _timed_out(f"load of {request.module} into slot {request.slot}", pending.seconds)
        super()._load_done()
        self._pins_in()

    def _job_done(self, frame: Frame) -> None:
        work = self._streaming.get(frame.key)
        if work is not None and not work.ready():
            limit = self._overdue(frame.streamed[-1][0], work.seconds)
            if self.now < limit:                 # the DMA is not done: look again soon
                frame.expected_end = min(limit, self.now + WATCHDOG_POLL_S)
                self._stream_at = None
                self.push(frame.expected_end, JOB_DONE, frame)
                return
            self.watchdog_fired += 1
            self._streaming[frame.key] = _timed_out(f"frame {frame.key} on slots {list(frame.slots)}", work.seconds)
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
        it can (edf's schedulability analysis, runtime/sched/analysis.py; policies without it
        admit everything). It works on a snapshot, so it may run off the engine's thread. The
        pins already in force stay where they are."""
        taken = self._name_taken(spec.name)
        if taken:
            return lambda: taken
        if not spec.realtime or not self.policy.admission or spec.on_cpu_only:
            return lambda: None
        candidate = [*self.pipelines, spec]
        platform = self.working_platform()
        working = {s.index for s in platform.slots}
        pinned = {s: m for s, m in self.contract.pinned.items() if s in working}
        lost = [m for m in spec.modules if not platform.slots_for(m)]
        if lost:
            return lambda: f"every slot that can hold {lost[0]} is quarantined"

        def test() -> str | None:
            verdict = analyse(candidate, platform, keep_pinned=pinned, few_pins=True, **self.analysis_kw)
            self._verdicts[spec.name] = verdict
            return None if verdict.ok else verdict.reason

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
        if name in {p.name for p in (*self.pipelines, *self.dnn_pipelines, *self.cpu_pipelines)}:
            return f"a pipeline named {name!r} is already registered"
        return None

    def admit(self, spec: PipelineSpec) -> str | None:
        """Why ``spec`` cannot join the admitted set, or None if it can."""
        return self.admission_test(spec)()

    def add_pipeline(self, spec: PipelineSpec, admitted: bool = False) -> None:
        """Register ``spec``; ``admitted``: the caller ran ``admission_test`` against the current set."""
        reason = self._name_taken(spec.name) or (None if admitted else self.admission_test(spec)())
        if reason:
            raise FpgashareError(reason)
        if spec.on_cpu_only:                # the host's alone: nothing on the fabric changes
            self.cpu_pipelines.append(spec)
            if not spec.realtime:
                self.dnn_images[spec.name] = 0
                self._host_nets[spec.name] = host_inference(spec.model)
            return
        if not spec.realtime and "dnn_tile" not in self.backend.platform.modules:
            raise FpgashareError(f"{self.backend.platform.name} has no dnn_tile slots for {spec.model}")
        if spec.realtime:
            if self.policy.admission:
                verdict = self._verdicts.pop(spec.name, None)
                if verdict is None or not verdict.ok:
                    verdict = analyse([*self.pipelines, spec], self.working_platform(),
                                      keep_pinned=dict(self.contract.pinned), few_pins=True, **self.analysis_kw)
                if not verdict.ok:
                    raise FpgashareError(verdict.reason)
                self.pin_idle_ok = self.contract.idle_loads or not self.pipelines
                self.set_contract(verdict.contract)
                # Its frames are held until the modules pinned for it are resident: only then
                # does a frame need no more loads than the analysis counts.
                waiting = {s for s, m in verdict.contract.pinned.items() if m in spec.modules
                           and not (self.slots.slots[s].module == m and self.slots.slots[s].state in _RESIDENT)}
                if waiting:
                    self._warming[spec.name] = waiting
            self.pipelines.append(spec)
            self._next_index[spec.name] = 0
            self._last_release[spec.name] = self.now - spec.period_s   # its first frame may come now
        else:
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
        self.policy.dispatch(self)
        self._kick_port()

    def remove_pipeline(self, name: str, reason: str) -> list[Frame]:
        """End a pipeline: its waiting frames are dropped with ``reason`` (returned); frames
        already running finish on the fabric and are reported as usual."""
        dropped = [f for f in self.pending if f.pipeline.name == name]
        for frame in dropped:
            self.drop(frame, reason)
        self._warming.pop(name, None)
        for frame in self._held.pop(name, []):
            dropped.append(frame)
            self.finish(frame, "dropped", reason)
        for request in self.dnn_queue.pop(name, []):
            self.finish_dnn(request, "dropped", reason)
        for request, _, _ in [e for e in self.on_cpu.values() if isinstance(e[0], DnnRequest)]:
            if request.pipeline.name == name and request.outcome is None:
                self.finish_dnn(request, "dropped", reason)
        self._host_nets.pop(name, None)
        self.pipelines = [p for p in self.pipelines if p.name != name]
        self.dnn_pipelines = [p for p in self.dnn_pipelines if p.name != name]
        self.cpu_pipelines = [p for p in self.cpu_pipelines if p.name != name]
        if self.policy.admission:
            # Pins of modules no pipeline uses any more are given back; the rest keep their slots
            # (the set left has less demand than the one admitted, with the same loads per frame).
            used = {m for p in self.pipelines for m in p.modules}
            kept = {s: m for s, m in self.contract.pinned.items() if m in used}
            verdict = analyse(self.pipelines, self.working_platform(), keep_pinned=kept, few_pins=True,
                              **self.analysis_kw)
            if verdict.ok:
                self.set_contract(verdict.contract)
        held = [f for f in self.frames if f.pipeline.name == name and f.outcome is None
                and f.start is None and f not in self.pending]
        for frame in held:                  # held to their period, not released yet
            self.finish(frame, "dropped", reason)
        self._next_index.pop(name, None)
        self._due.pop(name, None)
        self.pipelines_changed()
        self.policy.dispatch(self)
        self._kick_port()
        return dropped

    # ---- frames
    def submit(self, name: str, pixels: np.ndarray) -> Frame:
        """Release a frame of pipeline ``name`` now, or hold it to its declared period (see the
        module's doc); its deadline is its release + the pipeline's."""
        spec = next((p for p in (*self.pipelines, *self.cpu_pipelines) if p.name == name), None)
        if spec is None:
            raise FpgashareError(f"no real-time pipeline {name!r}")
        index = self._counts.get(name, 0)
        self._counts[name] = index + 1
        release = max(self.now, self._due.get(name, self.now))
        self._due[name] = release + spec.period_s
        self._seq += 1
        # CPU stages first: the fabric takes the frame when their bound has passed (cpu_work.py).
        fabric = release + spec.cpu_before_s
        frame = Frame(spec, index, fabric, fabric + spec.deadline_s, self._seq, pixels=pixels, origin=release)
        self.frames.append(frame)
        if spec.cpu_before:
            self.push(release, CPU_START, frame)
        elif name in self._warming:
            self._held.setdefault(name, []).append(frame)     # released once its pins are in
        else:
            self.push(release, RELEASE, frame)
        return frame

    def _pins_in(self) -> None:
        """Release the held frames of pipelines whose pinned modules are all in now."""
        now = self.now
        for name, waiting in list(self._warming.items()):
            for slot in list(waiting):
                s, pin = self.slots.slots[slot], self.contract.pinned.get(slot)
                if (s.state in _RESIDENT and s.module == pin) or s.state is SlotState.FAILED or pin is None:
                    waiting.discard(slot)          # in (or gone: a fault voids the promise, not the frame)
            if not waiting:
                del self._warming[name]
                earliest = now
                for frame in self._held.pop(name, []):
                    # Its deadline counts from its release, and releases stay a period apart (the
                    # analysis's sporadic model): a held frame moves the pipeline's next due time.
                    shift = max(0.0, earliest - frame.release)
                    frame.release += shift
                    frame.origin += shift
                    frame.deadline = frame.release + frame.pipeline.deadline_s
                    self.push(frame.release, RELEASE, frame)
                    earliest = frame.release + frame.pipeline.period_s
                    self._due[name] = max(self._due.get(name, 0.0), frame.origin + frame.pipeline.period_s)

    def _fabric_release(self, frame: Frame) -> None:
        if frame.pipeline.name in self._warming:
            self._held.setdefault(frame.pipeline.name, []).append(frame)
        else:
            super()._fabric_release(frame)

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
            self.run_dnn_on_host(request, spec.cpu_before_s, self._host_nets[name])
            return request
        self.dnn_queue[name].append(request)
        self.poke()                        # let the backfill see it at the next step
        return request

    def dnn_backlog(self, pipeline: PipelineSpec) -> bool:
        return bool(self.dnn_queue.get(pipeline.name))

    def take_dnn_work(self, pipeline: PipelineSpec, images: int) -> tuple[np.ndarray, list[DnnRequest]]:
        queue = self.dnn_queue[pipeline.name]
        taken, self.dnn_queue[pipeline.name] = queue[:images], queue[images:]
        return np.stack([r.image for r in taken]), taken

    def _released(self, frame: Frame) -> None:
        if frame.outcome is not None:       # held, and its pipeline ended before its release
            self.pending.remove(frame)
            return
        self._last_release[frame.pipeline.name] = frame.release
        self.demand.moved(frame.pipeline)

    def next_release_s(self, pipeline: PipelineSpec) -> float:
        """An app promises its period as the least time between frames (the engine holds it to
        it): the next frame comes a period after the last one at the earliest. A pipeline waiting
        for its pins releases nothing until they are in."""
        if pipeline.name in self._warming:
            return float("inf")
        last = self._last_release.get(pipeline.name)
        return self.now if last is None else last + pipeline.period_s

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

"""The engine with pipelines that come and go and frames submitted as they arrive (the daemon).

The same event loop, policies and slot manager as a workload run; what differs is where frames
come from: ``submit`` releases a frame now, with its own pixels, and the caller drives time with
``advance_to`` (the daemon calls it with its clock's now whenever something arrives or the next
event is due). Admission for a new real-time pipeline is the one ``edf`` uses for workload files,
run against the pipelines already admitted.
"""

from __future__ import annotations

import logging
from collections import deque
from pathlib import Path

import numpy as np
from fpgashare.backends.base import Backend
from fpgashare.clock import Clock
from fpgashare.errors import FpgashareError
from fpgashare.platform import Platform
from fpgashare.sched.analysis import analyse
from fpgashare.sched.engine import RELEASE, DnnRequest, Engine, Frame
from fpgashare.slots import SlotState
from fpgashare.workload import PipelineSpec, Workload

log = logging.getLogger(__name__)

_RESIDENT = (SlotState.READY, SlotState.BUSY)

#: Trace slices kept (the newest): a daemon runs for days; the demo's whole run fits easily.
TRACE_LIMIT = 100_000
#: The most a pipeline's frames are taken to come early, as a fraction of its period.
EARLY_CAP = 0.5


class OnlineEngine(Engine):
    def __init__(self, platform: Platform, backend: Backend, policy, clock: Clock,
                 replacement: str = "belady") -> None:
        empty = Workload(Path("<daemon>"), platform, 0, float("inf"), ())
        super().__init__(empty, backend, policy, clock, replacement, want_output=True)
        self.t0 = 0.0                       # pipelines register whenever they like; no warm-up window
        self.trace = deque(maxlen=TRACE_LIMIT)
        self._last_release: dict[str, float] = {}
        self._early: dict[str, float] = {}       # per pipeline: the most a frame came before its period
        self._counts: dict[str, int] = {}
        self.dnn_queue: dict[str, list[DnnRequest]] = {}
        self._verdicts: dict[str, object] = {}     # pipeline -> the analysis that admitted it
        self._warming: dict[str, set[int]] = {}    # pipeline -> pinned slots it waits for
        self._held: dict[str, list[Frame]] = {}    # frames submitted while their pipeline warms up

    # ---- pipelines
    def admission_test(self, spec: PipelineSpec):
        """A callable that says why ``spec`` cannot join the pipelines registered now, or None if
        it can (edf's schedulability analysis, runtime/sched/analysis.py; policies without it
        admit everything). It works on a snapshot, so it may run off the engine's thread. The
        pins already in force stay where they are."""
        taken = self._name_taken(spec.name)
        if taken:
            return lambda: taken
        if not spec.realtime or not self.policy.admission:
            return lambda: None
        candidate = [*self.pipelines, spec]
        platform, pinned = self.backend.platform, dict(self.contract.pinned)

        def test() -> str | None:
            verdict = analyse(candidate, platform, keep_pinned=pinned, few_pins=True)
            self._verdicts[spec.name] = verdict
            return None if verdict.ok else verdict.reason

        return test

    def _name_taken(self, name: str) -> str | None:
        if name in {p.name for p in (*self.pipelines, *self.dnn_pipelines)}:
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
        if spec.realtime:
            if self.policy.admission:
                verdict = self._verdicts.pop(spec.name, None)
                if verdict is None or not verdict.ok:
                    verdict = analyse([*self.pipelines, spec], self.backend.platform,
                                      keep_pinned=dict(self.contract.pinned), few_pins=True)
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
            if "dnn_tile" not in self.backend.platform.modules:
                raise FpgashareError(f"{self.backend.platform.name} has no dnn_tile slots for {spec.model}")
            self.dnn_pipelines.append(spec)
            self.dnn_images[spec.name] = 0
            self.dnn_queue[spec.name] = []
        self.pipelines_changed()
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
        self.pipelines = [p for p in self.pipelines if p.name != name]
        self.dnn_pipelines = [p for p in self.dnn_pipelines if p.name != name]
        if self.policy.admission:
            # Pins of modules no pipeline uses any more are given back; the rest keep their slots
            # (the set left has less demand than the one admitted, with the same loads per frame).
            used = {m for p in self.pipelines for m in p.modules}
            kept = {s: m for s, m in self.contract.pinned.items() if m in used}
            verdict = analyse(self.pipelines, self.backend.platform, keep_pinned=kept, few_pins=True)
            if verdict.ok:
                self.set_contract(verdict.contract)
        self._next_index.pop(name, None)
        self._early.pop(name, None)
        self.pipelines_changed()
        self.policy.dispatch(self)
        self._kick_port()
        return dropped

    # ---- frames
    def submit(self, name: str, pixels: np.ndarray) -> Frame:
        """Release a frame of pipeline ``name`` now; its deadline is now + the pipeline's."""
        spec = next((p for p in self.pipelines if p.name == name), None)
        if spec is None:
            raise FpgashareError(f"no real-time pipeline {name!r}")
        index = self._counts.get(name, 0)
        self._counts[name] = index + 1
        now = self.now
        self._seq += 1
        frame = Frame(spec, index, now, now + spec.deadline_s, self._seq, pixels=pixels)
        self.frames.append(frame)
        if name in self._warming:
            self._held.setdefault(name, []).append(frame)     # released once its pins are in
        else:
            self.push(now, RELEASE, frame)
        return frame

    def _load_done(self) -> None:
        super()._load_done()
        now = self.now
        for name, waiting in list(self._warming.items()):
            for slot in list(waiting):
                s = self.slots.slots[slot]
                if s.state in (SlotState.READY, SlotState.BUSY) or s.state is SlotState.FAILED \
                        or slot not in self.contract.pinned:
                    waiting.discard(slot)          # in (or gone: a fault voids the promise, not the frame)
            if not waiting:
                del self._warming[name]
                for frame in self._held.pop(name, []):
                    frame.release, frame.deadline = now, now + frame.pipeline.deadline_s
                    self.push(now, RELEASE, frame)

    def submit_dnn(self, name: str, image: np.ndarray) -> DnnRequest:
        """Queue an image for best-effort DNN pipeline ``name``; it runs in the next batch."""
        spec = next((p for p in self.dnn_pipelines if p.name == name), None)
        if spec is None:
            raise FpgashareError(f"no DNN pipeline {name!r}")
        self._seq += 1
        request = DnnRequest(spec, image, self._seq, self.now)
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
        name, period = frame.pipeline.name, frame.pipeline.period_s
        last = self._last_release.get(name)
        if last is not None:      # a frame sooner than a period after the last: the app's timing jitters
            early = min(last + period - frame.release, EARLY_CAP * period)
            if early > self._early.get(name, 0.0):
                self._early[name] = early
        self._last_release[name] = frame.release
        self.demand.moved(frame.pipeline)

    def next_release_s(self, pipeline: PipelineSpec) -> float:
        """An app promises its period: the next frame is due a period after the last one, less
        the most any of its frames has come early so far (a camera's frame after a late one).
        A pipeline waiting for its pins releases nothing until they are in."""
        if pipeline.name in self._warming:
            return float("inf")
        last = self._last_release.get(pipeline.name)
        return self.now if last is None else last + pipeline.period_s - self._early.get(pipeline.name, 0.0)

    def _need_time(self, pipeline: PipelineSpec) -> float:
        return self.next_release_s(pipeline) + pipeline.deadline_s

    def finish(self, frame: Frame, outcome: str, reason: str = "") -> None:
        super().finish(frame, outcome, reason)
        # A daemon runs for days: ended frames leave the engine once the daemon has been told.
        self.frames.remove(frame)

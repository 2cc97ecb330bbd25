"""Baselines, measured side by side with ``edf``; they admit everything and never drop a frame
(a frame that is too late still runs and counts as late).

- ``rr-bundle`` (Nguyen & Hoe, FPL 2018): the fabric serves the pipelines round-robin, a bundle of
  up to N frames of one pipeline at a time; the next pipeline's modules are loaded into slots the
  current one does not use while it computes (reconfiguration overlapped with processing).
- ``fcfs``: frames in release order, loading what the oldest blocked frame needs.
- ``static``: each pipeline gets its own slots once, at the start (first fit); pipelines that do
  not fit get none and their frames are dropped; no reconfiguration after the start.
"""

from __future__ import annotations

from operator import attrgetter

from fpgashare.sched.core.jobs import Frame
from fpgashare.sched.core.policy import Policy, PriorityPolicy
from fpgashare.sched.core.view import EngineView, SlotState


class FcfsPolicy(PriorityPolicy):
    name = "fcfs"

    priority = attrgetter("release", "seq")


class RrBundlePolicy(Policy):
    name = "rr-bundle"

    def __init__(self, bundle: int = 4) -> None:
        self.bundle = bundle
        self.turn = 0
        self.served = 0

    def dispatch(self, engine: EngineView) -> None:
        order = engine.pipelines
        if not order:
            return
        waiting = {p.name for p in order if any(f.pipeline.name == p.name for f in engine.pending)}
        current = order[self.turn % len(order)]
        running_current = any(f.pipeline.name == current.name for f in engine.running.values())
        # Bundled by pass: the bundle's frames take pass 1, then pass 2 ...; the turn moves on only
        # when none of them is between passes.
        between = any(f.pipeline.name == current.name and f.step > 0 for f in engine.pending)
        if not running_current and not between and (self.served >= self.bundle or current.name not in waiting) \
                and waiting:
            for step in range(1, len(order) + 1):
                candidate = order[(self.turn + step) % len(order)]
                if candidate.name in waiting:
                    self.turn = (self.turn + step) % len(order)
                    break
            self.served = 0
            current = order[self.turn % len(order)]
        mine = sorted((f for f in engine.pending if f.pipeline.name == current.name), key=lambda f: (f.step, f.seq))
        if self.served >= self.bundle:
            mine = [f for f in mine if f.step > 0]       # the bundle is full: only its own later passes
        reserved: set[int] = set()
        if mine and not running_current:
            frame = mine[0]
            if self.start_if_resident(engine, frame, set()):
                self.served += frame.step == 0           # a new frame of the bundle
                reserved = set(frame.slots)
            else:
                reserved = self.load_missing(engine, frame, set())
        else:
            reserved = {s for f in engine.running.values() for s in f.slots}
        self._overlap_next(engine, current, reserved)

    def _overlap_next(self, engine: EngineView, current, reserved: set[int]) -> None:
        """Load the next pipeline's modules into slots the current one does not use."""
        order = engine.pipelines
        nxt = order[(self.turn + 1) % len(order)]
        if nxt.name == current.name or engine.slots.port.queue:
            return
        probe = Frame(nxt, -1, engine.now, engine.now, -1)
        keep = reserved | {s for m in current.modules for s in engine.slots.ready_with(m)}
        self.load_missing(engine, probe, keep, reason="prefetch")


class StaticPolicy(Policy):
    name = "static"

    def __init__(self) -> None:
        self.assigned: dict[str, list[int]] = {}

    def setup(self, engine: EngineView) -> None:
        free = [s.index for s in engine.slots.slots]
        platform = engine.slots.platform
        for p in engine.pipelines:
            slots, taken = [], []
            for module in p.modules:
                # a module of a fused region takes every member (runtime/catalogue/fused_regions.py)
                slot = next((s for s in free if engine.slots.compatible(s, module)
                             and set(platform.footprint(s, module)) <= set(free)), None)
                if slot is None:
                    break
                slots.append(slot)
                for i in platform.footprint(slot, module):
                    free.remove(i)
                    taken.append(i)
            if len(slots) < len(p.modules) or len(p.pass_stages) > 1:   # a chain in passes swaps modules
                free.extend(taken)
                continue
            self.assigned[p.name] = slots
            for slot, module in zip(slots, p.modules, strict=True):
                engine.load(slot, module, "static")

    def dispatch(self, engine: EngineView) -> None:
        for frame in sorted(engine.pending, key=lambda f: (f.release, f.seq)):
            slots = self.assigned.get(frame.pipeline.name)
            if slots is None:
                engine.drop(frame, "the static partition has no slots left for this pipeline")
                continue
            if engine.stream.free() and all(engine.slots.slots[s].state == SlotState.READY for s in slots):
                engine.start(frame, slots)

"""Holding a ready frame back so that frames sharing a module run back to back (fewer loads).

``edf`` is work-conserving: the most urgent frame commits its loads as soon as the stream is
free, even when a load evicts a module that a frame released a moment later needs (that frame
then loads it back). A cyclic table avoids such loads by leaving the stream idle: the frame whose
module is resident runs first, then the held one loads its module once.

The rule: when the most urgent frame ``f`` that edf would serve next lacks modules, and the
loads edf would make for it evict a module that another frame ``g`` needs, where ``g`` needs no
load now and is pending, or is known (the engine's foresight) to be released before ``f``'s hold
runs out, ``f`` is held: edf decides as if it had not been released yet, until ``g`` is served or
the hold runs out, whichever comes first. A frame of pipeline i is never held past its arrival
plus ``H_i``, the hold budget the admission's slack allows (runtime/sched/analysis/holds.py), nor
once its pipeline's next frame has come (the budgets end before it may come, ``H_i <= T_i - J_i``,
but the two instants are sums in floating point: were the frame held an ulp longer, its next frame
could start first and block it, which the demand test does not charge: processor_demand._held): a
held frame is then a frame that becomes ready later with its deadline kept, which the admitted
set's test passes with, holds counted, so no admitted frame can miss (docs/guarantee.md, "Holding
a frame back").

Holds need a contract with budgets (the bench's plans; a daemon partition's mode changes), and
stop while a mode change is under way (the argument: mode_change.py, "Holds"). A held frame is
still pending for the engine, so every rule that waits for pending frames (side loads, DNN
batches: guard.py) keeps waiting: that only does less than the analysis allows.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from fpgashare.sched.core.jobs import Frame
from fpgashare.sched.core.view import EngineView

#: Most frames held in one decision (each one looked at costs a placement and a load plan).
MAX_HELD = 2


class Holds:
    """The frames ``edf`` holds back (module docstring), and a record of every hold."""

    def __init__(self) -> None:
        #: frame key -> (its arrival, its budget's end, the last instant it was held)
        self.record: dict[str, tuple[float, float, float]] = {}

    def held(self, engine: EngineView, order: Sequence[Frame],
             victims: Callable[[Frame], list[int]]) -> list[Frame]:
        """The frames of ``order`` (pending, by deadline) to hold now. ``victims``: the slots
        edf's loads for a frame would take (its load plan)."""
        holds = engine.contract.holds
        if not holds or engine.changing:
            return []
        out: list[Frame] = []
        for frame in order:
            if frame is engine.committed or frame.start is not None:
                return out            # edf serves this one (or it is already in its loads)
            until = frame.release + holds.get(frame.pipeline.name, 0.0)
            if frame.step or frame.arrives is not None or until <= engine.now \
                    or frame.deadline < frame.release + frame.pipeline.deadline_s:
                return out            # (the budgets count a frame due D after it is released)
            if any(o.pipeline.name == frame.pipeline.name and o.release > frame.release for o in order):
                return out            # its pipeline's next frame came: the hold ends then at the latest
            _, missing = engine.placement.find_slots(frame, set())
            if not missing or len(out) >= MAX_HELD:
                return out
            slots = engine.slots.slots
            evicted = {slots[v].module for v in victims(frame)} - {None}
            if not evicted or not self._someone_waits(engine, frame, order, out, evicted, until):
                return out
            out.append(frame)
            first = self.record.get(frame.key)
            self.record[frame.key] = (frame.release, until, engine.now)
            if first is None:
                engine.wake(until)    # the hold runs out then: the frame is released as usual
        return out

    @staticmethod
    def _someone_waits(engine: EngineView, frame: Frame, order: Sequence[Frame], held: list[Frame],
                       evicted: set[str], until: float) -> bool:
        """Whether a frame of another pipeline that needs one of ``evicted`` and no load is
        pending, or a release of one is due before ``until``."""
        mine = frame.pipeline.name
        for other in order:
            if other is frame or any(other is h for h in held) or other.pipeline.name == mine \
                    or other.start is not None:
                continue
            if evicted.intersection(other.modules) and other.arrives is None:
                if not engine.placement.find_slots(other, set())[1]:
                    return True
        slots = engine.slots
        foresight = engine.foresight
        for p in engine.pipelines:
            if p.name == mine or not evicted.intersection(p.pass_modules[0]):
                continue
            if foresight.next_release_s(p) < until and all(slots.holds(m) for m in p.pass_modules[0]):
                return True
        return False

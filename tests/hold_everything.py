"""The most a policy may hold, shared by the hold tests: every frame not started held for its
whole budget, outside mode changes, whether or not another frame could use the time (hold.py's
limits, not its rule), so the budgets, not the rule, are what the tests check."""

from __future__ import annotations


def hold_everything(self, engine, order, victims) -> list:
    """A stand-in for ``Holds.held`` (runtime/sched/policies/hold.py): the frames to hold now."""
    holds = engine.contract.holds
    if not holds or engine.changing:
        return []
    out = []
    for frame in order:
        until = frame.release + holds.get(frame.pipeline.name, 0.0)
        if frame is engine.committed or frame.start is not None or frame.step or until <= engine.now \
                or frame.deadline < frame.release + frame.pipeline.deadline_s \
                or any(o.pipeline.name == frame.pipeline.name and o.release > frame.release for o in order):
            continue
        out.append(frame)
        if frame.key not in self.record:
            engine.wake(until)
        self.record[frame.key] = (frame.release, until, engine.now)
    return out

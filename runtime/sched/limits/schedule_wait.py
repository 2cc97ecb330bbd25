"""Port time of a schedule as the engine counts it (runtime/sched/core/engine.py): *exposed* while the
port loads and no job computes, *stalled* while, besides, a released job has not started (a frame
waits for the port). A pass after the first is released when the pass before it ends."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

from fpgashare.sched.limits.exact import Schedule
from fpgashare.sched.limits.jobs import Job


@dataclass(frozen=True)
class PortTime:
    busy: int
    exposed: int
    stalled: int


def port_time(schedule: Schedule, jobs: Sequence[Job]) -> PortTime:
    """The schedule's port busy, exposed and stalled ticks."""
    by_key = {j.key: j for j in jobs if j.key in schedule.starts}
    runs = [(schedule.starts[k], schedule.starts[k] + j.length) for k, j in by_key.items()]
    ready = []
    for key, j in by_key.items():
        before = f"{j.pipeline}/{j.frame}/{j.step - 1}"
        release = schedule.starts[before] + by_key[before].length if j.step and before in by_key else j.release
        ready.append((release, schedule.starts[key]))
    loads = [(ld.start, ld.end) for ld in schedule.loads]
    cuts = sorted({t for span in (*runs, *ready, *loads) for t in span})
    busy = exposed = stalled = 0
    for a, b in itertools.pairwise(cuts):
        if not any(s <= a and b <= e for s, e in loads):
            continue
        busy += b - a
        if any(s < b and a < e for s, e in runs):
            continue
        exposed += b - a
        if any(r <= a and b <= s for r, s in ready):
            stalled += b - a
    return PortTime(busy, exposed, stalled)

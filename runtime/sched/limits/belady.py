"""Fewest loads and least port wait for a realised frame order: floors any replacement or
prefetch policy meets when its frames run in that order (at those times).

**Loads.** Belady's MIN (1966) with the running jobs' modules pinned: jobs in start order, each
needing its modules resident (a module used twice needs two copies, taken as two items). On a miss
evict, among the resident items no running job uses, the one used furthest ahead. With equal load
costs this is the fewest loads for the order (Li, Compton & Hauck, FCCM 2000, use it as the floor
of FPGA configuration caching); prefetching moves loads earlier but never saves one. The slots
start empty, as a run's registration window finds them, so the run's warm-up loads count too. It
ignores which slots a module may go to and how slots are split between streams: both can only
add loads, so the figure stays a floor.

**Port wait.** One stream: while job j-1 runs only K - s_{j-1} slots can take job j's modules, so at
least need_j = |M_j \\ M_{j-1}| - (K - s_{j-1}) of them load after j-1 ends; those the idle time before
j's release can hold (g_j = max(0, release_j - end_{j-1}) of port time) need not keep it waiting,
the rest do: wait >= sum_j max(0, t_L x need_j - g_j). A floor for any replacement given the
frames' order and times (the reference doc's formula, with the idle time counted whole: a load
that straddles the release keeps the job waiting only for its part after it).
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Ran:
    """One pass as a run streamed it."""

    start: float
    end: float
    release: float     #: when it could start: the frame's arrival; a later pass: the end of the one before
    modules: tuple[str, ...]


def run_order(engine) -> list[Ran]:
    """The passes a finished run streamed (real-time frames only), in start order."""
    out = []
    for f in engine.frames:
        # A frame committed before it arrives (early_commit.py) is pending from its release but
        # streams only from its arrival: the idle time before the arrival hides loads too.
        came = f.release if f.arrives is None else max(f.release, f.arrives)
        for step, (start, end) in enumerate(f.streamed):
            release = came if step == 0 else f.streamed[step - 1][1]
            out.append(Ran(start, end, release, f.pipeline.pass_modules[step]))
    return sorted(out, key=lambda r: (r.start, r.end))


def _items(modules: Sequence[str]) -> list[tuple[str, int]]:
    seen: Counter[str] = Counter()
    out = []
    for m in modules:
        out.append((m, seen[m]))
        seen[m] += 1
    return out


def belady_loads(order: Sequence[Ran], slots: int) -> int:
    """The fewest loads any slot policy needs to run ``order`` on ``slots`` slots (module docstring).
    Jobs that overlap in time (several streams) pin each other's modules."""
    needs = [_items(r.modules) for r in order]
    uses: dict[tuple[str, int], list[int]] = {}
    for i, items in enumerate(needs):
        for item in items:
            uses.setdefault(item, []).append(i)
    cursor = dict.fromkeys(uses, 0)
    resident: set[tuple[str, int]] = set()
    loads = 0
    for i, r in enumerate(order):
        pinned = set(needs[i])
        for k in range(i - 1, -1, -1):             # earlier jobs still running when this one starts
            if order[k].end > r.start:
                pinned |= set(needs[k])
        for item in needs[i]:
            cursor[item] += 1                      # its next use after this one
        for item in needs[i]:
            if item in resident:
                continue
            loads += 1
            if len(resident) >= slots:
                victims = [x for x in resident if x not in pinned]
                if not victims:
                    continue                       # more at once than slots: the run cannot have done it
                nxt = {x: uses[x][cursor[x]] if cursor[x] < len(uses[x]) else math.inf for x in victims}
                resident.discard(max(victims, key=lambda x: (nxt[x], x)))
            resident.add(item)
    return loads


def wait_floor_s(order: Sequence[Ran], slots: int, load_s: float) -> float:
    """Least port wait (seconds a released job waits for loads) for ``order`` on one stream
    (module docstring). ``load_s``: the shortest load."""
    total = 0.0
    for before, job in itertools.pairwise(order):
        new = len(job.modules) - sum(min(job.modules.count(m), before.modules.count(m)) for m in set(job.modules))
        need = new - (slots - len(before.modules))
        # The idle time before the release hides that much port time, whole loads or not (a load
        # that straddles the release keeps the job waiting only for its part after it).
        total += max(0.0, need * load_s - max(0.0, job.release - before.end))
    return total

"""Cheap upper bounds, for any size: how many real-time pipelines any scheduler could serve with no
miss (when the exact model does not prove its optimum), and how many copies of one pipeline.

Each cap is a resource no schedule can exceed over the run's frames (docs/limits.md):

- **deadline**: a pass longer than its window (nominal release to the latest deadline) is never
  served, whatever else runs;
- **stream**: the frames' stream time fits ``streams`` x the span from the first release to the
  last deadline;
- **slots**: stream time x slots held fits ``slots`` x that span;
- **port**: loads a frame cannot avoid (a pass whose modules are not all in the slots the pass
  before it left free) fit the one port over that span.

A set of k pipelines needs at least the k smallest demands of each resource, so the largest k
whose k smallest demands fit is a bound on the count served.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from fpgashare.catalogue.platform import Platform
from fpgashare.catalogue.workload import PipelineSpec
from fpgashare.sched.limits.jobs import TICK_S, Job


def shortest_load_s(platform: Platform) -> float:
    """The shortest partial load into any slot (a bound may charge no load more)."""
    return min(platform.slot_load_seconds(s.index) for s in platform.slots)


def unavoidable_loads(p: PipelineSpec, slots: int) -> int:
    """Loads every frame of ``p`` needs whatever stays resident: pass k's modules beyond those that
    could sit in the slots pass k-1 left free (K - s_{k-1}), when the chain runs in passes."""
    out = 0
    for before, now in zip(p.pass_modules, p.pass_modules[1:], strict=False):
        new = len(now) - sum(min(now.count(m), before.count(m)) for m in set(now))
        out += max(0, new - (slots - len(before)))
    return out


@dataclass(frozen=True)
class AdmittedCap:
    bound: int
    by_cap: dict[str, int]          #: each cap's count
    never: tuple[str, ...]          #: pipelines no schedule serves (deadline cap)


def _largest_k(demands: list[float], capacity: float) -> int:
    total, k = 0.0, 0
    for d in sorted(demands):
        if total + d > capacity * (1 + 1e-9):
            break
        total, k = total + d, k + 1
    return k


def admitted_cap(jobs: list[Job], pipelines: list[PipelineSpec], platform: Platform) -> AdmittedCap:
    """An upper bound on the real-time pipelines of ``pipelines`` any schedule serves with no miss
    over ``jobs`` (the run's frames, ``jobs.frame_jobs``)."""
    if not jobs:
        return AdmittedCap(len(pipelines), {}, ())
    span = (max(j.due for j in jobs) - min(j.release for j in jobs)) * TICK_S
    k_slots, load_s = len(platform.slots), shortest_load_s(platform)
    never = tuple(sorted({j.pipeline for j in jobs if j.length > j.due - j.release}))
    live = [p for p in pipelines if p.name not in never]
    frames = {p.name: len({j.frame for j in jobs if j.pipeline == p.name}) for p in live}
    stream = [frames[p.name] * p.exec_s for p in live]
    slot = [frames[p.name] * sum(s * len(m) for s, m in zip(p.pass_seconds, p.pass_modules, strict=True))
            for p in live]
    port = [frames[p.name] * unavoidable_loads(p, k_slots) * load_s for p in live]
    by_cap = {"deadline": len(live), "stream": _largest_k(stream, platform.streams * span),
              "slots": _largest_k(slot, k_slots * span), "port": _largest_k(port, span)}
    return AdmittedCap(min(by_cap.values()), by_cap, never)


def copies_cap(p: PipelineSpec, platform: Platform) -> dict[str, int]:
    """Upper bounds on how many copies of ``p`` any scheduler serves with no miss (the other
    pipelines may be refused, so they take nothing): ``bound`` is the least of

    - **space x deadline**: copies released in the same period all come in [nominal, nominal + J)
      and are due by nominal + J + D; at most min(streams, K // s) of them stream at once (each
      holds s slots), each stream fits whole frames of C, so n <= that many x floor((D + J) / C)
      (chains in passes: the stream time in total, n * C <= that many x (D + J));
    - **stream**: n * C <= min(streams, K // s) * T over a period;
    - **port**: the loads every frame needs (``unavoidable_loads``) fit the port over a period."""
    k_slots = len(platform.slots)
    s = max(len(m) for m in p.pass_modules)
    conc = min(platform.streams, k_slots // s) if s <= k_slots else 1
    window = p.deadline_s + p.jitter_s
    if len(p.pass_seconds) == 1:
        deadline = conc * math.floor(window / p.exec_s + 1e-9)
    else:
        deadline = math.floor(conc * window / p.exec_s + 1e-9)
    caps = {"deadline": deadline, "stream": math.floor(conc * p.period_s / p.exec_s + 1e-9)}
    loads = unavoidable_loads(p, k_slots)
    if loads:
        caps["port"] = math.floor(p.period_s / (loads * shortest_load_s(platform)) + 1e-9)
    caps["bound"] = min(caps.values())
    return caps

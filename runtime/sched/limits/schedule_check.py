"""An independent check of a schedule the exact model returns: it shares no code with the model,
only the jobs and the platform, and reads the schedule as a list of intervals.

A schedule is valid when: every job of an admitted pipeline runs once, for its length, inside its
window, after the pass before it; at most ``streams`` jobs run at once; a job's modules sit in
distinct slots that have a partial for them; a slot computes for one job at a time; a use whose
module differs from the slot's previous use has a load of that module into that slot after the
previous use ends and before it starts; loads do not overlap each other on the one port, nor a
use of the slot they load into.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Sequence

from fpgashare.catalogue.platform import Platform
from fpgashare.sched.limits.exact import Schedule
from fpgashare.sched.limits.jobs import Job


def violations(schedule: Schedule, jobs: Sequence[Job], platform: Platform) -> list[str]:
    """Every rule ``schedule`` breaks (empty: valid)."""
    out: list[str] = []
    admitted = set(schedule.admitted)
    wanted = {j.key: j for j in jobs if j.pipeline in admitted}
    if set(schedule.starts) != set(wanted):
        out.append(f"jobs run {sorted(set(schedule.starts) ^ set(wanted))[:4]} differ from the admitted set's")
    spans = {}
    for key, j in wanted.items():
        start = schedule.starts.get(key)
        if start is None:
            continue
        spans[key] = (start, start + j.length)
        if start < j.release or start + j.length > j.due:
            out.append(f"{key} runs [{start}, {start + j.length}) outside its window [{j.release}, {j.due}]")
        if j.step:
            before = f"{j.pipeline}/{j.frame}/{j.step - 1}"
            if before in schedule.starts and schedule.starts[before] + wanted[before].length > start:
                out.append(f"{key} starts before its previous pass ends")
    # Streams: the most jobs at once never exceeds the shell's streams.
    edges = sorted([(a, 1) for a, _ in spans.values()] + [(b, -1) for _, b in spans.values()])
    running = 0
    for _, step in edges:
        running += step
        if running > platform.streams:
            out.append(f"more than {platform.streams} job(s) stream at once")
            break
    # Modules: each job's modules, each in a distinct compatible slot, for the job's span.
    by_job: dict[str, list] = {}
    for use in schedule.uses:
        by_job.setdefault(use.job, []).append(use)
        if platform.slot(use.slot).name not in platform.module(use.module).slots:
            out.append(f"{use.job}: slot {use.slot} has no partial of {use.module}")
        if use.job in spans and (use.start, use.end) != spans[use.job]:
            out.append(f"{use.job}: its use of slot {use.slot} is not its run")
    for key, j in wanted.items():
        uses = by_job.get(key, [])
        if Counter(u.module for u in uses) != Counter(j.modules):
            out.append(f"{key}: modules in slots {sorted(u.module for u in uses)} are not its {sorted(j.modules)}")
        if len({u.slot for u in uses}) != len(uses):
            out.append(f"{key}: two of its modules share a slot")
    # Slots: uses in time order never overlap; a change of module has a load between the two.
    loads_in = {}
    for load in schedule.loads:
        loads_in.setdefault(load.slot, []).append(load)
    for slot in platform.slots:
        uses = sorted((u for u in schedule.uses if u.slot == slot.index), key=lambda u: u.start)
        for a, b in itertools.pairwise(uses):
            if b.start < a.end:
                out.append(f"slot {slot.index}: {a.job} and {b.job} overlap")
            elif b.module != a.module and not any(
                    ld.module == b.module and a.end <= ld.start and ld.end <= b.start
                    for ld in loads_in.get(slot.index, [])):
                out.append(f"slot {slot.index}: no load of {b.module} between {a.job} and {b.job}")
        for ld in loads_in.get(slot.index, []):
            if any(u.start < ld.end and ld.start < u.end for u in uses):
                out.append(f"slot {slot.index}: a load overlaps a use")
    port = sorted(schedule.loads, key=lambda ld: ld.start)
    for a, b in itertools.pairwise(port):
        if b.start < a.end:
            out.append(f"port: loads into slots {a.slot} and {b.slot} overlap")
    return out

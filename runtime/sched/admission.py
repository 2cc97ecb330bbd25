"""Admission control for ``edf``: a real-time pipeline is admitted only if the set with it still
fits, counting reconfiguration and port blocking.

Two checks, in order, each giving a reason that says what does not fit:
1. necessary conditions: the slot-time the set's frames occupy per second must not exceed the
   slots; the port time per second must not exceed one second when the set's modules cannot all
   stay resident (each pipeline then reloads what does not fit every period);
2. a trial: the set runs under ``edf`` on the analytical twin from a synchronous release (every
   pipeline's first frame at once) for ``trial_s`` of virtual time, with the workload's jitter and
   its best-effort DNN pipelines backfilling; any late or dropped frame rejects. This is where
   reconfiguration time, port queueing and non-preemptive blocking (DNN batches included) are
   counted exactly as the scheduler will meet them.
Pipelines are considered in file order, so an earlier pipeline is never evicted by a later one.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import replace

from fpgashare.workload import PipelineSpec, Workload


def module_slots(pipelines: Sequence[PipelineSpec]) -> int:
    """Slots needed to keep every module of the set resident (a module used twice by one chain
    needs two slots)."""
    need: Counter[str] = Counter()
    for p in pipelines:
        for module, count in Counter(p.modules).items():
            need[module] = max(need[module], count)
    return sum(need.values())


def necessary(pipelines: Sequence[PipelineSpec], workload: Workload, load_s: float) -> str | None:
    slots = len(workload.platform.slots)
    slot_time = sum(len(p.stages) * p.exec_s / p.period_s for p in pipelines)
    if slot_time > slots:
        return f"its frames would occupy {slot_time:.2f} slots on average; the platform has {slots}"
    if module_slots(pipelines) > slots:
        # At least the modules beyond the resident capacity come and go every period.
        excess = module_slots(pipelines) - slots
        port = sum(excess * load_s / p.period_s for p in pipelines[-1:]) + sum(
            min(excess, len(p.stages)) * load_s / p.period_s for p in pipelines[:-1])
        if port > 1.0:
            return f"the port would be busy {port:.2f} s per second reloading {excess} module(s) per period"
    return None


def trial(pipelines: Sequence[PipelineSpec], workload: Workload, trial_s: float) -> str | None:
    from fpgashare.backends.model import ModelBackend
    from fpgashare.sched.edf import EdfPolicy
    from fpgashare.sched.engine import run_workload

    # Best-effort work comes along: its batches and slot lending are part of the blocking.
    besteffort = tuple(p for p in workload.pipelines if not p.realtime)
    trial_workload = replace(workload, pipelines=(*pipelines, *besteffort),
                             duration_s=min(trial_s, workload.duration_s))
    _, summary = run_workload(trial_workload, ModelBackend(workload.platform), EdfPolicy())
    bad = {n: p["late"] + p["dropped"] for n, p in summary["pipelines"].items() if p["late"] + p["dropped"]}
    if bad:
        total = sum(p["submitted"] for p in summary["pipelines"].values())
        worst = max(bad, key=bad.get)
        return (f"a {trial_workload.duration_s:.2f} s trial with it misses {sum(bad.values())} of {total} frames "
                f"(most in {worst}), reconfiguration and port queueing included")
    return None


def admit(workload: Workload, load_s: float, trial_s: float = 0.5) -> tuple[list[PipelineSpec], list[dict]]:
    """(admitted real-time pipelines, [{"name", "reason"}] of the rejected ones)."""
    admitted: list[PipelineSpec] = []
    rejected: list[dict] = []
    for p in (q for q in workload.pipelines if q.realtime):
        candidate = [*admitted, p]
        reason = necessary(candidate, workload, load_s) or trial(candidate, workload, trial_s)
        if reason:
            rejected.append({"name": p.name, "reason": reason})
        else:
            admitted.append(p)
    return admitted, rejected

# ruff: noqa: N806  (the analysis keeps the papers' names: S, T, D, J per task, L, X, P)
"""Pins an evicting pipeline may borrow and puts back: admission where no pin set leaves room for
every chain, or the one that does charges the frequent pipelines a reload on every frame.

The plain residency plan (``schedulability.residency``) pins modules for good and charges every
frame its unpinned stages, so every chain's unpinned stages must fit the slots beside the pins.
One rare pipeline whose chain does not fit beside the pins the others need then forbids those pins,
and every frame of the frequent pipelines is charged a reload it needs only after the rare one ran
(two cameras with a module each and a third, every other period, with a chain of two, on a board
of two slots: each camera frame pays a load, although its module stays resident most of the time).

Here some pipelines are *evictors*: pipeline e's frame may load its unpinned stages into the slots
beside the pins and, for the ``d_e`` stages beyond those, into pinned slots holding modules e does
not use; its job on the virtual processor then also puts those pins back, before any other frame
loads or streams (``EdfPolicy`` keeps it: runtime/sched/policies/edf.py). Its job is at most

    S_e = C_e + passes_e * X + (u_e + d_e) * L,    d_e = u_e - (K - |pins|),

(u_e: its unpinned stages) and every other pipeline's frame, whose unpinned stages fit beside the
pins, needs at most its unpinned loads as before: outside an evictor's job every pin is in its
slot. That is the plain analysis's model with a longer job for e, so its test (processor demand
with blocking, phased where phases are known) decides as it does for any set; docs/guarantee.md,
"Evicting pipelines", gives the argument. The put-back ``d_e * L`` runs after e's frame has
streamed, so it is the job's *tail*: it delays the frames after it and blocks like the rest of the
job, but not e's own deadline (``put_back_tails``; docs/guarantee.md, "An evictor's put-back after
its deadline"). Only single-pass evictors whose stages every slot can
hold, on platforms without fused regions; the test is tried only where the plain one refuses.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace

import numpy as np
from fpgashare.catalogue.passes import match_slots
from fpgashare.catalogue.platform import Platform
from fpgashare.catalogue.workload import PipelineSpec
from fpgashare.sched.analysis.early_commit import early_shifts, shifted
from fpgashare.sched.analysis.early_commit import search as early_commit_search
from fpgashare.sched.analysis.processor_demand import release_test
from fpgashare.sched.analysis.residency import ResidencyPlan, slot_compatibility, unpinned_stages
from fpgashare.sched.analysis.schedulability import (
    MAX_TRIED,
    AdmissionContract,
    Verdict,
    _arrays,
    _verdict,
    ddr_budget,
    hold_array,
    load_and_control,
    one_job_frames,
    retestable,
)

#: Pin multisets enumerated at most (modules x copies up to the slots): beyond, no evicting plan.
MAX_PIN_SETS = 4096


def evicting_plans(pipelines: Sequence[PipelineSpec], platform: Platform) -> list[tuple[float, ResidencyPlan, dict]]:
    """Plans with at least one evictor, by the loads per second their frames need (least first):
    ``(rate, plan, evictors)``, ``evictors``: pipeline -> pinned slots its frame may take."""
    if platform.fused or not pipelines:
        return []
    ok = slot_compatibility(platform)
    slots = [s.index for s in platform.slots]
    k = len(slots)
    wanted: Counter[str] = Counter()
    for p in pipelines:
        for counts in p.pass_module_counts:
            for m, c in counts.items():
                wanted[m] = max(wanted[m], c)
    copies = [m for m in sorted(wanted) for _ in range(wanted[m])]
    out = []
    seen: set[tuple] = set()
    tried = 0
    for size in range(1, k + 1):
        for combo in itertools.combinations(copies, size):
            if combo in seen:
                continue
            seen.add(combo)
            tried += 1
            if tried > MAX_PIN_SETS:
                return sorted(out, key=lambda c: c[0])
            plan = _plan(pipelines, platform, Counter(combo), slots, ok)
            if plan is not None:
                out.append(plan)
    return sorted(out, key=lambda c: c[0])


def _plan(pipelines: Sequence[PipelineSpec], platform: Platform, pins: Counter[str], slots: list[int],
          ok) -> tuple[float, ResidencyPlan, dict] | None:
    wanted = [m for m, n in sorted(pins.items()) for _ in range(n)]
    placed = match_slots(wanted, slots, ok)
    if placed is None:
        return None
    pool = [s for s in slots if s not in placed]
    loads: dict[str, int] = {}
    evictors: dict[str, int] = {}
    for p in pipelines:
        passes = unpinned_stages(p, pins)
        if all(match_slots(rest, pool, ok) is not None for rest in passes):
            loads[p.name] = sum(len(rest) for rest in passes)
            continue
        if len(passes) > 1 or not all(ok(s, m) for m in passes[0] for s in slots):
            return None                  # only single-pass evictors any slot can serve
        rest = passes[0]
        lendable = [s for s, m in placed.items() if m not in p.pass_module_counts[0]]
        extra = len(rest) - len(pool)
        if extra > len(lendable):
            return None
        evictors[p.name] = extra
        loads[p.name] = len(rest) + extra          # its loads, and the pins it puts back
    if not evictors:
        return None                      # the plain analysis has this plan
    rate = sum(loads[p.name] / p.period_s for p in pipelines)
    return rate, ResidencyPlan(dict(placed), loads), evictors


def put_back_tails(pipelines: Sequence[PipelineSpec], evictors: dict[str, int], load_s: float) -> np.ndarray:
    """Per pipeline, the part of its job after its frame has streamed: an evictor's ``d_e``
    put-backs (``d_e · L``), 0 for the others. The test charges it to every window but the one
    whose deadline the frame itself may miss (``processor_demand.demand_check``'s ``tail``)."""
    return np.array([evictors.get(p.name, 0) * load_s for p in pipelines], dtype=np.float64)


@retestable
def analyse_evicting(pipelines: Sequence[PipelineSpec], platform: Platform, phased: bool = False,
                     port_share: int = 1, board_load_s: float | None = None,
                     control_s: float | None = None, early_commit: bool = False,
                     holds: dict[str, float] | None = None, same_as: AdmissionContract | None = None) -> Verdict:
    """Whether ``pipelines`` pass the test with some evicting plan (module docstring), and the
    verdict whose contract names the evictors; a refusal's reason is the best plan's.
    ``port_share``, ``board_load_s``, ``control_s``: a partition's load time and register traffic,
    as for ``schedulability.analyse`` (every load, the put-backs too, may wait behind one load of
    each other partition). ``early_commit`` (with ``phased``): where a plan fails, also try frames
    committed before their known release (runtime/sched/analysis/early_commit.py). ``holds``,
    ``same_as`` (only that contract's plan): as for ``schedulability.analyse``."""
    if any(len(p.pass_stages) > 1 and p.exec_s > p.deadline_s for p in pipelines):
        return Verdict(False, "a chain in passes is longer than its deadline")
    if sum(p.ddr_bytes_per_frame / p.period_s for p in pipelines) > ddr_budget(platform):
        return Verdict(False, "the frames would move more than the DDR budget")
    L, X = load_and_control(platform, port_share, board_load_s, control_s)
    phased = phased and not any(p.cpu_before or p.cpu_before_s for p in pipelines)
    P = np.array([p.offset_s for p in pipelines], dtype=np.float64) if phased else None
    reason = "no evicting plan"
    one_job = one_job_frames(pipelines)
    hold = hold_array(pipelines, holds)
    early_commit = early_commit and hold is None
    tried = evicting_plans(pipelines, platform)[:MAX_TRIED]
    if same_as is not None:
        tried = [t for t in tried if dict(t[2]) == same_as.evictors and dict(t[1].pinned) == same_as.pinned]
    for _, plan, evictors in tried:
        S, T, D, J = _arrays(pipelines, plan.loads, L, X)
        tail = put_back_tails(pipelines, evictors, L)
        check = release_test(S, T, D, J, P, X, most_slack=False, tail=tail, one_job=one_job, hold=hold)
        early: dict[str, float] = {}
        if not check.ok and early_commit and P is not None:
            own = {p.name: n - evictors.get(p.name, 0) for p, n in ((p, plan.loads[p.name]) for p in pipelines)}
            found = early_commit_search(S, T, D, J, P, X, early_shifts(pipelines, own, L, J), one_job, tail)
            if found is not None:
                check, shift = found
                D, J, P = shifted(D, J, P, shift)
                early = {p.name: float(v) for p, v in zip(pipelines, shift, strict=True) if v > 0.0}
        if check.ok:
            verdict = _verdict(plan, check, L, X, S, T, D, J, P, tail=tail, one_job=one_job, hold=hold)
            return replace(verdict, contract=replace(verdict.contract, evictors=dict(evictors), early=early))
        reason = check.reason
    return Verdict(False, reason)

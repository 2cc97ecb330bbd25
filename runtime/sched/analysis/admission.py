"""Admission control for ``edf``: a real-time pipeline is admitted only if the set with it passes
the schedulability analysis (runtime/sched/analysis/schedulability.py); the proof, not a trial, decides.

Pipelines are considered in registration (file) order, so an earlier pipeline is never evicted by
a later one; a rejected pipeline gets the analysis's reason. The admitted set's
``AdmissionContract`` (pins, the blocking left for prefetch and the DNN) is what edf keeps to.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from fpgashare.catalogue.workload import PipelineSpec, Workload
from fpgashare.sched.analysis.evicting_pins import analyse_evicting
from fpgashare.sched.analysis.holds import with_holds
from fpgashare.sched.analysis.pinned_first import analyse_pinned_first
from fpgashare.sched.analysis.schedulability import UNCONSTRAINED, AdmissionContract, Verdict, analyse


@dataclass
class Admission:
    admitted: list[PipelineSpec] = field(default_factory=list)
    rejected: list[dict] = field(default_factory=list)     #: {"name", "reason"}
    contract: AdmissionContract = UNCONSTRAINED
    verdict: Verdict | None = None


def admit(workload: Workload, phased: bool = False, evicting: bool | None = None, holds: bool = True) -> Admission:
    """The real-time pipelines of ``workload`` the analysis admits, in order, and the contract.
    ``phased``: the frames are released as the workload writes them (offsets, periods, jitter), so
    the analysis may use the phased test (``processor_demand.release_test``); not for a daemon's streams.
    ``evicting`` (default: ``phased``): where the plain test refuses, try plans in which a pipeline
    borrows pinned slots and puts them back (runtime/sched/analysis/evicting_pins.py), then the
    pinned-first rule (runtime/sched/analysis/pinned_first.py), then frames committed before their
    known release (runtime/sched/analysis/early_commit.py). ``holds``: once the set is decided, the
    contract also gets the hold budgets its slack allows (runtime/sched/analysis/holds.py); they
    never change who is admitted."""
    few_pins = any(not p.realtime for p in workload.pipelines)    # best-effort work borrows idle slots
    evicting = phased if evicting is None else evicting
    result = Admission()
    for p in (q for q in workload.pipelines if q.realtime):
        verdict = analyse([*result.admitted, p], workload.platform, few_pins=few_pins, phased=phased)
        if not verdict.ok and evicting:
            other = analyse_evicting([*result.admitted, p], workload.platform, phased=phased)
            verdict = other if other.ok else verdict
        if not verdict.ok and evicting:
            other = analyse_pinned_first([*result.admitted, p], workload.platform, few_pins=few_pins, phased=phased)
            verdict = other if other.ok else verdict
        if not verdict.ok and evicting and phased:
            other = analyse([*result.admitted, p], workload.platform, few_pins=few_pins, phased=True, early_commit=True)
            verdict = other if other.ok else verdict
        if not verdict.ok and evicting and phased:
            other = analyse_evicting([*result.admitted, p], workload.platform, phased=True, early_commit=True)
            verdict = other if other.ok else verdict
        if verdict.ok:
            result.admitted.append(p)
            result.contract, result.verdict = verdict.contract, verdict
        else:
            result.rejected.append({"name": p.name, "reason": verdict.reason})
    if result.verdict is None:
        result.contract = analyse([], workload.platform).contract
    elif holds:
        result.verdict = with_holds(result.verdict, result.admitted, dnn=few_pins, phased=phased)
        result.contract = result.verdict.contract
    return result

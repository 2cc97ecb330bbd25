"""Hold budgets: how long ``edf`` may hold an admitted pipeline's frame back after it arrives,
so that a frame whose modules are resident runs first (runtime/sched/policies/hold.py), without
any admitted frame missing.

A hold is a later release with the deadline kept. Pipeline i's frame arrives at ``r`` in
``[a, a + J_i]`` (``a`` its nominal release) and is due at ``r + D_i``; held by ``h <= H_i`` it
becomes ready at ``r + h``, still due at ``r + D_i``. The processor-demand argument charges a
window ``[t1, d]`` with the frames ready from ``t1`` on and due by ``d``, and blocks it by one frame
ready before ``t1`` and due after ``d``. For the held frames:

- due by ``d`` and ready from ``t1`` means ``r`` in ``[t1 - H_i, d - D_i]``: in a window of length
  ``t`` at most ``floor((t - (D_i - H_i) + J_i) / T_i) + 1`` frames, and none for ``t < D_i - H_i``,
  which is the demand of a task with deadline ``D_i - H_i`` and jitter ``J_i``;
- a blocking frame arrived before ``t1`` and is due after ``d``: ``D_k > d - t1``, as without holds,
  but a pipeline whose holds end before its next frame may arrive (``H_k <= T_k - J_k``, as every
  budget here) cannot both block a window and have a frame in it, so in the windows its demand
  counts one (``t >= D_k - H_k``) it is not charged as blocking too;
- frames become ready up to ``J_i + H_i`` after their nominal release (the busy period's bound).

So the phase-free test is run with those three (``processor_demand.demand_check``, ``hold``).
The phased test counts a frame in a window by its latest release and its earliest deadline apart
(``a + J >= t1``, ``a + D <= d``), and a blocker by its earliest release and latest deadline: there a
hold is jitter, ``J_i + H_i`` with ``D_i`` unchanged. If the admitted set passes the test it was
admitted under, on the same path (pin set, evictors, pinned-first rule), with the holds counted so,
then under that test's contract (its idle load and DNN blocking, ``with_holds``) holding any frame
of i by up to ``H_i`` after it arrives cannot make an admitted frame miss (docs/guarantee.md,
"Holding a frame back"). A daemon's frames arrive within their jitter, and a hold counts from the
actual arrival: covered the same way; its partitions get budgets with each mode change, and hold
nothing while one is under way (runtime/sched/analysis/mode_change.py, "Holds").

Admission is untouched: the budgets are computed after it, from the slack the admitted set
leaves, greedily: pipelines whose frames load (a hold serves only those), the longest room first,
each taking the largest fraction of its room ``min(D_i - C_i, T_i - J_i)`` that passes beside the
budgets already given (``C_i``: its stream time; ``T_i - J_i`` ends a hold before its pipeline's
next frame may arrive, so one pipeline's frames are never reordered; with known phases, also no
longer than the rule could use a hold: ``useful``). How the slack is shared is a choice of where
holds help, not part of the argument: any budgets the test passes with are sound. Frames committed
before their release (``early``) assume exact releases: their sets get no budget.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Sequence
from dataclasses import replace

import numpy as np
from fpgashare.catalogue.workload import PipelineSpec
from fpgashare.sched.analysis.phased_demand import hyperperiod
from fpgashare.sched.analysis.schedulability import AdmissionContract, Verdict

log = logging.getLogger(__name__)

#: Longest release pattern (hyperperiod over the shortest period) ``useful`` goes through.
MAX_PATTERN = 2000

#: How far past the latest arrival of the frame it waits for a useful hold reaches: the rule holds
#: only while that release is still ahead of the hold's end (hold.py), and a budget that ends
#: exactly then would let it lapse as the frame comes.
EARLY_BY = 1e-4

#: The share of the DNN's batch blocking (the contract's ``dnn_block_s``: the longest batch that
#: may overlap a possible release) holds must leave it. The admitted set's slack goes to the DNN
#: first: idle fabric is the DNN's, and a hold saves a load only now and then (a shorter batch
#: pays the chain's fill again each time), so holds take only slack the DNN's batches leave.
DNN_KEPT = 1.0

#: Wall seconds a daemon's trial searches budgets for (``until``; pipelines not reached by then get
#: none): the budgets only save loads, and must not take a registration past its time limit.
SEARCH_S = 1.0

#: Bisection steps on a pipeline's fraction of its room once the whole room fails (each re-runs the test):
#: the budget is within 1/2^STEPS of the room's largest passing fraction.
STEPS = 5


def room(p: PipelineSpec) -> float:
    """The most a frame of ``p`` could be held: its deadline less its stream time, and no later
    than its pipeline's next frame may arrive."""
    return max(0.0, min(p.deadline_s - p.exec_s, p.period_s - p.jitter_s))


def useful(pipelines: Sequence[PipelineSpec], loading: dict[str, int], rooms: dict[str, float]) -> dict[str, float]:
    """With known phases, per pipeline, the longest hold the rule could use: from one of its frames'
    nominal release to the latest arrival of the last frame of another loading pipeline nominally
    released within its room after it (the frames a hold waits for; a pipeline whose stages are
    all pinned loses no module to a load). Its room where the pattern is too long to go through."""
    period = hyperperiod(np.array([p.period_s for p in pipelines], dtype=np.float64))
    if period is None or period / min(p.period_s for p in pipelines) > MAX_PATTERN:
        return rooms
    first = max(p.offset_s for p in pipelines)     # every pipeline has started: the pattern repeats
    out = {}
    for p in pipelines:
        mine = np.arange(math.ceil((first - p.offset_s) / p.period_s), math.ceil((first + period - p.offset_s)
                                                                               / p.period_s) + 1)
        a = p.offset_s + mine * p.period_s
        best = 0.0
        for q in pipelines:
            if q is p or not loading.get(q.name, 1):
                continue
            # q's last nominal release before each of p's frames' room runs out: the rule keeps
            # holding while any such release is ahead (hold.py), so every one of them may be waited for
            k = np.ceil((a + rooms[p.name] - q.offset_s) / q.period_s) - 1
            gap = q.offset_s + k * q.period_s - a
            fits = (gap > 0.0) & (k >= 0)
            if fits.any():
                best = max(best, float(gap[fits].max()) + q.jitter_s)
        out[p.name] = min(rooms[p.name], best + EARLY_BY) if best > 0.0 else 0.0
    return out


def keeps_contract(old: AdmissionContract, new: AdmissionContract, dnn: bool) -> bool:
    """Whether ``new`` (the test's contract with the holds counted) keeps what admission decided in
    ``old``: the same pins, evictors and rules, no early commits, the idle load where ``old`` has
    it, and, with DNN work, at least ``DNN_KEPT`` of its longest batch that may overlap a release."""
    return (new.pinned == old.pinned and new.evictors == old.evictors and new.pinned_first == old.pinned_first
            and not new.early and (new.idle_loads or not old.idle_loads)
            and (not dnn or new.dnn_block_s >= DNN_KEPT * old.dnn_block_s))


def hold_budgets(verdict: Verdict, pipelines: Sequence[PipelineSpec], dnn: bool = False,
                 phased: bool = False, until: float | None = None) -> dict[str, float]:
    """Per pipeline, the hold budget ``H_i`` in seconds (module docstring); empty where no hold
    is allowed. ``verdict``: the admitted set's; ``dnn``: best-effort DNN work shares the
    partition (its batches keep the blocking the contract gives them); ``phased``: the frames
    come as the pipelines write them, so no budget is longer than a hold could be useful.
    ``until``: a ``time.monotonic()`` past which no more pipelines are given budgets (those given
    stand: any budgets the test passes are sound), so that a large set's search cannot hold up
    the registration it is part of."""
    contract = verdict.contract
    if not verdict.ok or verdict.retest is None or contract.early or not pipelines:
        return {}
    if verdict.plan is not None and not any(verdict.plan.loads.values()):
        return {}                    # no frame ever loads: nothing for a hold to save
    loading = verdict.plan.loads if verdict.plan is not None else {}
    rooms = {p.name: room(p) if loading.get(p.name, 1) > 0 else 0.0 for p in pipelines}
    if phased:
        rooms = useful(pipelines, loading, rooms)
    budgets = {name: 0.0 for name in rooms}

    def passes(trial: dict[str, float]) -> bool:
        again = verdict.retest(pipelines, holds=trial, same_as=contract)
        same_loads = verdict.plan is None or again.plan is None or again.plan.loads == verdict.plan.loads
        return again.ok and same_loads and keeps_contract(contract, again.contract, dnn)

    if passes(rooms):
        return {name: h for name, h in rooms.items() if h > 0.0}     # every room at once: one test
    # Greedy, longest room first (the pipelines whose frames can wait longest gain most from a
    # hold): each takes the largest fraction of its room that passes beside the budgets already given.
    for name in sorted(rooms, key=lambda n: -rooms[n]):
        if until is not None and time.monotonic() > until:
            break
        if rooms[name] <= 0.0:
            continue
        lo, hi = 0.0, 1.0
        if passes({**budgets, name: rooms[name]}):
            lo = hi
        else:
            for _ in range(STEPS):
                mid = (lo + hi) / 2
                if passes({**budgets, name: mid * rooms[name]}):
                    lo = mid
                else:
                    hi = mid
        budgets[name] = lo * rooms[name]
    log.debug("hold budgets: %s", budgets)
    return {name: h for name, h in budgets.items() if h > 0.0}


def with_holds(verdict: Verdict, pipelines: Sequence[PipelineSpec], dnn: bool = False,
               phased: bool = False, until: float | None = None) -> Verdict:
    """``verdict`` with the hold budgets (``hold_budgets``, searched until ``until``) and the
    contract the test gives with them counted: the same pins and rules, its idle load and DNN
    blocking as the test leaves them."""
    if not verdict.ok:
        return verdict
    holds = hold_budgets(verdict, pipelines, dnn, phased, until)
    if not holds:
        return replace(verdict, contract=replace(verdict.contract, holds={}))
    again = verdict.retest(pipelines, holds=holds, same_as=verdict.contract)
    if not (again.ok and keeps_contract(verdict.contract, again.contract, dnn)):
        return replace(verdict, contract=replace(verdict.contract, holds={}))   # (the search passed it)
    return replace(verdict, contract=replace(again.contract, holds=holds))

"""Processor demand of non-preemptive EDF with release jitter and blocking: the test every
admission in runtime/sched/analysis/schedulability.py ends in (the model and its argument are in
that module's docstring and docs/guarantee.md).

A set of jobs (S: stream time with loads, T: period, D: relative deadline, J: jitter) passes if at
every step t of the demand bound function within the busy period, the work due by t plus the
longest job with a deadline beyond t (non-preemptive blocking) plus any extra blocking fits in t.
``release_test`` adds the phased check where the releases' phases are known (phased_demand.py).

A job may have a *tail* (``tail``, per task): the part of it that runs after its frame has ended
(an evicting pipeline's put-back of the pins it took, runtime/sched/analysis/evicting_pins.py). The
tail occupies the virtual processor like the rest of the job, so it counts in full as blocking and
in every other frame's demand, but the frame that misses has not ended by its deadline, so its own
tail lies after it: a window's demand is charged less the least tail among the tasks that may own
its last frame (docs/guarantee.md, "An evictor's put-back after its deadline").
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from fpgashare.sched.analysis.phased_demand import phased_slack

#: Added to (t - D + J) / T before the floor in the demand: floating point must never drop a frame.
STEP_TOLERANCE = 1e-9

#: Most demand steps checked; a set whose busy period needs more (utilisation within a hair of
#: one) is refused as unverifiable rather than checked partly.
MAX_POINTS = 400_000


@dataclass(frozen=True)
class DemandCheck:
    ok: bool
    slack_s: float            #: min over the checked t of t - demand(t) - blocking(t)
    worst_t: float            #: where that minimum is
    points: int
    reason: str = ""
    #: the longest window the test had to check: the longest deadline, or if longer the lesser of
    #: the demand's linear bound L_a and the busy period bound
    horizon_s: float = float("inf")
    #: the longest busy stretch (``busy_period`` with ready jitter and holds): how far back from a
    #: window's end the phased check's credit conditions must look (phased_demand.py)
    busy_s: float = float("inf")


@dataclass(frozen=True)
class PinnedFirst:
    """Per task, for a contract under which a frame whose stages are all pinned streams before a
    committed frame it is more urgent than (runtime/sched/analysis/pinned_first.py): ``stream``,
    its stream time and register traffic, and ``pinned``, whether it needs no load."""

    stream: np.ndarray
    pinned: np.ndarray

    def blocking(self, S: np.ndarray, after: np.ndarray, loading_due: np.ndarray) -> np.ndarray:
        """The blocking of each window: ``after`` (windows x candidates) marks the frames that may
        block it (due after it ends), ``loading_due`` the windows some frame due in needs a load.
        With no such frame, one stream job; else one job, or a pinned frame's stream and then a
        committed frame's stream."""
        def most(v):
            return np.where(after, v[None, :], 0.0).max(axis=1, initial=0.0)

        pinned_stream = most(np.where(self.pinned, self.stream, 0.0))
        loading_stream = most(np.where(self.pinned, 0.0, self.stream))
        both = np.maximum(most(S), pinned_stream + loading_stream)
        return np.where(loading_due, both, most(self.stream))


def demand_check(S: np.ndarray, T: np.ndarray, D: np.ndarray, J: np.ndarray, extra_block_s: float,
                 first: PinnedFirst | None = None, tail: np.ndarray | None = None,
                 hold: np.ndarray | None = None) -> DemandCheck:
    """Processor demand of non-preemptive EDF with jitter and blocking (module docstring), with
    ``extra_block_s`` added to every blocking term. Returns the smallest slack found. ``first``:
    the blocking of the pinned-first rule (``PinnedFirst``) instead of the longest job's.
    ``tail``: per task, the part of S after its frame ends (module docstring; not with ``first``).
    ``hold``: per task, how long after it arrives its frame may be held back (``holds.py``): a
    frame then counts in every window of length ``t >= D - hold`` it may fall in (the demand of a
    task with deadline ``D - hold``), blocks the windows shorter than ``D`` (its deadline is still
    ``D`` after it arrived) but, where ``hold <= T - J``, only those shorter than ``D - hold`` (in
    a longer one its pipeline's frame is in the demand, and a pipeline cannot have both: ``_held``),
    and may become ready up to ``J + hold`` late (the busy period)."""
    tail = _checked_tail(S, tail, first)
    if S.size == 0:
        return DemandCheck(True, float("inf"), 0.0, 0)
    if hold is not None and np.any(hold > 0.0):
        return _held(S, T, D, J, extra_block_s, first, tail, np.asarray(hold, dtype=np.float64))
    return _demand(S, T, D, D, J, J, extra_block_s, first, tail)


def _held(S, T, D, J, extra_block_s, first, tail, hold) -> DemandCheck:
    if np.any(hold >= D):
        return DemandCheck(False, -float("inf"), 0.0, 0, "a hold as long as the deadline")
    # A pipeline whose holds end before its next frame may arrive (hold <= T - J) has no frame in a
    # window that one of its frames blocks: a frame due by d and ready from t1 came before a frame
    # due after d, so the blocker came at least T - J after it, after it was ready, so from t1 on. In
    # the windows its demand counts a frame (t >= D - hold), that frame stands for its blocking too.
    block_D = np.where(hold <= T - J, D - hold, D)
    return _demand(S, T, D - hold, block_D, J, J + hold, extra_block_s, first, tail)


def _demand(S: np.ndarray, T: np.ndarray, D: np.ndarray, block_D: np.ndarray, J: np.ndarray, ready_J: np.ndarray,
            extra_block_s: float, first: PinnedFirst | None, tail: np.ndarray | None) -> DemandCheck:
    """``demand_check`` with the demand's deadlines ``D``, the deadlines blocking is judged by
    ``block_D`` and the jitter of the instants frames become ready ``ready_J`` (all three as given
    without holds)."""
    U = float(np.sum(S / T))
    if U >= 1.0:
        return DemandCheck(False, -float("inf"), float("inf"), 0,
                           f"frames and their loads would keep the stream busy {U:.3f} of the time (>= 1)")
    b_max = float(S.max()) + extra_block_s
    if first is not None:     # the longest blocking the pinned-first rule allows
        b_max = max(b_max, float(np.max(first.stream, where=first.pinned, initial=0.0)
                                 + np.max(first.stream, where=~first.pinned, initial=0.0)) + extra_block_s)
    busy = busy_period(S, T, ready_J, b_max)
    horizon = max(float(D.max()), min((float(np.sum(S / T * (T - D + J))) + b_max) / (1.0 - U), busy))
    counts = np.floor(np.maximum(0.0, horizon - (D - J)) / T + STEP_TOLERANCE).astype(np.int64)  # steps after the first
    total = int(counts.sum()) + S.size
    if total > MAX_POINTS:
        return DemandCheck(False, -float("inf"), horizon, total,
                           f"the stream would be busy {U:.3f} of the time: too close to full to verify "
                           f"({total} demand steps)")
    points = np.concatenate([D] + [D[i] - J[i] + T[i] * np.arange(1, counts[i] + 1) for i in range(S.size)])
    points = np.unique(points[points <= horizon + 1e-12])
    # dbf_i(t) for every point at once: (points x tasks). A point is some task's D - J + k*T; in
    # floating point (t - D + J) / T can land a hair below k there and floor drop the k-th frame:
    # the tolerance counts a frame released within a part in 1e9 of a period of t (pessimistic).
    steps = np.floor((points[:, None] - D[None, :] + J[None, :]) / T[None, :] + STEP_TOLERANCE) + 1.0
    steps[points[:, None] < D[None, :]] = 0.0
    demand = steps @ S
    if tail is not None:
        # The missing frame is one of the frames counted at t, of some task with a step by t: its
        # tail runs after its deadline. Which task is unknown, so the least tail among them.
        least = np.where(steps > 0.0, tail[None, :], np.inf).min(axis=1, initial=np.inf)
        demand = demand - np.where(np.isfinite(least), least, 0.0)
    # Blocking: the longest job whose relative deadline is beyond t.
    order = np.argsort(block_D)
    d_sorted, s_sorted = block_D[order], S[order]
    suffix_max = np.maximum.accumulate(s_sorted[::-1])[::-1]        # max S over tasks k.. (by D)
    first_after = np.searchsorted(d_sorted, points, side="right")   # tasks with D > t start here
    block = np.where(first_after < S.size, suffix_max[np.minimum(first_after, S.size - 1)], 0.0)
    if first is not None:
        loading_due = (steps[:, ~first.pinned] > 0.0).any(axis=1)
        block = first.blocking(S, points[:, None] < block_D[None, :], loading_due)
    slack = points - demand - block - extra_block_s
    worst = int(np.argmin(slack))
    ok = bool(slack[worst] >= 0.0)
    reason = "" if ok else (f"in a window of {points[worst] * 1e3:.2f} ms the frames due, their loads and "
                            f"the blocking need {(demand[worst] + block[worst] + extra_block_s) * 1e3:.2f} ms")
    return DemandCheck(ok, float(slack[worst]), float(points[worst]), int(points.size), reason, horizon, busy)


def release_test(S: np.ndarray, T: np.ndarray, D: np.ndarray, J: np.ndarray, P: np.ndarray | None,
                 extra_block_s: float, most_slack: bool = True, first: PinnedFirst | None = None,
                 tail: np.ndarray | None = None, one_job: np.ndarray | None = None,
                 hold: np.ndarray | None = None) -> DemandCheck:
    """``demand_check``, and with known phases ``P`` (strictly periodic releases at P + k·T plus
    at most J) also the phased check (runtime/sched/analysis/phased_demand.py), whichever leaves
    more slack: each is a sufficient test on its own, the phased one over the releases that do
    happen. ``most_slack`` False: the phased check only where the phase-free one fails (a verdict,
    not the slack, is wanted). ``first``: the pinned-first rule's blocking (``PinnedFirst``).
    ``tail``: per task, the part of its job after its frame ends (module docstring). ``one_job``:
    per task, whether its frame is one non-preemptive job (the phased check's start condition).
    ``hold``: per task, how long its frame may be held back after it arrives (``demand_check``;
    the phased check counts a frame in a window by its latest release and earliest deadline
    apart, so there a hold is jitter: ``J + hold``)."""
    check = demand_check(S, T, D, J, extra_block_s, first, tail, hold)
    if P is None or not math.isfinite(check.horizon_s) or (check.ok and not most_slack):
        return check
    ready_J = J if hold is None else J + hold
    phased = phased_slack(S, T, D, ready_J, P, extra_block_s, check.horizon_s, first, tail, one_job,
                          lookback_s=check.busy_s)
    if phased is None or phased[0] <= check.slack_s:
        return check
    slack, t1, d = phased
    return DemandCheck(slack >= 0.0, slack, d - t1, check.points, "" if slack >= 0.0 else check.reason,
                       check.horizon_s, check.busy_s)


def _checked_tail(S: np.ndarray, tail: np.ndarray | None, first: PinnedFirst | None) -> np.ndarray | None:
    """``tail`` as an array of S's shape, or None where every tail is 0; a clear error for a
    tail that is no part of its job, or with the pinned-first rule (whose argument has no tails)."""
    if tail is None:
        return None
    tail = np.asarray(tail, dtype=np.float64)
    if tail.shape != S.shape or np.any(tail < 0.0) or np.any(tail > S):
        raise ValueError("each task's tail must be a part of its job: 0 <= tail <= S, one per task")
    if not tail.any():
        return None
    if first is not None:
        raise ValueError("the pinned-first rule's blocking is not argued for jobs with tails")
    return tail


def busy_period(S: np.ndarray, T: np.ndarray, J: np.ndarray, block_s: float, steps: int = 10_000) -> float:
    """Length of the longest busy period: the least w with w = B + sum ceil((w + J_i) / T_i) S_i
    (every task released at once, as early as its jitter allows, behind the longest blocking job).
    No deadline can be missed later than that in a busy period (George et al.); inf if it does
    not settle within ``steps`` iterations."""
    w = block_s + float(S.sum())
    for _ in range(steps):
        nxt = block_s + float(np.ceil((w + J) / T + STEP_TOLERANCE) @ S)     # (over-counting is safe)
        if nxt <= w:
            return w
        w = nxt
    return float("inf")

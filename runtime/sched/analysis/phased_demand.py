"""Processor demand of non-preemptive EDF for strictly periodic releases with known phases.

The phase-free test (``processor_demand.demand_check``) holds for any release phases: it bounds the work
of a window of length t by the worst phasing, every pipeline released at the window's start. When
a pipeline's frames are released at ``offset + k·T`` plus at most ``J`` of jitter (a workload run
on the twin or a board replaying it: ``PipelineSpec.release_s``), most of those phasings never
happen, and the same argument can be evaluated on the release pattern that does
(docs/guarantee.md, "Known phases", gives it in full):

a frame missing its deadline d implies a window [t1, d] (t1 the earliest actual release of a frame
the window's busy stretch serves) with

    Σ {S_j : a_j + J_j ≥ t1, a_j + D_j ≤ d} + max {S_k : a_k < t1, D_k > d − t1, a_k + J_k + D_k > d}
        + extra  >  d − t1

(``a``: nominal releases). It suffices to check t1 at every latest release a_j + J_j and d at
every earliest deadline a_j + D_j with d − t1 up to the phase-free test's horizon (a longer
window fits by that test's linear bound, which bounds the phased demand too), and window starts
over one hyperperiod once every pipeline has started: the pattern repeats with the hyperperiod
from there. The two further conditions a miss needs (the busy stretch's start, the blocker's
start) look back from d to the start of the busy stretch holding the miss, which is not bounded
by that horizon but by the longest busy stretch (``lookback_s``; docs/guarantee.md).

With ``tail`` (per task, the part of its job after its frame ends: an evictor's put-back), the
frame that misses at d is one of the window's frames whose deadline can be d (its earliest
deadline within its jitter of d), and its own tail lies after d: the demand is charged less the
least tail among those frames (processor_demand.py's docstring; docs/guarantee.md).

Every time is widened by ``EPS`` (releases earlier and later, deadlines both ways where that is
the pessimistic side) so floating-point release times can only make the check stricter.
"""

from __future__ import annotations

import math

import numpy as np

#: Seconds every release window and deadline is widened by (both ways where pessimistic).
EPS = 1e-9

#: Most window starts x frames of the pattern (the check's cost, about 0.1 µs each): beyond it
#: the check does not apply and the phase-free test decides alone.
MAX_WORK = 30_000

#: Most start instants the third condition (``_blocker_cannot_start``) tries in one check: beyond
#: them the windows left get no credit from it (the test only stays stricter), so its cost is bounded.
MAX_STARTS = 20_000


def hyperperiod(T: np.ndarray) -> float | None:
    """The least common multiple of the periods, if every period is a whole number of
    microseconds (else the pattern is not exactly periodic in floating point: None)."""
    us = []
    for t in T:
        v = float(t) * 1e6
        if abs(v - round(v)) > 1e-6 or round(v) <= 0:
            return None
        us.append(round(v))
    return math.lcm(*us) / 1e6


def phased_slack(S: np.ndarray, T: np.ndarray, D: np.ndarray, J: np.ndarray, P: np.ndarray,
                 extra_block_s: float, horizon_s: float, first=None,
                 tail: np.ndarray | None = None,
                 one_job: np.ndarray | None = None,
                 lookback_s: float = math.inf) -> tuple[float, float, float] | None:
    """The least ``d − t1 − demand − blocking − extra`` over the windows of the phased pattern
    (module docstring), with its window ``(slack, t1, d)``; None where the check does not apply
    (periods not commensurate, or a pattern too long to enumerate). ``horizon_s``: the longest
    window (the phase-free test's). ``lookback_s``: a bound on the length of a busy stretch
    (``processor_demand.busy_period`` with the ready jitter and the blocking): the second and
    third conditions look back that far from a window's end. Infinite, or a pattern too long to
    reach that far back, and they give no credit (the windows are judged by the first alone,
    which is only stricter). ``first``: the blocking of the pinned-first rule
    (``processor_demand.PinnedFirst``) instead of the longest job's. ``tail``: per task, the part
    of its job after its frame ends (module docstring). ``one_job``: per task, whether its frame
    is one non-preemptive job (a single pass; default: none is)."""
    if S.size == 0:
        return (float("inf"), 0.0, 0.0)
    H = hyperperiod(T)
    if H is None or not math.isfinite(horizon_s):
        return None
    if np.any(D - J <= 4 * EPS):
        # A frame's own window [r, r + D] is checked at its latest release and earliest deadline,
        # D − J apart: with jitter as long as the deadline that is no window at all, and the frame
        # would never be counted. The phase-free test decides such a set alone.
        return None
    if math.isfinite(lookback_s):
        credited = _pattern_slack(S, T, D, J, P, extra_block_s, horizon_s, max(lookback_s, horizon_s), H,
                                  first, tail, one_job)
        if credited is not None:
            return credited
    return _pattern_slack(S, T, D, J, P, extra_block_s, horizon_s, None, H, first, tail, one_job)


def _pattern_slack(S: np.ndarray, T: np.ndarray, D: np.ndarray, J: np.ndarray, P: np.ndarray,
                   extra_block_s: float, horizon_s: float, back_s: float | None, H: float, first,
                   tail: np.ndarray | None, one_job: np.ndarray | None) -> tuple[float, float, float] | None:
    """``phased_slack`` over the pattern of hyperperiod ``H``, its credit conditions looking back
    ``back_s`` from a window's end (None: no credit from them); None where the pattern is too long."""
    reach = float((J + D).max())
    # Window starts before this suffice: every frame a later window looks at (back to its busy
    # stretch's start, at most back_s before its end, and its blockers, released at most reach
    # before it) is released once every pipeline has started, where the pattern repeats with the
    # hyperperiod.
    start_end = float(P.max()) + reach + (horizon_s if back_s is None else back_s) + H + 2 * EPS
    end = start_end + horizon_s + float(J.max()) + 2 * EPS  # and no frame after this matters
    counts = np.floor((end - P) / T).astype(np.int64) + 1
    if int(counts.sum()) ** 2 > 64 * MAX_WORK:        # cheap guard before building the pattern
        return None
    task = np.repeat(np.arange(S.size), counts)
    k = np.concatenate([np.arange(n) for n in counts])
    a = P[task] + k * T[task] - EPS                          # nominal releases, widened earlier
    Jj = J[task] + 2 * EPS
    Sj = S[task]
    tail_j = np.zeros_like(Sj) if tail is None else np.asarray(tail, dtype=np.float64)[task]
    one_j = np.zeros(Sj.shape, dtype=bool) if one_job is None else np.asarray(one_job, dtype=bool)[task]
    if first is not None:
        stream_j, pinned_j = first.stream[task], first.pinned[task]
    d_lo, d_hi = D[task] - EPS, D[task] + EPS                # demand side, blocking side
    c = a + Jj                                               # latest release
    e = a + d_lo                                             # earliest deadline
    order = np.argsort(e, kind="stable")
    a, Jj, Sj, d_hi, c, e = a[order], Jj[order], Sj[order], d_hi[order], c[order], e[order]
    tail_j, one_j = tail_j[order], one_j[order]
    if first is not None:
        stream_j, pinned_j = stream_j[order], pinned_j[order]
    starts = np.unique(c[c < start_end])
    if starts.size * a.size > MAX_WORK:
        return None
    worst = (float("inf"), 0.0, 0.0)
    budget = [MAX_STARTS]                                    # start instants (C) may still try
    by_c = np.argsort(c, kind="stable")
    c_sorted, a_by_c, S_by_c = c[by_c], a[by_c], Sj[by_c]
    for t1 in starts:
        lo = int(np.searchsorted(e, t1, side="left"))
        hi = int(np.searchsorted(e, t1 + horizon_s, side="right"))
        if lo >= hi:
            continue
        d = np.unique(e[lo:hi])
        demand_cum = np.cumsum(np.where(c >= t1, Sj, 0.0))
        demand = demand_cum[np.searchsorted(e, d, side="right") - 1]
        prior = a < t1
        b_all = np.full(a.shape, -np.inf)
        if prior.any():
            # A frame released before t1 blocks a window ending at d only if its deadline is after
            # d. One whose release window straddles t1 and that the demand counts (due by d) is
            # counted there: it is released before t1 or not, so it is one or the other.
            b = np.minimum(t1 + d_hi[prior], a[prior] + Jj[prior] + d_hi[prior])
            b = np.where(c[prior] >= t1, np.minimum(b, e[prior]), b)
            b_all[prior] = b
            ob = np.argsort(b)
            b_sorted = b[ob]
            suffix = np.maximum.accumulate(Sj[prior][ob][::-1])[::-1]
            pos = np.searchsorted(b_sorted, d, side="right")
            block = np.where(pos < b_sorted.size, suffix[np.minimum(pos, b_sorted.size - 1)], 0.0)
            if first is not None:
                block = _pinned_first_block(t1, d, b_sorted, pos, ob, prior, Sj, stream_j, pinned_j, c, e)
        else:
            block = np.zeros_like(d)
        # A window no frame is due in holds no miss (the missing frame is one of its demand).
        slack = np.where(demand > 0.0, d - t1 - demand - block - extra_block_s, np.inf)
        failing = np.flatnonzero(slack < 0.0)
        if failing.size:
            credited = np.full(failing.shape, -np.inf)
            if tail_j.any():
                least = _own_tail(t1, d[failing], lo, hi, c, e, Jj, tail_j)
                demand[failing] -= least
                credited = slack[failing] + least
            if back_s is None:                 # no look-back: the window's own slack, with its tail
                slack[failing] = np.maximum(slack[failing], credited)
                failing = failing[:0]
        if failing.size:
            straddle = np.cumsum(np.where(prior & (c >= t1), Sj, 0.0))     # by e, like demand_cum
            twice = straddle[np.searchsorted(e, d[failing], side="right") - 1]
            busy = _busy_start_slack(t1, d[failing], demand[failing] - twice, extra_block_s, back_s,
                                     c_sorted, a_by_c, S_by_c)
            # A miss needs both conditions: where the credit alone clears the window, the larger.
            slack[failing] = np.where(credited >= 0.0, np.maximum(credited, busy), busy)
            if first is None and one_j.any() and budget[0] > 0:
                # and a third: the job on the stream at t0 started when everything before it in its
                # busy stretch was done (``_blocker_cannot_start``)
                for j in np.flatnonzero(slack[failing] < 0.0):
                    if _blocker_cannot_start(t1, float(d[failing[j]]), float(demand[failing[j]]), extra_block_s,
                                             back_s, a, c, Sj, prior, b_all, one_j, budget):
                        slack[failing[j]] = 0.0
        i = int(np.argmin(slack))
        if slack[i] < worst[0]:
            worst = (float(slack[i]), float(t1), float(d[i]))
    return worst


def _blocker_cannot_start(t1: float, d: float, demand: float, extra_block_s: float, lookback_s: float,
                          a: np.ndarray, c: np.ndarray, Sj: np.ndarray, prior: np.ndarray, b: np.ndarray,
                          one_job: np.ndarray, budget: list[int]) -> bool:
    """Whether no frame can be the job on the stream at t0 of a miss in the window [t1, d]: a third
    necessary condition of a miss (docs/guarantee.md, "With known phases", (C)).

    Some frame k due after d (``b`` > d: a blocking candidate), one job (a single pass), would have
    to start at an instant sigma < t1 with d − sigma ≤ S_k + demand + extra (it runs through t0,
    then only the window's frames and the extra blocking), after its release (sigma ≥ a_k), the
    stream busy from an idle instant s ≤ min(sigma, k's latest release) up to sigma with frames
    released from s on, each run between its release and sigma:

        sigma − s ≤ Σ {min(S_j, sigma − a_j) : j ≠ k, a_j + J_j ≥ s, a_j < sigma} + extra.

    Without such a k the window alone must not fit: d − t1 ≤ demand + extra. True when none of
    these can hold (no miss ends at d). ``budget``: start instants it may still try (spent here;
    once none is left it answers False, which only keeps the window failing)."""
    if d - t1 <= demand + extra_block_s:
        return False                                   # a miss with no frame blocking at t0
    near = np.flatnonzero((a < t1) & (c >= d - lookback_s))  # frames a stretch ending by d may serve
    for k in np.flatnonzero(prior & (b > d)):
        # (every comparison leans by 4 EPS toward a miss: rounding must never drop the one instant
        # where k can just start)
        lo = max(d - float(Sj[k]) - demand - extra_block_s - 4 * EPS, float(a[k]))
        if lo >= t1:
            continue                                   # k cannot have started early enough
        if not one_job[k]:
            return False                               # its earlier passes may fill the stretch
        others = near[near != k]
        ao, co, So = a[others], c[others], Sj[others]
        # sigma − (the work that fits before sigma) is piecewise linear: its least values are at the
        # ends of its pieces (a release, a release plus its job, a stretch start, k's latest release)
        sigma = np.concatenate(([lo, t1], ao, ao + So, co, [float(c[k])]))
        sigma = np.unique(sigma[(sigma >= lo) & (sigma <= t1)])
        budget[0] -= sigma.size
        if budget[0] < 0:
            return False
        for sg in sigma:
            last = min(sg, float(c[k]))                # the stretch starts by k's release
            starts = np.unique(np.concatenate((co[(co <= last) & (co >= d - lookback_s)], [last])))
            fits = np.clip(sg - ao, 0.0, So)           # what a frame released at a_j can run by sg
            work = (co[None, :] >= starts[:, None]) @ fits
            if np.any(sg - starts <= work + extra_block_s + 4 * EPS):
                return False
    return True


def _own_tail(t1: float, d: np.ndarray, lo: int, hi: int, c: np.ndarray, e: np.ndarray, Jj: np.ndarray,
              tail_j: np.ndarray) -> np.ndarray:
    """Per window end d, the least tail among the frames that may be the one missing at d: counted
    in [t1, d] (latest release from t1, earliest deadline by d) and with a deadline that can be d
    (earliest deadline + jitter >= d, widened). Frames are sorted by ``e``; those counted lie in
    ``lo:hi``. 0 where no frame qualifies (no credit)."""
    ce, ee, je, te = c[lo:hi], e[lo:hi], Jj[lo:hi], tail_j[lo:hi]
    may_miss = (ce[None, :] >= t1) & (ee[None, :] <= d[:, None]) & (ee[None, :] + je[None, :] + 4 * EPS >= d[:, None])
    least = np.where(may_miss, te[None, :], np.inf).min(axis=1, initial=np.inf)
    return np.where(np.isfinite(least), least, 0.0)


def _pinned_first_block(t1: float, d: np.ndarray, b_sorted: np.ndarray, pos: np.ndarray, ob: np.ndarray,
                        prior: np.ndarray, Sj: np.ndarray, stream_j: np.ndarray, pinned_j: np.ndarray,
                        c: np.ndarray, e: np.ndarray) -> np.ndarray:
    """The pinned-first rule's blocking of the windows [t1, d] (``PinnedFirst.blocking``): the
    candidates are the frames released before t1 that end after d, as for the plain rule."""
    n = b_sorted.size
    at = np.minimum(pos, n - 1)
    inside = pos < n

    def most(v):
        return np.where(inside, np.maximum.accumulate(v[prior][ob][::-1])[::-1][at], 0.0)

    pinned_stream = most(np.where(pinned_j, stream_j, 0.0))
    loading_stream = most(np.where(pinned_j, 0.0, stream_j))
    both = np.maximum(most(Sj), pinned_stream + loading_stream)
    # Whether some frame due in the window (released from t1 on, due by d) needs a load.
    loading = np.cumsum(np.where((c >= t1) & ~pinned_j, 1, 0))
    loading_due = loading[np.searchsorted(e, d, side="right") - 1] > 0
    return np.where(loading_due, both, most(stream_j))


def _busy_start_slack(t1: float, d: np.ndarray, demand: np.ndarray, extra_block_s: float, lookback_s: float,
                      c_sorted: np.ndarray, a_by_c: np.ndarray, S_by_c: np.ndarray) -> np.ndarray:
    """For windows [t1, d] whose blocking term fails, the second necessary condition of a miss:
    the busy stretch holding the miss began at some s <= t1 after an idle instant, and from s on
    served only frames released at or after s, so a miss needs, for some s (a latest release,
    d - s within the busy period bound),

        Σ {S_i : a_i + J_i >= s, a_i < t1} + demand(t1, d) + extra  >  d - s.

    ``demand``: the window's demand less the frames the sum above counts too (a frame whose
    release window straddles t1 is counted once). Returns, per d, the most this leaves (>= 0: no
    miss can end a window there)."""
    k_hi = int(np.searchsorted(c_sorted, t1, side="right"))      # candidate starts s <= t1
    cand = c_sorted[:k_hi]
    if cand.size == 0:
        return np.full(d.shape, -np.inf)
    before = a_by_c < t1
    # W(s): work of the frames possibly released in [s, t1), for s at each candidate (suffix sums).
    w = np.cumsum(np.where(before, S_by_c, 0.0)[::-1])[::-1]
    W = w[:k_hi]
    value = W + cand                       # a miss at (s, d) needs value(s) > d - demand - extra
    best_from = np.maximum.accumulate(value[::-1])[::-1]       # max of value over s >= each candidate
    first = np.searchsorted(cand, d - lookback_s, side="left")
    inside = first < cand.size
    out = np.full(d.shape, -np.inf)
    out[inside] = (d[inside] - demand[inside] - extra_block_s) - best_from[first[inside]]
    return out

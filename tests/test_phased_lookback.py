"""The phased check's look-back (runtime/sched/analysis/phased_demand.py, docs/guarantee.md "With
known phases"): its busy-start and blocker-start conditions look back from a window's end to the
start of the busy stretch holding it, so the look-back must bound every busy stretch. The demand
horizon L_a does not (it bounds how long a window can fail, not how long the stream stays busy:
with deadlines past the period it is shorter than the busy period), so the look-back is the busy
period bound with the ready jitter (J + hold) and the blocking.

Checked on generated sets against a simulation of non-preemptive EDF written apart from the test:
every busy stretch it shows, at the pattern that makes the stretch longest and under random phases,
jitter, holds and run times, lies within the look-back ``release_test`` hands the phased check."""

from __future__ import annotations

import heapq
import random
from unittest.mock import patch

import numpy as np
from fpgashare.sched.analysis import processor_demand
from fpgashare.sched.analysis.phased_demand import hyperperiod
from fpgashare.sched.analysis.processor_demand import demand_check, release_test
from hypothesis import given, settings
from hypothesis import strategies as st

#: How long after the extra blocking job starts the first frames become ready.
AFTER_S = 1e-9


def _drawn(rng: random.Random):
    """A set of 2 to 5 pipelines with a load of 0.7 to 0.97: periods of whole milliseconds,
    deadlines from half a period to four (long pipelines), jitter on about half, holds up to the
    room of each (min(D - S, T - J)) on about half, and extra blocking up to 1 ms."""
    n = rng.randint(2, 5)
    T = np.array([rng.choice((4, 5, 8, 10, 20, 40)) * 1e-3 for _ in range(n)])
    share = np.array([rng.uniform(0.2, 1.0) for _ in range(n)])
    S = share / share.sum() * rng.uniform(0.7, 0.97) * T
    D = np.maximum(np.array([rng.uniform(0.5, 4.0) * t for t in T]), 1.05 * S)
    J = np.array([rng.uniform(0.0, 0.3) * t if rng.random() < 0.5 else 0.0 for t in T])
    room = np.maximum(0.0, np.minimum(D - S, T - J))
    hold = np.array([rng.random() * r if rng.random() < 0.5 else 0.0 for r in room]) * (1.0 - 1e-9)
    return S, T, D, J, hold, rng.uniform(0.0, 1e-3)


def _longest_stretch_s(jobs: list[tuple[float, float, float]], carried_s: float) -> float:
    """Non-preemptive EDF over jobs (ready, due, run time), after a job of ``carried_s`` that holds
    the stream from 0 (a DNN batch or idle load that started while no frame was ready): the
    longest stretch from an instant at which every frame ready before it is done, with the stream
    never idle after it, to the next such instant."""
    jobs = sorted(jobs)
    ready: list[tuple[float, float]] = []
    now, start, longest, n = carried_s, 0.0, 0.0, 0
    while n < len(jobs) or ready:
        if not ready and jobs[n][0] > now:
            longest = max(longest, now - start)
            now = start = jobs[n][0]
        while n < len(jobs) and jobs[n][0] <= now:
            heapq.heappush(ready, (jobs[n][1], jobs[n][2]))
            n += 1
        _, cost = heapq.heappop(ready)
        now += cost
    return max(longest, now - start)


def _critical_instant(S, T, D, J, hold, until_s: float) -> list[tuple[float, float, float]]:
    """Every pipeline's first frame ready just after the carried job starts (it came late by its
    whole jitter and was held its whole budget), every later one as early as it may come, unheld:
    the pattern of the busy period bound."""
    jobs = []
    for i in range(len(S)):
        nominal = AFTER_S - float(J[i] + hold[i])
        jobs.append((AFTER_S, nominal + float(J[i] + D[i]), float(S[i])))
        for k in range(1, int((until_s - nominal) // T[i]) + 2):
            jobs.append((nominal + k * float(T[i]), nominal + k * float(T[i] + D[i]), float(S[i])))
    return jobs


def _phased(S, T, D, J, hold, P, until_s: float, rng: random.Random) -> list[tuple[float, float, float]]:
    """The phased pattern: frame k of pipeline i comes at P_i + k·T_i plus a random part of J_i (or
    its ends), is held a random part of its hold (or all or none of it) and runs a random part of
    S_i (or all of it)."""
    jobs = []
    for i in range(len(S)):
        for k in range(int((until_s - P[i]) // T[i]) + 1):
            arrives = float(P[i] + k * T[i]) + rng.choice((0.0, 1.0, rng.random())) * float(J[i])
            held = rng.choice((0.0, 1.0, rng.random())) * float(hold[i])
            jobs.append((arrives + held, arrives + float(D[i]), float(S[i]) * rng.choice((1.0, rng.uniform(0.5, 1.0)))))
    return jobs


def _lookback_handed_over(S, T, D, J, hold, P, extra: float) -> float:
    """The look-back ``release_test`` hands the phased check for this set."""
    seen = []
    real = processor_demand.phased_slack

    def spy(*args, **kwargs):
        seen.append(kwargs.get("lookback_s", args[6]))      # without one, the window horizon
        return real(*args, **kwargs)

    with patch.object(processor_demand, "phased_slack", spy):
        release_test(S, T, D, J, P, extra, hold=hold)
    assert seen, "the phased check ran"
    return float(seen[0])


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_no_busy_stretch_outlasts_the_look_back_the_phased_check_is_given(seed):
    rng = random.Random(seed)
    S, T, D, J, hold, extra = _drawn(rng)
    check = demand_check(S, T, D, J, extra, hold=hold)
    if not np.isfinite(check.horizon_s):
        return
    P = np.array([round(rng.uniform(0.0, float(t)), 4) for t in T])
    back = _lookback_handed_over(S, T, D, J, hold, P, extra)
    if not np.isfinite(back):
        return                                              # the credit conditions give nothing
    longest = _longest_stretch_s(_critical_instant(S, T, D, J, hold, back + float(T.max())), extra)
    assert longest <= back * (1.0 + 1e-9), (S, T, D, J, hold, extra, longest, back)
    until = float(P.max()) + 2 * (hyperperiod(T) or 0.0) + back
    for _ in range(3):
        stretch = _longest_stretch_s(_phased(S, T, D, J, hold, P, until, rng), rng.choice((0.0, extra)))
        assert stretch <= back * (1.0 + 1e-9), (S, T, D, J, hold, P, extra, stretch, back)


def test_with_deadlines_past_the_period_a_busy_stretch_outlasts_the_longest_window_checked(fresh_seed):
    """Why the look-back is not the window horizon: generated sets (a fresh seed range) where the
    stream stays busy longer than the longest window the test checks; the look-back reaches it."""
    first = random.Random(fresh_seed).randrange(2**32 - 200)
    found = 0
    for seed in range(first, first + 200):
        rng = random.Random(seed)
        S, T, D, J, hold, extra = _drawn(rng)
        check = demand_check(S, T, D, J, extra, hold=hold)
        if not np.isfinite(check.busy_s):
            continue
        longest = _longest_stretch_s(_critical_instant(S, T, D, J, hold, check.busy_s + float(T.max())), extra)
        if longest <= check.horizon_s:
            continue
        found += 1
        P = np.zeros(S.size)
        assert _lookback_handed_over(S, T, D, J, hold, P, extra) >= longest * (1.0 - 1e-9), (seed, longest)
        if found == 5:
            break
    assert found, f"no set from seed {first} kept the stream busy longer than its horizon"

"""Each term the phase-free demand test gives a held frame (processor_demand.demand_check, ``hold``;
runtime/sched/analysis/holds.py) against the release pattern that makes that term tight, on
generated sets: the demand (deadline D - H, jitter J) and the blocking (judged by D, or by D - H for
a pipeline whose hold ends before its next frame may arrive) at the critical instant with every
candidate blocker, and the busy period (ready jitter J + H) at the pattern that makes it longest.
A version of the test with a weaker term admits sets that pattern makes miss, or stops short of a
busy stretch that pattern makes."""

from __future__ import annotations

import random

import numpy as np
from fpgashare.sched.analysis.processor_demand import demand_check
from hypothesis import given, settings
from hypothesis import strategies as st

#: How long after the blocker starts the other frames become ready (the blocker must be on the
#: stream first, and due after every window it blocks; 1 ns against windows of milliseconds).
AFTER_S = 1e-9


def _drawn(rng: random.Random, n: int, load: float | None = None):
    """A set of ``n`` pipelines: periods of whole milliseconds, stream times of a random share of
    the stream (``load`` of it in all, if given), deadlines up to the period, jitter on about half,
    and holds up to the room most pipelines have (min(D - S, T - J), holds.room), often the whole
    room, now and then up to D - S (a hold past the pipeline's next arrival, which the test must
    take too)."""
    T = np.array([rng.choice((4, 5, 8, 10, 20, 40)) * 1e-3 for _ in range(n)])
    S = np.array([rng.uniform(0.05, 0.6) * t / n for t in T])
    if load is not None:
        S = S * load / float(np.sum(S / T))
    D = np.array([rng.uniform(s, t) if rng.random() < 0.7 else t for s, t in zip(S, T, strict=True)])
    J = np.array([rng.uniform(0.0, 0.3) * t if rng.random() < 0.5 else 0.0 for t in T])
    room = np.where([rng.random() < 0.8 for _ in range(n)], np.minimum(D - S, T - J), D - S)
    share = [rng.choice((1.0, rng.random())) if rng.random() < 0.8 else 0.0 for _ in range(n)]
    H = np.maximum(0.0, room) * np.array(share) * (1.0 - 1e-9)
    if load is None and rng.random() < 0.5:
        # one pipeline with the longest frames, due a period after they arrive, with much jitter,
        # held nearly to its deadline: its budget reaches well past its next frame's arrival, and
        # the windows it may block both as a frame due after them and as one due in them are the
        # shortest the others leave (they are due a period after they arrive and held less)
        S[0] = min(float(S.max()) * rng.uniform(1.0, 2.0), 0.5 * T[0])
        D[0], J[0] = T[0], rng.uniform(0.3, 0.7) * T[0]
        H[0] = (D[0] - S[0]) * rng.uniform(0.8, 1.0)
        D[1:] = T[1:]
        H[1:] = np.minimum(D[1:] - S[1:], T[1:] - J[1:]) * np.array([rng.uniform(0.0, 0.5) for _ in range(n - 1)])
    elif load is not None and rng.random() < 0.7:
        # every pipeline due a period after it arrives, on time, held for its whole room: every
        # frame may come a whole period less its stream time late, so the busy period with the
        # holds is far longer than without, and so is the demand's reach (L_a)
        D, J = T.copy(), np.zeros(n)
        H = (T - S) * (1.0 - 1e-9)
    return S, T, D, J, H


def _at_the_edge(S, T, D, J, H) -> np.ndarray:
    """``S`` scaled to where the test with holds just passes (bisection on the scale)."""
    def passes(scale: float) -> bool:
        return bool(np.all(S * scale < D - H)) and demand_check(S * scale, T, D, J, 0.0, hold=H).ok

    lo, hi = 1e-3, 4.0
    assert passes(lo), "a set a thousand times lighter than drawn passes whatever its holds"
    for _ in range(16):
        lo, hi = ((lo + hi) / 2, hi) if passes((lo + hi) / 2) else (lo, (lo + hi) / 2)
    return S * lo


def _longest_busy_s(S, T, J, block_s: float) -> float:
    """The least w = block + Σ ceil((w + J_i) / T_i) S_i, iterated here apart from the analysis."""
    w = block_s + float(S.sum())
    while True:
        nxt = block_s + sum(int(np.ceil((w + j) / t - 1e-12)) * s for s, t, j in zip(S, T, J, strict=True))
        if nxt <= w + 1e-15:
            return w
        w = nxt


def _critical_instant(S, T, D, J, H, blocker: int | None, later: str, until_s: float,
                      rng: random.Random) -> list[tuple[float, float, float]]:
    """Jobs (ready, due, stream time) of the pattern that makes every window's demand and its
    blocking by ``blocker`` tight at once: the blocker's frame comes at 0 unheld and starts (nothing
    else is ready), every other pipeline's first frame arrives ``H`` before ``AFTER_S`` (late by its
    whole jitter) and is held until then, so it is ready at ``AFTER_S`` and due as early as a frame
    ready then can be; every later frame arrives as early as its jitter allows (one period after
    its nominal release) and is held ``later``: not, its whole budget, or a random part of it.
    Where the blocker's budget reaches past its next frame's arrival (more than T - J), its frame
    before the blocker comes T - J before it and is held until ``AFTER_S``: one pipeline both
    blocks the window and has a frame in it."""
    jobs = []
    for i in range(len(S)):
        if i == blocker:
            jobs.append((0.0, float(D[i]), float(S[i])))
            nominal = -float(J[i])                     # it came late by its whole jitter
            if H[i] >= T[i] - J[i] + AFTER_S:
                arrives = -float(T[i] - J[i])
                jobs.append((AFTER_S, arrives + float(D[i]), float(S[i])))
                nominal = 0.0                          # and the blocker on time
        else:
            arrives = AFTER_S - float(H[i])
            jobs.append((AFTER_S, arrives + float(D[i]), float(S[i])))
            nominal = arrives - float(J[i])
        for k in range(1, int((until_s - nominal) // T[i]) + 2):
            arrives = nominal + k * float(T[i])
            held = {"none": 0.0, "all": float(H[i]), "random": rng.random() * float(H[i])}[later]
            jobs.append((arrives + held, arrives + float(D[i]), float(S[i])))
    return jobs


def _edf_misses(jobs: list[tuple[float, float, float]]) -> bool:
    """Non-preemptive EDF on one processor over the jobs' ready instants: the most urgent job
    ready runs to its end; whether one ends after it is due."""
    jobs = sorted(jobs)
    ready: list[tuple[float, float]] = []
    now, n = 0.0, 0
    while n < len(jobs) or ready:
        if not ready and jobs[n][0] > now:
            now = jobs[n][0]
        while n < len(jobs) and jobs[n][0] <= now:
            ready.append((jobs[n][1], jobs[n][2]))
            n += 1
        ready.sort()
        due, cost = ready.pop(0)
        now += cost
        if now > due + 1e-12:
            return True
    return False


def _busy_stretch_s(jobs: list[tuple[float, float, float]]) -> float:
    """How long the stream stays busy from 0 with these jobs (any order that never idles while a
    job is ready keeps it busy as long)."""
    end = 0.0
    for ready, _, cost in sorted(jobs):
        if ready > end:
            break
        end += cost
    return end


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_a_set_the_test_passes_with_holds_misses_nothing_at_the_critical_instant_whatever_blocks(seed):
    """Demand and blocking: at the edge of the test, the critical instant with each pipeline as
    the blocker (and none) misses nothing under non-preemptive EDF. A blocker judged by D - H
    where its hold reaches past its next frame's earliest arrival (T - J after it), or a demand
    without the holds or with the hold as jitter, admits sets this pattern makes miss."""
    rng = random.Random(seed)
    S, T, D, J, H = _drawn(rng, rng.randint(2, 4))
    S = _at_the_edge(S, T, D, J, H)
    until = _longest_busy_s(S, T, J + H, float(S.max())) + float(D.max())
    for blocker in [None, *range(len(S))]:
        for later in ("none", "all", "random"):
            jobs = _critical_instant(S, T, D, J, H, blocker, later, until, rng)
            assert not _edf_misses(jobs), (S, T, D, J, H, blocker, later)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_the_test_looks_as_far_as_held_frames_can_keep_the_stream_busy(seed):
    """The busy period: every pipeline's first frame ready at once after its whole jitter and
    hold, behind the longest frame, and every later frame arriving as early as it may, unheld,
    keep the stream busy up to the longest busy period with ready jitter J + H. The test must look
    at windows that long, unless the demand cannot exceed a window that long whatever the phases
    (L_a = (Σ U_i (T_i - (D_i - H_i) + J_i) + B) / (1 - U), the demand of a task with deadline
    D - H and jitter J). Counting the busy period with J alone, or L_a with D, stops short of
    the stretch. (Where the phase-free test's verdict is concerned, any reach past the busy
    period with J alone gives the same verdict: a window longer than it that fails implies a
    shorter one that does. The reach matters as the phased check's look-back, phased_demand.py's
    conditions (B) and (C), which is why it is checked as a bound.)"""
    rng = random.Random(seed)
    S, T, D, J, H = _drawn(rng, rng.randint(2, 6), load=rng.uniform(0.5, 0.95))
    longest = int(np.argmax(S))
    until = _longest_busy_s(S, T, J + H, float(S.max()))
    stretch = _busy_stretch_s(_critical_instant(S, T, D, J, H, longest, "none", until, rng))
    U = float(np.sum(S / T))
    la = (float(np.sum(S / T * (T - (D - H) + J))) + float(S.max())) / (1.0 - U)
    check = demand_check(S, T, D, J, 0.0, hold=H)
    assert check.horizon_s >= min(stretch, la) * (1.0 - 1e-9), (S, T, D, J, H, stretch, la, check.horizon_s)

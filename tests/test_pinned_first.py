# ruff: noqa: N803, N806  (the analysis's names: C, S, T, D, J per task, L, P)
"""Pinned frames first (runtime/sched/analysis/pinned_first.py, ``EdfPolicy``'s pinned-first start).

Checked against a two-resource simulation written apart from the test (a set the test passes never
misses, whatever jitter, stream and load times below the bounds), against the plain test where the
rule cannot matter, and end to end: sets admitted under the rule run on the twin for many
hyperperiods with fresh jitter and miss nothing."""

from __future__ import annotations

import heapq
import random
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from fpgashare.backends.model import ModelBackend
from fpgashare.catalogue.platform import load_platform
from fpgashare.catalogue.workload import Workload, realtime_spec
from fpgashare.sched.analysis.phased_demand import hyperperiod
from fpgashare.sched.analysis.pinned_first import analyse_pinned_first
from fpgashare.sched.analysis.processor_demand import PinnedFirst, demand_check, release_test
from fpgashare.sched.analysis.schedulability import AdmissionContract, analyse, load_and_control
from fpgashare.sched.policies import edf
from fpgashare.sched.sources.periodic import run_workload
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchmarks.workload_gen import FRAMES, VISION

PERIODS_MS = (5, 10, 20, 40)


def _tasks(seed: int, n: int):
    """A seeded task set on one stream and one port: stream times C, loads per frame (about
    half the tasks load nothing), a load time L, periods, deadlines, jitter, phases."""
    rng = random.Random(seed)
    L = rng.uniform(0.2e-3, 2e-3)
    T = np.array([rng.choice(PERIODS_MS) / 1e3 for _ in range(n)])
    loads = np.array([0 if rng.random() < 0.5 else rng.randint(1, 3) for _ in range(n)])
    C = np.array([rng.uniform(0.02, 0.4) * t for t in T])
    # Slack beyond the frame's own work: a share of the period, or (tight) about a load or two.
    D = np.array([min(t, c + k * L + rng.choice((rng.uniform(0.0, 0.5) * t, rng.uniform(0.0, 2.0) * L)))
                  for t, c, k in zip(T, C, loads, strict=True)])
    J = np.array([rng.uniform(0.0, 0.1) * t if rng.random() < 0.5 else 0.0 for t in T])
    P = np.array([round(rng.uniform(0.0, t), 4) for t in T])
    return C, loads, L, T, D, J, P


def _misses(C, loads, L, T, D, J, P, horizon_s: float, rng: random.Random) -> bool:
    """edf's rules on one stream and one port, written apart from the test: the most urgent
    pending frame streams if it loads nothing, else commits onto a free stream and loads one
    load after another; a pinned frame that is the most urgent pending starts before a committed
    one; another pinned frame borrows the stream only if it ends before the committed frame's
    loads. Releases at P + k·T plus a random part of J; stream and load times a random part of
    their bounds. Whether a frame ends after its deadline."""
    releases = []
    for i in range(len(C)):
        k = 0
        while P[i] + k * T[i] < horizon_s:
            r = P[i] + k * T[i] + rng.choice((0.0, 1.0, rng.random())) * J[i]
            releases.append((r, r + D[i], i))
            k += 1
    releases.sort()
    pending: list[tuple[float, float, int]] = []        # (deadline, release, task), by deadline
    committed = None                                    # [deadline, release, task, loads left]
    stream_at = port_at = now = 0.0
    nxt = 0
    while True:
        while nxt < len(releases) and releases[nxt][0] <= now:
            r, dl, i = releases[nxt]
            heapq.heappush(pending, (dl, r, i))
            nxt += 1
        changed = True
        while changed:
            changed = False
            if committed is not None and committed[3] > 0 and port_at <= now:
                port_at = now + L * rng.choice((1.0, rng.uniform(0.5, 1.0)))
                committed[3] -= 1
                changed = True
            if stream_at > now:
                continue
            start = None
            if committed is None:
                if pending and loads[pending[0][2]] == 0:
                    start = heapq.heappop(pending)
                elif pending:
                    dl, r, i = heapq.heappop(pending)
                    committed = [dl, r, i, int(loads[i])]
                    changed = True
                    continue
            elif pending and pending[0][0] < committed[0] and loads[pending[0][2]] == 0:
                start = heapq.heappop(pending)                      # the pinned-first start
            elif committed[3] == 0 and port_at <= now:
                start, committed = (committed[0], committed[1], committed[2]), None
            else:
                ready = max(port_at, now) + committed[3] * L
                fits = [job for job in sorted(pending) if loads[job[2]] == 0 and now + C[job[2]] <= ready]
                if fits:                                            # a borrower
                    start = fits[0]
                    pending.remove(start)
                    heapq.heapify(pending)
            if start is not None:
                dl, _, i = start
                stream_at = now + C[i] * rng.choice((1.0, rng.uniform(0.5, 1.0)))
                if stream_at > dl + 1e-12:
                    return True
                changed = True
        later = [t for t in (stream_at, port_at) if t > now]
        if nxt < len(releases):
            later.append(releases[nxt][0])
        if not later:
            return False
        now = min(later)


def _check(C, loads, L, T, D, J, P, extra: float = 0.0, phased: bool = True):
    S = C + loads * L
    first = PinnedFirst(C, loads == 0)
    return release_test(S, T, D, J, P if phased else None, extra, first=first)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10**9), st.integers(1, 4))
def test_a_set_the_pinned_first_test_passes_never_misses_under_its_rule(seed, n):
    C, loads, L, T, D, J, P = _tasks(seed, n)
    check = _check(C, loads, L, T, D, J, P)
    if not check.ok or not np.isfinite(check.horizon_s):
        return
    rng = random.Random(seed)
    horizon = float(P.max()) + 3 * hyperperiod(T) + check.horizon_s
    for _ in range(4):
        assert not _misses(C, loads, L, T, D, J, P, horizon, rng), (C, loads, L, T, D, J, P)


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 10**9), st.integers(1, 4), st.floats(0.0, 2e-3))
def test_the_rule_changes_nothing_where_every_frame_loads_or_none_does(seed, n, extra):
    C, loads, L, T, D, J, _ = _tasks(seed, n)
    for same in (np.zeros_like(loads), np.maximum(loads, 1)):
        S = C + same * L
        plain = demand_check(S, T, D, J, extra)
        first = demand_check(S, T, D, J, extra, PinnedFirst(C, same == 0))
        assert first.ok == plain.ok
        assert first.slack_s == plain.slack_s or abs(first.slack_s - plain.slack_s) < 1e-12


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 10**9), st.integers(1, 4))
def test_a_pinned_frame_is_never_blocked_for_more_than_a_stream(seed, n):
    C, loads, L, T, D, J, _ = _tasks(seed, n)
    S = C + loads * L
    check = demand_check(S, T, D, J, 0.0, PinnedFirst(C, loads == 0))
    # The windows only pinned pipelines are due in: a pinned frame alone due, behind the longest stream.
    tightest = int(np.argmin(D))
    if loads[tightest] == 0 and np.isfinite(check.horizon_s):
        others = [C[j] for j in range(n) if D[j] > D[tightest]]
        dbf = np.floor((D[tightest] - D + J) / T + 1e-9) + 1.0
        due = [j for j in range(n) if D[j] <= D[tightest]]
        alone = sum(dbf[j] * S[j] for j in due) + max(others, default=0.0)
        assert check.slack_s <= D[tightest] - alone + 1e-12


def tight_pinned_workload(seed: int) -> Workload:
    """A pipeline of one stage due within its stream, the longest other stream and part of a
    load, beside two pipelines whose chains (each one stage shorter than the slots, no module in
    common) cannot all stay resident with it: the plain test charges the first the others'
    loads, the rule only their streams."""
    rng = random.Random(seed)
    plat = load_platform(rng.choice(("pynq-z2", "zcu104")))
    L, X = load_and_control(plat)
    first, *rest = rng.sample(VISION, len(VISION))
    others = []
    for i in range(2):
        chain = rest[i * len(plat.slots):(i + 1) * len(plat.slots) - 1]
        period = rng.choice((20, 40)) / 1e3
        spec = realtime_spec(f"p{i}", chain, period, period, list(rng.choice(FRAMES[:2])), plat,
                             jitter_s=round(rng.uniform(0.0, 3e-4), 5) if rng.random() < 0.5 else 0.0)
        others.append(replace(spec, offset_s=round(rng.uniform(0.0, period), 4)))
    period = rng.choice((10, 20)) / 1e3
    cam = realtime_spec("cam", [first], period, period, list(rng.choice(FRAMES[:2])), plat)
    longest = max(p.exec_s for p in others)
    cam = replace(cam, deadline_s=cam.exec_s + longest + 3 * X + rng.uniform(0.05, 0.9) * L,
                  offset_s=round(rng.uniform(0.0, period), 4))
    return Workload(Path(f"tight_{seed}.toml"), plat, seed, 0.04, (cam, *others))


def _admitted_only_under_the_rule(seed: int, tries: int = 100):
    """The first workload from ``seed`` on that the plain test refuses and the rule's admits."""
    for k in range(tries):
        workload = tight_pinned_workload(seed + k)
        if analyse(workload.pipelines, workload.platform, phased=True).ok:
            continue
        verdict = analyse_pinned_first(workload.pipelines, workload.platform, phased=True)
        if verdict.ok:
            return workload, verdict
    return None, None


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 2**31 - 1), st.integers(0, 1000))
def test_a_set_admitted_only_under_the_rule_misses_nothing_on_the_twin(seed, jitter_seed):
    workload, verdict = _admitted_only_under_the_rule(seed)
    assert workload is not None, "the generator should give sets only the rule admits"
    assert verdict.contract.pinned_first
    long = replace(workload, duration_s=0.04 * 25, seed=jitter_seed)
    engine, summary = run_workload(long, ModelBackend(long.platform), edf.EdfPolicy(), contract=verdict.contract)
    for name, p in summary["pipelines"].items():
        assert p["on_time"] == p["submitted"], (name, p)
    assert all(f.outcome is not None for f in engine.frames)


def _camera_beside_loader(seed: int):
    """A pinned task due within its stream plus another task's stream and part of its loads,
    beside a task that loads: the plain test charges the first the other's loads."""
    rng = random.Random(seed)
    L = rng.uniform(0.5e-3, 2e-3)
    T = np.array([rng.choice((10, 20, 40)) / 1e3 for _ in range(2)])
    loads = np.array([0, rng.randint(1, 2)])
    C = np.array([rng.uniform(0.5e-3, 3e-3), rng.uniform(0.2e-3, 3e-3)])
    D = np.array([C[0] + C[1] + rng.uniform(0.0, loads[1] * L), T[1]])
    J = np.array([rng.uniform(0.0, 3e-4) if rng.random() < 0.5 else 0.0 for _ in range(2)])
    P = np.array([round(rng.uniform(0.0, t), 4) for t in T])
    return C, loads, L, T, D, J, P


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10**9))
def test_a_pinned_frame_due_before_another_frames_loads_end_is_admitted_only_under_the_rule(seed):
    only = 0
    for k in range(40):
        C, loads, L, T, D, J, P = _camera_beside_loader(seed + k)
        S = C + loads * L
        rule = _check(C, loads, L, T, D, J, P, phased=False)
        assert not release_test(S, T, D, J, None, 0.0).ok
        if not rule.ok:
            continue
        only += 1
        rng = random.Random(seed + k)
        horizon = float(P.max()) + 3 * hyperperiod(T) + rule.horizon_s
        for _ in range(3):
            assert not _misses(C, loads, L, T, D, J, P, horizon, rng), (C, loads, L, T, D, J, P)
    assert only > 0


def _camera_during_a_load(first: bool):
    """On the PYNQ-Z2: a long frame holds the swap slot until just after another pipeline's
    release, so that one commits and loads; a pinned camera frame comes during the load."""
    plat = load_platform("pynq-z2")
    long = realtime_spec("long", ["erode3x3"], 0.04, 0.04, [720, 1280], plat)
    # other comes while long streams (so it commits when long ends: no prefetch for it before)
    other = replace(realtime_spec("other", ["median3x3"], 0.04, 0.04, [120, 160], plat), offset_s=long.exec_s - 0.0005)
    cam = realtime_spec("cam", ["threshold"], 0.04, 0.01, [480, 640], plat)     # ends after the load
    load_s, _ = load_and_control(plat)
    cam = replace(cam, offset_s=long.exec_s + load_s / 2)            # long ends, other loads, cam comes
    workload = Workload(Path("cam_during_load.toml"), plat, 1, 0.04, (long, other, cam))
    contract = AdmissionContract({0: "threshold"}, load_s, False, 0.0, pinned_first=first)
    engine, summary = run_workload(workload, ModelBackend(plat), edf.EdfPolicy(), contract=contract)
    stream = {(e.args or {}).get("pipeline"): e for e in engine.trace if e.track.startswith("stream")}
    loads = [e for e in engine.trace if e.track == "port" and "median3x3" in e.name]
    return engine.t0 + cam.offset_s, stream, loads, summary          # (releases count from t0)


def test_a_pinned_frame_starts_while_another_loads_only_under_the_rule():
    released, stream, loads, summary = _camera_during_a_load(first=True)
    load = next(e for e in loads if e.start < released < e.end)          # other loads when cam comes
    assert stream["cam"].start < load.end and stream["cam"].start == pytest.approx(released, abs=1e-6)
    assert stream["other"].start >= stream["cam"].end                    # and streams after it
    assert all(p["on_time"] == p["submitted"] for p in summary["pipelines"].values())
    _, plain_stream, _, _ = _camera_during_a_load(first=False)
    assert plain_stream["cam"].start >= plain_stream["other"].end        # the plain rule: behind it

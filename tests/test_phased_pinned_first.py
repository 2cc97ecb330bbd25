# ruff: noqa: N803, N806  (the analysis's names: C, S, T, D, J, P, H per task)
"""The phased check with the pinned-first rule (processor_demand.release_test with ``first``;
docs/guarantee.md, "With known phases" and "Pinned frames first") against the releases it covers,
on generated sets scaled to where it just passes: phases at whole microseconds, some pipelines
pinned (a frame that loads nothing), the others loading, jitter, and hold budgets counted as the
phased check counts them (ready jitter J + H, due D after the release).

Each set is run under non-preemptive EDF with rule 10 on one stream and one port
(``test_pinned_first_blocking._misses``, written apart from the test) for two hyperperiods past
the last first release and the look-back, frame k of pipeline i released at P_i + k T_i plus a
jitter at one end of its range or the other (every frame early, every frame late, each at either
end, anywhere), and ready once held for its whole budget or not at all: nothing may miss. A phased
check that charges the pinned-first rule one job where a frame due in the window loads admits sets
these patterns make miss.

On the bench path (``run_workload``, edf on the twin): workloads only the pinned-first rule admits
with their phases (``test_pinned_first.tight_pinned_workload``), the tight pipeline's deadline cut
to the shortest the phased test with the rule takes, with the hold budgets the contract gives,
every frame released at one end of its jitter or the other and held for its whole budget
(tests/hold_everything.py): nothing admitted misses."""

from __future__ import annotations

import logging
import random
from dataclasses import replace
from unittest.mock import patch

import numpy as np
from fpgashare.backends.model import ModelBackend
from fpgashare.catalogue.workload import PipelineSpec
from fpgashare.sched.analysis.holds import with_holds
from fpgashare.sched.analysis.phased_demand import hyperperiod
from fpgashare.sched.analysis.pinned_first import analyse_pinned_first
from fpgashare.sched.analysis.processor_demand import PinnedFirst, demand_check, release_test
from fpgashare.sched.analysis.schedulability import analyse
from fpgashare.sched.sources.periodic import run_workload
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.test_edf_holds import EdfHoldingEverything, _assert_on_time_and_within_budget
from tests.test_hold_demand_terms import _longest_busy_s
from tests.test_pinned_first import tight_pinned_workload
from tests.test_pinned_first_blocking import _misses, _one_blocker, _pinned_set

log = logging.getLogger(__name__)

JITTER = ("early", "late", "ends", "anywhere")


def _phased_set(rng: random.Random, chain: bool | None = None):
    """``_pinned_set``'s pipelines with phases at whole microseconds and (on about half the sets)
    hold budgets: a share of min(D, T - J) / 2 each, the cap holds.py keeps to (T - J) and less.
    Phases at random, or (``chain``; by default on a third of the sets) the two-blocker chain as
    phases: the longest loading pipeline first, at 0 (its frame commits and loads), the longest
    pinned one 1 µs later (it streams first where it is the more urgent), every other 1 µs after."""
    C, load, T, D, J, pinned = _pinned_set(rng)
    chain = rng.random() < 1 / 3 if chain is None else chain
    if chain:
        f, g = int(np.flatnonzero(~pinned)[np.argmax(C[~pinned] + load[~pinned])]), \
            int(np.flatnonzero(pinned)[np.argmax(C[pinned])])
        P = np.full(len(T), 2e-6)
        P[f], P[g] = 0.0, 1e-6
    else:
        P = np.array([round(rng.uniform(0.0, t) * 1e6) / 1e6 for t in T])
    H = np.zeros(len(T))
    if rng.random() < 0.5:
        H = np.array([rng.choice((0.0, 1.0, rng.random())) for _ in T]) * np.minimum(D, T - J) * 0.5
    return C, load, T, D, J, P, H, pinned


def _passes(C, load, T, D, J, P, H, pinned) -> bool:
    return bool(np.all(C + load <= D - H)) and release_test(C + load, T, D, J, P, 0.0, first=PinnedFirst(C, pinned),
                                                            hold=H).ok


def _at_the_edge(C, load, T, D, J, P, H, pinned) -> float | None:
    """The scale of ``C`` and ``load`` at which the phased test with the rule just passes, or
    None where even a set a thousand times lighter fails (its holds leave no room)."""
    lo, hi = 1e-3, 4.0
    if not _passes(C * lo, load * lo, T, D, J, P, H, pinned):
        return None
    for _ in range(16):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if _passes(C * mid, load * mid, T, D, J, P, H, pinned) else (lo, mid)
    return lo


def _jobs(T, D, J, P, H, jitter: str, held: bool, until_s: float, rng: random.Random):
    """(ready, due, task) of every frame released before ``until_s`` in the pattern named."""
    jobs = []
    for i in range(len(T)):
        k = 0
        while (a := P[i] + k * T[i]) < until_s:
            end = {"early": 0.0, "late": 1.0, "ends": float(rng.random() < 0.5), "anywhere": rng.random()}[jitter]
            r = a + end * J[i]
            jobs.append((r + (H[i] if held else 0.0), r + D[i], i))
            k += 1
    return jobs


def _edge_set_misses(seed: int, chain: bool | None = None) -> tuple[bool, dict]:
    rng = random.Random(seed)
    C, load, T, D, J, P, H, pinned = _phased_set(rng, chain)
    scale = _at_the_edge(C, load, T, D, J, P, H, pinned)
    if scale is None:
        return False, {"seed": seed, "skipped": True}
    C, load = C * scale, load * scale
    S = C + load
    block = max(float(S.max()), float(C[pinned].max() + C[~pinned].max()))
    until = float(P.max()) + 2 * hyperperiod(T) + _longest_busy_s(S, T, J + H, block) + float(D.max())
    missed = [(jitter, held) for jitter in JITTER for held in (False, True)
              if _misses(_jobs(T, D, J, P, H, jitter, held, until, rng), C, load, None)]
    only_phased = not demand_check(S, T, D, J, 0.0, PinnedFirst(C, pinned), hold=H).ok
    up = not _passes(C * 1.05, load * 1.05, T, D, J, P, H, pinned)
    return bool(missed), {"seed": seed, "missed": missed, "only_phased": only_phased, "refused_5pc_up": up,
                          "held": bool(H.any()), "C": C, "load": load, "T": T, "D": D, "J": J, "P": P, "H": H}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 2**32 - 1))
def test_a_phased_set_the_pinned_first_test_just_passes_misses_nothing(seed):
    missed, case = _edge_set_misses(seed)
    log.info("seed %d: %s", seed, {k: case.get(k) for k in ("missed", "only_phased", "refused_5pc_up", "held")})
    assert not missed, case


def test_a_phased_test_ignoring_the_second_blocker_admits_sets_these_patterns_make_miss(fresh_seed):
    """The same generator (its phases the two-blocker chain) and patterns against the variant that
    charges one job where a frame due in the window loads: from a fresh seed, some set it admits
    at its edge misses."""
    first = random.Random(fresh_seed).randrange(2**32)
    with patch.object(PinnedFirst, "blocking", _one_blocker):
        found = next((seed for seed in range(first, first + 80) if _edge_set_misses(seed, chain=True)[0]), None)
    assert found is not None, f"no set from seed {first} missed under the one-blocker variant"


def _with_deadline(workload, deadline_s: float):
    """``workload`` with its first pipeline due ``deadline_s`` after its release."""
    return replace(workload, pipelines=(replace(workload.pipelines[0], deadline_s=deadline_s),
                                        *workload.pipelines[1:]))


def _rule_only(workload, deadline_s: float):
    """The verdict of the phased test with the rule where the phased test alone refuses, else None."""
    w = _with_deadline(workload, deadline_s)
    if analyse(w.pipelines, w.platform, phased=True).ok:
        return None
    v = analyse_pinned_first(w.pipelines, w.platform, phased=True)
    return v if v.ok else None


def _edge_workload(seed: int, tries: int = 60):
    """From ``seed`` on, the first tight workload the phased test refuses and the phased test with
    the rule admits, its tight pipeline (the first) due as soon as the latter takes it (bisection),
    and its verdict with the hold budgets; (None, None) if none."""
    for k in range(tries):
        workload = tight_pinned_workload(seed + k)
        cam = workload.pipelines[0]
        if _rule_only(workload, cam.deadline_s) is None:
            continue
        lo, hi = cam.exec_s, cam.deadline_s             # refused (or plain) at lo, rule-only at hi
        for _ in range(14):
            mid = (lo + hi) / 2
            lo, hi = (lo, mid) if _rule_only(workload, mid) is not None else (mid, hi)
        w = _with_deadline(workload, hi)
        return w, with_holds(_rule_only(workload, hi), list(w.pipelines), phased=True)
    return None, None


@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 2**31 - 1), st.sampled_from(("early", "late", "ends")))
def test_workloads_only_the_rule_admits_at_the_edge_miss_nothing_on_the_twin(seed, jitter):
    workload, verdict = _edge_workload(seed)
    assert workload is not None, "the generator should give sets only the rule admits"
    assert verdict.contract.pinned_first
    rng = random.Random(seed)

    def release_s(self: PipelineSpec, index: int, _seed: int) -> float:
        end = {"early": 0.0, "late": 1.0, "ends": float(rng.random() < 0.5)}[jitter]
        return self.offset_s + index * self.period_s + end * self.jitter_s

    long = replace(workload, duration_s=0.04 * 15)
    with patch.object(PipelineSpec, "release_s", release_s):
        engine, summary = run_workload(long, ModelBackend(long.platform), EdfHoldingEverything(),
                                       contract=verdict.contract)
    log.info("seed %d, %s: deadline %.3f ms, holds %s", seed, jitter, workload.pipelines[0].deadline_s * 1e3,
             verdict.contract.holds)
    _assert_on_time_and_within_budget(engine, summary, f"seed {seed}, {jitter}")
    assert all(f.outcome is not None for f in engine.frames)

"""A longer host delay never turns a refusal into an admission (docs/guarantee.md, "The host as a
resource", operations started late): the daemon re-analyses the sets in force only when a newcomer
makes the delay *w* longer than they were analysed for, and keeps a contract made for a longer *w*
while the loop is quicker. Both rest on the daemon's analysis being monotone in the cost of an
operation (*X* + *w*: every pass and load in *S_i*, the blocking term, the transition check): a set
that fails with a shorter delay fails with every longer one.

Checked with hypothesis on generated sets (fresh seeds, printed): the daemon's recheck of a
partition's set with its pins in force (``Registrations.recheck``'s call) and a newcomer's join
(``join.join_verdict``, pins in force, the transition check), on the whole board and on a share of
the port. Where the set passes with no delay, the delay at which it stops passing is found by
bisection, and every longer delay drawn past it must refuse too."""

from __future__ import annotations

import logging
import random

import numpy as np
from fpgashare.sched.analysis.control_traffic import control_seconds
from fpgashare.sched.analysis.join import join_verdict
from fpgashare.sched.analysis.schedulability import analyse, load_seconds
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from benchmarks.workload_gen import random_workload

log = logging.getLogger(__name__)

LONGEST_S = 5e-3                   #: the delays tried: up to this, more than any R a daemon grants


def _verdicts(seed: int, share: int):
    """(passes(delay) for the recheck, the same for the join) on one generated set."""
    workload = random_workload(seed, dnn=False, max_s=1.0)
    platform = workload.platform
    pipes = [p for p in workload.pipelines if p.realtime]
    base = {"port_share": share, "board_load_s": load_seconds(platform), "check_ddr": False}
    x = control_seconds(platform)
    # The set in force: the pipelines a daemon would have taken one by one with no delay; the
    # newcomer: the first it would take after them (else the last drawn), so most sets sit near
    # where the delay decides.
    before, first = [], None
    for p in pipes[:-1]:
        v = analyse([*before, p], platform, few_pins=True, afford_change=True, control_s=x, **base)
        if v.ok:
            before, first = [*before, p], v
    pinned = dict(first.contract.pinned) if first is not None else {}
    loads = dict(first.plan.loads) if first is not None and first.plan is not None else {p.name: 0 for p in before}

    def join_of(newcomer, delay: float) -> bool:
        _, _, why = join_verdict(before, loads, newcomer, platform, pinned, {**base, "control_s": x + delay}, share)
        return why is None

    rest = [p for p in pipes if p not in before]
    newcomer = next((p for p in rest if join_of(p, 0.0)), rest[-1] if rest else pipes[-1])
    everyone = [*before, newcomer] if newcomer not in before else before

    def recheck(delay: float) -> bool:
        return analyse(everyone, platform, keep_pinned=pinned, few_pins=True, afford_change=True,
                       control_s=x + delay, **base).ok

    def join(delay: float) -> bool:
        return join_of(newcomer, delay)

    return recheck, join


def _monotone(passes, rng: random.Random) -> tuple[bool, float | None]:
    """Whether ``passes`` never turns True past a delay where it was False: (ok, the edge found)."""
    if not passes(0.0):
        return all(not passes(rng.uniform(0.0, LONGEST_S)) for _ in range(3)), None
    if passes(LONGEST_S):
        return True, None
    lo, hi = 0.0, LONGEST_S                 # passes at lo, fails at hi
    for _ in range(12):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if passes(mid) else (lo, mid)
    beyond = [hi + (hi - lo) * 0.5, hi * 1.001, hi * 1.05, rng.uniform(hi, LONGEST_S),
              *np.linspace(hi, LONGEST_S, 12)]
    return all(not passes(d) for d in beyond), hi


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 2**32 - 1), st.sampled_from([1, 2]))
# A set refused from 2.15 to 2.7 ms and admitted again from 2.75 ms: only the first 12 feasible pin
# sets were tried, and the longer delay made three of those before its one passing set infeasible.
@example(seed=11878470, share=2)
def test_a_longer_host_delay_never_admits_what_a_shorter_one_refused(seed, share):
    rng = random.Random(seed)
    recheck, join = _verdicts(seed, share)
    for name, passes in (("recheck", recheck), ("join", join)):
        ok, edge = _monotone(passes, rng)
        log.info("seed %d, port share %d, %s: edge %s", seed, share, name, edge)
        assert ok, f"seed {seed}, share {share}: the {name} refuses at a delay and admits at a longer one"

# ruff: noqa: N803, N806  (the analysis keeps the papers' names: S, T, D, J per task, L, X, P)
"""A frame committed before its known release: its loads in the time before it arrives.

Where the frames' phases are known (``analyse(phased=True)``: a workload run as written), a
frame's nominal release *a* is known long before it comes, and it arrives at *r* in [a, a + J].
Under the plain rules its job (its ``n`` loads, then its stream) can start only at *r*, so the test
charges its loads inside its window although the port is often idle just before *a*.

An *early* pipeline's frame is instead pending, for edf, from ``a − δ`` on, due by ``a + D`` (its
earliest deadline), with ``δ = min(n·L − J, O)`` (``O`` its offset: never before the registration
window ends); it commits as any pending frame does (rules 1-4 of docs/guarantee.md) and streams
once it has arrived. Its job is still at most ``S = C + X + n·L`` long: committed at σ ≥ a − δ, its
loads take at most ``n·L`` and it streams from max(its loads' end, r), with
``r − σ ≤ a + J − (a − δ) = J + δ ≤ n·L``. So the set is the plain model with that pipeline's
frames released exactly at ``a − δ`` (no jitter) and due ``D + δ`` after it: the same test, on
shifted phases (docs/guarantee.md, "Frames committed before their release").

An evictor (runtime/sched/analysis/evicting_pins.py) counts only its own loads in ``n``, not its
put-back, which follows its stream as before. Only single-pass pipelines with no stage on the CPU,
whose loads outlast their jitter, and only where the plain (or evicting) test refuses; every
subset of such pipelines is tried (fewest first), so a set the other tests admit keeps its
contract and dispatch.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np
from fpgashare.catalogue.workload import PipelineSpec
from fpgashare.sched.analysis.processor_demand import DemandCheck, release_test

#: Most subsets of pipelines tried for one pin set (2^5 - 1 covers five pipelines).
MAX_SUBSETS = 31


def early_shifts(pipelines: Sequence[PipelineSpec], loads: dict[str, int], load_s: float,
                 J: np.ndarray) -> np.ndarray:
    """Per pipeline, how long before its earliest release its frame may commit (0: it may not):
    ``min(n·L − J, O)`` for a single-pass pipeline with no CPU stage whose ``n`` loads outlast its
    jitter, else 0."""
    out = np.zeros(len(pipelines), dtype=np.float64)
    for i, p in enumerate(pipelines):
        if len(p.pass_seconds) != 1 or p.cpu_before or p.cpu_before_s or p.cpu_after or p.cpu_after_s:
            continue
        out[i] = max(0.0, min(loads[p.name] * load_s - float(J[i]), p.offset_s))
    return out


def shifted(D: np.ndarray, J: np.ndarray, P: np.ndarray, shift: np.ndarray) -> tuple[np.ndarray, ...]:
    """The shifted model (module docstring): ``(D, J, P)`` with each shifted pipeline released
    ``shift`` earlier, without jitter, due ``shift`` later."""
    on = shift > 0.0
    return D + shift, np.where(on, 0.0, J), P - shift


def search(S: np.ndarray, T: np.ndarray, D: np.ndarray, J: np.ndarray, P: np.ndarray, X: float,
           early: np.ndarray, one_job: np.ndarray,
           tail: np.ndarray | None = None) -> tuple[DemandCheck, np.ndarray] | None:
    """The first subset of the pipelines ``early`` allows (fewest first) under which the shifted
    model passes the test, with its shifts; None if none does. ``tail``: per task, the part of its
    job after its frame ends (an evictor's put-back: ``processor_demand``)."""
    chosen = [i for i in range(S.size) if early[i] > 0.0]
    tried = 0
    for k in range(1, len(chosen) + 1):
        for subset in itertools.combinations(chosen, k):
            tried += 1
            if tried > MAX_SUBSETS:
                return None
            shift = np.zeros_like(S)
            shift[list(subset)] = early[list(subset)]
            D2, J2, P2 = shifted(D, J, P, shift)
            check = release_test(S, T, D2, J2, P2, X, most_slack=False, tail=tail, one_job=one_job)
            if check.ok:
                return check, shift
    return None

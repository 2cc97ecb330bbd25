"""A side load for a pending frame is not made when a more urgent frame certainly comes first and
evicts it (runtime/sched/policies/edf_loads.py, ``overtaken``): on a generated workload edf then
loads less in its steady state, and it never skips a load whose module survives until its frame."""

from __future__ import annotations

import pytest
from fpgashare.cli.bench import run_one
from fpgashare.sched.limits import steady_loads
from fpgashare.sched.limits.bench_limits import run_misses
from fpgashare.sched.policies import edf
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchmarks.limit_gap import small_workload

#: A generated workload (limit_gap's generator): PYNQ-Z2 with no pins, a loose-deadline two-stage
#: frame pending under a long frame while a tight two-stage frame is released before that one ends.
EXAMPLE_SEED = 731127


def _run(seed: int, monkeypatch, skip: bool = True):
    """edf on the workload (six hyperperiods); each skipped side load: (time, frame, module)."""
    skipped = []
    real = edf.overtaken

    def recording(engine, frame, module):
        out = real(engine, frame, module) if skip else False
        if out:
            skipped.append((engine.now, frame, module))
        return out

    monkeypatch.setattr(edf, "overtaken", recording)
    engine, result = run_one(steady_loads.steady_workload(small_workload(seed)), "edf", "model",
                             check_rejected=False)
    return engine, result, skipped


def check_skipped(engine, skipped) -> None:
    """Every skipped load's module was loaded again, after the skip, for the frame it was skipped
    for, and some other frame started between the skip and that frame (the one that overtook it)."""
    for now, frame, module in skipped:
        if frame.start is None:
            continue              # dropped or the run ended: nothing to compare
        reload = [e for e in engine.trace if e.track == "port" and e.name.startswith(f"load {module} ")
                  and now <= e.start <= frame.start]
        assert reload, f"{frame.key} ran on {module} without the load skipped at {now}"
        between = [f for f in engine.frames if f is not frame and f.start is not None and now <= f.start < frame.start]
        assert between, f"nothing overtook {frame.key}"


def test_a_side_load_a_more_urgent_frame_would_evict_is_not_made(monkeypatch):
    engine, result, skipped = _run(EXAMPLE_SEED, monkeypatch)
    assert skipped and not run_misses(result)
    check_skipped(engine, skipped)
    _, without, none = _run(EXAMPLE_SEED, monkeypatch, skip=False)
    assert not none and not run_misses(without)
    assert result["totals"]["reconfigurations"] < without["totals"]["reconfigurations"]


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10**9))
def test_skipped_side_loads_are_made_again_later_and_nothing_misses(seed):
    with pytest.MonkeyPatch.context() as monkeypatch:
        engine, result, skipped = _run(seed, monkeypatch)
    assert not run_misses(result)
    check_skipped(engine, skipped)

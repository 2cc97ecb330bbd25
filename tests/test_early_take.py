"""An evictor takes its pinned slot under the job before it (runtime/sched/policies/early_take.py):
the load is hidden under that job, the evictor starts when the job ends, the pin goes back after it,
and admitted pipelines never miss."""

from __future__ import annotations

import pytest
from fpgashare.catalogue.workload import Workload
from fpgashare.cli.bench import run_one
from fpgashare.sched.limits.bench_limits import run_misses
from fpgashare.sched.policies import edf
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchmarks.limit_gap import rephased, small_workload

#: A generated workload (limit_gap's generator) where an evictor's load into a pinned slot can hide
#: under the job before it: PYNQ-Z2, one chain holds the pins, another needs a module beside one pin.
EXAMPLE_SEED = 1570848632


def around(seed: int) -> Workload:
    """The example's pipelines with offsets and jitter drawn from ``seed`` (``rephased``):
    the phasings where an evictor comes while the job before it streams vary."""
    return rephased(small_workload(EXAMPLE_SEED), seed)


def _run(workload: Workload | int, monkeypatch, take: bool = True):
    takes = []
    real = edf.early_take

    def recording(engine, frame, chosen, missing):
        out = real(engine, frame, chosen, missing) if take else None
        if out is not None:
            takes.append((engine.now, engine.foresight.stream_job_end(), out))
        return out

    monkeypatch.setattr(edf, "early_take", recording)
    if isinstance(workload, int):
        workload = small_workload(workload)
    engine, result = run_one(workload, "edf", "model", check_rejected=False)
    return engine, result, takes


def check_takes(engine, takes) -> None:
    """Each take's load ends under the job before it, the evictor starts when that job ends, and
    its pin goes back after it, as a put-back."""
    loads = [e for e in engine.trace if e.track == "port"]
    for now, end, take in takes:
        load = next(e for e in loads if abs(e.start - now) < 1e-12)
        assert load.name == f"load {take.module} -> slot {take.into}" and load.end <= end + 1e-12
        job = next(e for e in engine.trace if e.track.startswith("stream") and e.name.startswith(
            f"{take.frame.pipeline.name}/{take.frame.index}"))
        assert job.start == take.frame.start >= end - 1e-12
        back = [e for e in loads if e.start >= job.end - 1e-12 and e.name == f"load {take.pin} -> slot {take.into}"]
        assert not back or back[0].args["reason"] == "pin"
        assert back or job.end >= engine.end_s - 1e-9, "the pin never went back"


def test_an_evictors_load_hides_under_the_job_before_it(monkeypatch):
    engine, result, takes = _run(EXAMPLE_SEED, monkeypatch)
    assert takes and not run_misses(result)
    check_takes(engine, takes)
    _, without, none = _run(EXAMPLE_SEED, monkeypatch, take=False)
    assert not none and not run_misses(without)
    assert result["totals"]["stalled_reconfig_s"] < without["totals"]["stalled_reconfig_s"]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10**9))
def test_admitted_pipelines_never_miss_with_early_takes(seed):
    with pytest.MonkeyPatch.context() as monkeypatch:
        engine, result, takes = _run(around(seed), monkeypatch)
    assert not run_misses(result), f"seed {seed}"
    check_takes(engine, takes)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10**9))
def test_admitted_pipelines_never_miss_on_limit_gaps_workloads(seed):
    _, result = run_one(small_workload(seed), "edf", "model", check_rejected=False)
    assert not run_misses(result), f"seed {seed}"


def test_takes_happen_on_the_examples_phasings(monkeypatch):
    """The property above is not vacuous: some drawn phasings take early (a handful in 40)."""
    assert any(_run(around(seed), monkeypatch)[2] for seed in range(40))

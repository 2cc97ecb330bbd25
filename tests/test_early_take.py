"""An evictor takes its pinned slot under the job before it (runtime/sched/policies/early_take.py):
the load is hidden under that job, the evictor starts when the job ends, the pin goes back after it,
and admitted pipelines never miss."""

from __future__ import annotations

from fpgashare.cli.bench import run_one
from fpgashare.sched.limits.bench_limits import run_misses
from fpgashare.sched.policies import edf
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchmarks.limit_gap import small_workload

#: A generated workload (limit_gap's generator) where an evictor's load into a pinned slot can hide
#: under the job before it: PYNQ-Z2, one chain holds the pins, another needs a module beside one pin.
EXAMPLE_SEED = 1570848632


def _run(seed: int, monkeypatch, take: bool = True):
    takes = []
    real = edf.early_take

    def recording(engine, frame, chosen, missing):
        out = real(engine, frame, chosen, missing) if take else None
        if out is not None:
            takes.append((engine.now, engine.foresight.stream_job_end(), out))
        return out

    monkeypatch.setattr(edf, "early_take", recording)
    engine, result = run_one(small_workload(seed), "edf", "model", check_rejected=False)
    return engine, result, takes


def test_an_evictors_load_hides_under_the_job_before_it(monkeypatch):
    engine, result, takes = _run(EXAMPLE_SEED, monkeypatch)
    assert takes and not run_misses(result)
    loads = [e for e in engine.trace if e.track == "port"]
    for now, end, take in takes:
        load = next(e for e in loads if abs(e.start - now) < 1e-12)
        assert load.name == f"load {take.module} -> slot {take.into}" and load.end <= end + 1e-12
        job = next(e for e in engine.trace if e.track.startswith("stream") and e.name.startswith(
            f"{take.frame.pipeline.name}/{take.frame.index}"))
        assert job.start == take.frame.start >= end - 1e-12      # it starts when the job before it ends
        back = [e for e in loads if e.start >= job.end - 1e-12 and e.name == f"load {take.pin} -> slot {take.into}"]
        assert back and back[0].args["reason"] == "pin"           # the pin goes back after it
    _, without, none = _run(EXAMPLE_SEED, monkeypatch, take=False)
    assert not none and not run_misses(without)
    assert result["totals"]["stalled_reconfig_s"] < without["totals"]["stalled_reconfig_s"]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10**9))
def test_admitted_pipelines_never_miss_with_early_takes(seed):
    _, result = run_one(small_workload(seed), "edf", "model", check_rejected=False)
    assert not run_misses(result), f"seed {seed}"

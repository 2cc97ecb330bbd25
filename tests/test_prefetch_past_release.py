"""A prefetch that ends after a release (runtime/sched/policies/guard.py, ``port_free_for_others_s``;
docs/guarantee.md, rule 3): allowed only where every frame released while it runs has all its
stages pinned (every pin in its slot) or counts on the module it loads; on generated workloads the
frames it serves wait less for the port, and no admitted frame misses."""

from __future__ import annotations

from collections import Counter

import pytest
from fpgashare.catalogue.workload import Workload
from fpgashare.cli.bench import run_one
from fpgashare.sched.limits import steady_loads
from fpgashare.sched.limits.bench_limits import run_misses
from fpgashare.sched.policies import guard
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from benchmarks.limit_gap import rephased, small_workload

#: A generated workload (limit_gap's generator) where the port idles between a frame's end and the
#: release of a frame needing a load, with a fully pinned pipeline's frame released in between:
#: PYNQ-Z2, one pin.
EXAMPLE_SEED = 731001


def around(seed: int) -> Workload:
    """The example's pipelines with offsets and jitter drawn from ``seed`` (``rephased``):
    the phasings where a release falls inside the idle gap vary."""
    return rephased(small_workload(EXAMPLE_SEED), seed)


def _run(workload: Workload, monkeypatch, past: bool = True):
    """edf on ``workload`` (six hyperperiods), recording each prefetch the new rule allowed:
    (start, module, pins, the pipelines of the partition that made it); ``past=False``: the rule
    off (every release bounds a load)."""
    allowed = []
    real = guard.port_free_for_others_s

    def recording(engine, module):
        out = real(engine, module) if past else engine.foresight.earliest_release_s()
        end = engine.now + engine.port.longest_load_s()
        if end > engine.foresight.earliest_release_s() and end <= out:
            allowed.append((engine.now, module, Counter(engine.contract.pinned.values()),
                            {p.name for p in engine.pipelines}))
        return out

    monkeypatch.setattr(guard, "port_free_for_others_s", recording)
    engine, result = run_one(steady_loads.steady_workload(workload), "edf", "model", check_rejected=False)
    return engine, result, allowed


def _fully_pinned(pipeline, pins: Counter) -> bool:
    return all(c <= pins[m] for counts in pipeline.pass_module_counts for m, c in counts.items())


def check_allowed(engine, allowed) -> None:
    """Each allowed prefetch was made, and every frame of its partition that came while it ran is
    fully pinned or uses the module it loaded (one pass). The rule is about the partition's own
    frames: on a board cut into partitions (several streams) another partition's frame may wait
    for the shared port for one load of each other partition, whatever that load is for, and its
    analysis charges that (runtime/sched/board/port_share.py)."""
    loads = [e for e in engine.trace if e.track == "port"]
    for now, module, pins, partition in allowed:
        load = next((e for e in loads if abs(e.start - now) < 1e-12 and e.name.startswith(f"load {module} ")), None)
        if load is None:
            continue            # allowed by the guard, then not chosen (the victim or the play-out changed)
        assert load.args["reason"] == "prefetch"
        came = [f for f in engine.frames if now < f.release < load.end and f.pipeline.name in partition]
        for frame in came:
            p = frame.pipeline
            assert _fully_pinned(p, pins) or (len(p.pass_stages) == 1 and module in p.modules), \
                f"{frame.key} came at {frame.release} while {module} loaded for another"


def test_a_prefetch_past_a_pinned_release_shortens_the_wait(monkeypatch):
    engine, result, allowed = _run(small_workload(EXAMPLE_SEED), monkeypatch)
    assert not run_misses(result)
    made = [a for a in allowed if any(e.track == "port" and abs(e.start - a[0]) < 1e-12 for e in engine.trace)]
    assert made, "no prefetch ended after a release"
    check_allowed(engine, allowed)
    _, without, none = _run(small_workload(EXAMPLE_SEED), monkeypatch, past=False)
    assert not none and not run_misses(without)
    assert result["totals"]["stalled_reconfig_s"] < without["totals"]["stalled_reconfig_s"]
    assert result["totals"]["reconfigurations"] == without["totals"]["reconfigurations"]


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10**9))
@example(1396)   # two partitions: the other one's fast9 frame came during this one's threshold prefetch
def test_admitted_pipelines_never_miss_with_prefetches_past_releases(seed):
    with pytest.MonkeyPatch.context() as monkeypatch:
        workload = around(seed) if seed % 2 else small_workload(seed)
        engine, result, allowed = _run(workload, monkeypatch)
    assert not run_misses(result)
    check_allowed(engine, allowed)

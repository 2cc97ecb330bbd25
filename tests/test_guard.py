"""The guard's rule for loads that serve no committed frame (runtime/sched/policies/guard.py,
docs/guarantee.md rule 3): a load it allows is hidden under the job on the stream, ends by the
earliest possible next release, or is the contract's one idle load, started while no real-time
frame waits or streams (so it can straddle the start of a busy window only once); a prefetch may
also end by the next release of a frame that could wait for it (tests/test_prefetch_past_release.py). Checked on
generated engine states, and on the states of edf runs of generated workloads."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace
from unittest.mock import patch

from fpgashare.backends.model import ModelBackend
from fpgashare.sched.analysis.admission import admit
from fpgashare.sched.policies import backfill, edf, edf_loads, guard
from fpgashare.sched.policies.edf import EdfPolicy
from fpgashare.sched.sources.periodic import run_workload
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchmarks.workload_gen import random_workload

TIMES = st.floats(0.0, 1.0, allow_nan=False)


def _engine(now, t0, load_s, stream_end, release, pending, passes, streaming, idle_loads, committed,
            loads_after_t0, port_free):
    """A view with only what ``side_load_allowed`` reads."""
    return SimpleNamespace(
        now=now, t0=t0, committed=object() if committed else None, loads_after_t0=loads_after_t0,
        pending=[object()] if pending else [], running={"p0/0": object()} if streaming else {},
        contract=SimpleNamespace(idle_loads=idle_loads),
        port=SimpleNamespace(free=lambda: port_free, load_seconds=lambda slot: load_s),
        foresight=SimpleNamespace(stream_job_end=lambda: stream_end, earliest_release_s=lambda: release,
                                  next_passes=lambda: [object()] if passes else []))


def _kind(engine, end: float) -> str:
    """Why a load ending at ``end`` delays nothing the analysis does not count, or "" if nothing does."""
    stream_end = engine.foresight.stream_job_end()
    if stream_end is not None and end <= stream_end:
        return "hidden"
    if end <= engine.foresight.earliest_release_s():
        return "before the next release"
    if engine.contract.idle_loads and not engine.pending and not engine.running:
        return "the idle load"
    return ""


@settings(max_examples=400, deadline=None)
@given(now=TIMES, t0=TIMES, load_s=st.floats(1e-4, 0.2), stream_end=st.none() | TIMES, release=TIMES,
       pending=st.booleans(), passes=st.booleans(), streaming=st.booleans(), idle_loads=st.booleans(),
       committed=st.booleans(), loads_after_t0=st.booleans(), port_free=st.booleans())
def test_an_allowed_load_is_hidden_ends_by_the_next_release_or_is_the_idle_load_of_a_quiet_stream(
        now, t0, load_s, stream_end, release, pending, passes, streaming, idle_loads, committed,
        loads_after_t0, port_free):
    engine = _engine(now, t0, load_s, stream_end, release, pending, passes, streaming, idle_loads, committed,
                     loads_after_t0, port_free)
    allowed = guard.side_load_allowed(engine, 0)
    if allowed:
        assert not committed and port_free and (loads_after_t0 or now < t0)
        assert _kind(engine, now + load_s)
        if streaming:   # under a real-time frame: never the budgeted idle load
            assert _kind(engine, now + load_s) != "the idle load"
    elif not committed and port_free and (loads_after_t0 or now < t0) and not pending and not passes:
        assert not _kind(engine, now + load_s)     # and nothing it may start is refused


def _checked_guard(seen: list):
    """``side_load_allowed`` that records, for each load it allows while a real-time frame streams,
    whether that load is hidden, ends by the next release, or is a prefetch that ends by the next
    release of a frame that could wait for it (tests/test_prefetch_past_release.py checks those)."""
    def allowed(engine, slot, module=None):
        ok = guard.side_load_allowed(engine, slot, module)
        if ok and engine.running:
            end = engine.now + engine.port.load_seconds(slot)
            stream_end = engine.foresight.stream_job_end()
            seen.append((stream_end is not None and end <= stream_end)
                        or end <= engine.foresight.earliest_release_s()
                        or (module is not None and end <= guard.port_free_for_others_s(engine, module)))
        return ok
    return allowed


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 2**31 - 1))
def test_under_a_streaming_frame_edf_queues_no_straddling_side_load(seed):
    workload = random_workload(seed, max_s=0.6, dnn=True)
    admission = admit(workload)
    kept = {p.name for p in admission.admitted}
    admitted = replace(workload, pipelines=tuple(p for p in workload.pipelines if not p.realtime or p.name in kept))
    contract = replace(admission.contract, idle_loads=True)   # the budget the rule is about
    seen: list[bool] = []
    checked = _checked_guard(seen)
    with patch.object(edf, "side_load_allowed", checked), patch.object(edf_loads, "side_load_allowed", checked), \
            patch.object(backfill, "side_load_allowed", checked):
        run_workload(admitted, ModelBackend(workload.platform), EdfPolicy(), contract=contract)
    assert all(seen)

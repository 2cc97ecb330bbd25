"""Pin lends (runtime/sched/policies/pin_lend.py): edf lends pinned slots to the DNN only inside
an idle gap, and every lent pin is back in its slot before the next release, so admitted frames
still never miss. Checked on generated workloads with a DNN, run for many hyperperiods with jitter."""

from __future__ import annotations

import random
from dataclasses import replace

from fpgashare.cli.bench import run_one
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks.limit_gap import small_workload

HYPERPERIODS = 10


def dnn_workload(seed: int):
    """The first of ``limit_gap``'s small workloads from ``seed`` on that has a DNN pipeline."""
    rng = random.Random(seed)
    for _ in range(200):
        w = small_workload(rng.randrange(2**31))
        if any(not p.realtime for p in w.pipelines):
            return replace(w, duration_s=w.duration_s * HYPERPERIODS)
    raise AssertionError("no DNN workload drawn")


def nominal_releases(engine) -> list[float]:
    out = []
    for p in engine.pipelines:
        t = engine.t0 + p.offset_s
        while t < engine.end_s + p.period_s:
            out.append(t)
            t += p.period_s
    return sorted(out)


@settings(max_examples=12, deadline=None)
@given(st.integers(0, 2**31 - 1))
def test_lent_pins_are_back_before_the_next_release_and_nothing_misses(seed):
    workload = dnn_workload(seed)
    engine, result = run_one(workload, "edf", "model", check_rejected=False, streams=1)
    late = {n: p["late"] + p["dropped"] + p["errors"] for n, p in result["pipelines"].items()}
    assert not any(late.values()), late
    pinned = {int(k): v for k, v in result["contract"]["pinned"].items()}
    releases = nominal_releases(engine)
    loads = sorted((e for e in engine.trace if e.track == "port"), key=lambda e: e.start)
    for i, e in enumerate(loads):
        slot = int(e.name.rsplit(" ", 1)[1])
        if not e.name.startswith("load dnn_tile ") or slot not in pinned or e.start < engine.t0:
            continue
        # A tile into a pinned slot: the pin's reload into that slot ends before the first
        # release after the tile's load began.
        due = next((t for t in releases if t > e.start), float("inf"))
        back = next((b for b in loads[i + 1:] if b.name == f"load {pinned[slot]} -> slot {slot}"), None)
        assert back is not None or due > engine.end_s, (e, due)
        if back is not None:
            assert back.end <= due + 1e-9, (e, back, due)

"""Pin lends (runtime/sched/policies/pin_lend.py): edf lends pinned slots to the DNN only inside
an idle gap, and every lent pin is back in its slot before the next release, so admitted frames
still never miss. Checked on generated workloads with a DNN, run for many hyperperiods with jitter."""

from __future__ import annotations

import random
from dataclasses import replace

from fpgashare.cli.bench import run_one
from hypothesis import given, note, settings
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


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 2**31 - 1))
def test_lent_pins_are_back_before_the_next_release_and_nothing_misses(seed):
    workload = dnn_workload(seed)
    engine, result = run_one(workload, "edf", "model", check_rejected=False, streams=1)
    late = {n: p["late"] + p["dropped"] + p["errors"] for n, p in result["pipelines"].items()}
    assert not any(late.values()), late
    releases = nominal_releases(engine)
    loads = sorted((e for e in engine.trace if e.track == "port"), key=lambda e: e.start)
    lends = 0
    for e in loads:
        if e.args.get("reason") != "dnn-pin":
            continue
        # A tile into a pinned slot: the next load into that slot puts back the pin it held (the
        # load before), and ends before the first release after the lend began.
        lends += 1
        slot = e.name.rsplit(" ", 1)[1]
        into = [b for b in loads if b.name.endswith(f"-> slot {slot}")]
        k = into.index(e)
        pin = into[k - 1].name.split(" ")[1]
        due = next((t for t in releases if t > e.start + 1e-9), float("inf"))   # (one at e.start came first)
        back = into[k + 1] if k + 1 < len(into) else None
        if back is None:
            assert due > engine.end_s, (e, due)
            continue
        assert back.name == f"load {pin} -> slot {slot}", (e, back)
        assert back.end <= due + 1e-9, (e, back, due)
    note(f"pin lends: {lends}")

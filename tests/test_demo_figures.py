"""The demo's figures from a trace alone: the real-time passes recovered with the modules their
slots held, and the fewest loads for their order a floor under any schedule that produced the
trace (here an LRU one on generated chains)."""

from __future__ import annotations

from collections import Counter

from fpgashare.cli.demo_figures import load_figures, realtime_passes
from fpgashare.sched.core.jobs import TraceEvent
from hypothesis import given, settings
from hypothesis import strategies as st

MODULES = [f"m{k}" for k in range(7)]
LOAD_S, PASS_S = 1.0, 0.25


def lru_trace(jobs: list[tuple[str, list[str]]], slots: int, dnn_lends: list[int]) -> tuple[list[TraceEvent], int]:
    """A one-stream LRU schedule of ``jobs`` (pipeline, modules) on ``slots`` empty slots, loading
    what each pass lacks, then streaming it; a lend of slot s to the DNN (a ``dnn`` load and a batch)
    before the jobs whose index is in ``dnn_lends``. Returns its trace and its load count."""
    held: dict[int, str] = {}
    used: dict[int, float] = {}
    trace, t, loads = [], 0.0, 0

    def load(slot: int, module: str, reason: str) -> None:
        nonlocal t, loads
        trace.append(TraceEvent("port", f"load {module} -> slot {slot}", t, t + LOAD_S, {"ok": True, "reason": reason}))
        t += LOAD_S
        held[slot], loads = module, loads + 1

    for k, (name, modules) in enumerate(jobs):
        if k in dnn_lends:
            slot = min(range(slots), key=lambda s: used.get(s, -1.0))
            load(slot, "dnn_tile", "dnn")
            trace.append(TraceEvent(f"slot {slot}", "digits x1", t, t + PASS_S, {"pipeline": "digits"}))
            used[slot] = t
            t += PASS_S
        mine: list[int] = []
        for module in modules:
            slot = next((s for s, m in held.items() if m == module and s not in mine), None)
            if slot is None:
                slot = min((s for s in range(slots) if s not in mine), key=lambda s: used.get(s, -1.0))
                load(slot, module, "demand")
            mine.append(slot)
        for slot in mine:
            trace.append(TraceEvent(f"slot {slot}", f"{name}/{k}", t, t + PASS_S, {"pipeline": name}))
            used[slot] = t
        trace.append(TraceEvent("stream 0", f"{name}/{k}", t, t + PASS_S, {"pipeline": name}))
        t += PASS_S
    return trace, loads


chains = st.lists(st.sampled_from(MODULES), min_size=1, max_size=3, unique=True)


@settings(max_examples=60, deadline=None)
@given(st.lists(chains, min_size=1, max_size=4), st.data(), st.integers(3, 4))
def test_passes_come_back_in_order_and_the_floor_is_below_the_schedule(pipelines, data, slots):
    names = [f"p{i}" for i in range(len(pipelines))]
    order = data.draw(st.lists(st.integers(0, len(pipelines) - 1), min_size=1, max_size=30))
    jobs = [(names[i], pipelines[i]) for i in order]
    lends = data.draw(st.sets(st.integers(0, len(jobs) - 1), max_size=3))
    trace, loads = lru_trace(jobs, slots, sorted(lends))
    passes = realtime_passes(trace, names)
    assert [Counter(p.modules) for p in passes] == [Counter(m) for _, m in jobs]
    figures = load_figures(trace, slots, names)
    assert figures["loads_for_dnn"] == len(lends)
    distinct = len({m for _, chain in jobs for m in chain})
    assert distinct <= figures["loads_order_floor"] <= loads - len(lends)


def test_a_pass_on_a_slot_never_loaded_has_no_floor():
    trace = [TraceEvent("slot 0", "p/0", 0.0, 1.0, {"pipeline": "p"})]
    assert realtime_passes(trace, ["p"]) is None
    assert load_figures(trace, 4, ["p"])["loads_order_floor"] is None

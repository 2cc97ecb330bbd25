"""Replacement over copies: a module a chain uses k times is k items, each with its own next need.

edf ranks a slot's copy by the next need of the copy it would lose (``SlotManager.evict_key``
with ``NeedOrder.copies``); the baselines keep ranking every copy by the module's first need. On
one stream, with the future known, the engine's victims then load exactly as few as Belady's MIN
over items (``runtime/sched/limits/belady.py``, the floor ``limit_gap`` holds runs to).
"""

from __future__ import annotations

from fpgashare.backends import make_backend
from fpgashare.catalogue.platform import load_platform
from fpgashare.catalogue.workload import realtime_spec
from fpgashare.sched.core.demand import Demand, NeedOrder
from fpgashare.sched.core.slots import SlotManager, SlotState
from fpgashare.sched.limits.belady import Ran, belady_loads
from hypothesis import given, settings
from hypothesis import strategies as st

PLATFORM = load_platform("zcu104")
#: Modules every slot of the platform can hold (Belady's floor ignores compatibility).
ANYWHERE = sorted(m for m in ("conv3x3", "sobel_mag", "threshold", "downscale2x", "erode3x3", "dilate3x3")
                  if all(s.name in PLATFORM.module(m).slots for s in PLATFORM.slots))

#: Stages for chains: four of them are conv3x3 with other kernels, so a chain may use it up to four times.
STAGES = ["gauss3x3", "box3x3", "sharpen3x3", "laplacian3x3", "sobel_mag", "threshold", "erode3x3", "dilate3x3"]


def _run(jobs: list[list[str]], copies: bool) -> int:
    """Loads of ``jobs`` run one after another, each load's victim the SlotManager's, the future
    known exactly (the jobs still to come)."""
    slots = SlotManager(make_backend("model", PLATFORM), "belady")
    loads, t = 0, 0.0
    for i, job in enumerate(jobs):
        future = NeedOrder(jobs[i:], copies=copies)
        used: set[int] = set()
        for module in job:
            have = next((s for s in slots.ready_with(module) if s not in used), None)
            if have is None:
                have = slots.victim(module, future, keep=used)
                assert have is not None
                slots.request(have, module)
                slots.start_next(t)
                slots.finish(t + 0.5)
                loads += 1
                t += 1.0
            used.add(have)
    return loads


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.sampled_from(ANYWHERE), min_size=1, max_size=len(PLATFORM.slots)), min_size=1,
                max_size=14))
def test_victims_over_copies_load_as_few_as_belady_over_items(jobs):
    order = [Ran(float(i), i + 0.5, float(i), tuple(job)) for i, job in enumerate(jobs)]
    floor = belady_loads(order, len(PLATFORM.slots))
    assert _run(jobs, copies=True) == floor
    assert _run(jobs, copies=False) >= floor


def test_a_surplus_copy_goes_before_a_module_needed_later():
    """Two conv3x3 copies held, no chain using two: the spare copy is the victim, not a module the
    next chain needs (ranked by the module's first need, the copy looked needed first)."""
    slots = SlotManager(make_backend("model", PLATFORM), "belady")
    for i, module in enumerate(["conv3x3", "conv3x3", "sobel_mag", "threshold"]):
        slots.request(i, module)
        slots.start_next(float(i))
        slots.finish(i + 0.5)
    future = [["conv3x3"], ["sobel_mag"], ["threshold"]]
    assert slots.slots[slots.victim("erode3x3", NeedOrder(future, copies=True))].module == "conv3x3"
    assert slots.slots[slots.victim("erode3x3", NeedOrder(future))].module == "threshold"
    assert all(s.state is SlotState.READY for s in slots.slots)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(st.lists(st.sampled_from(STAGES), min_size=1, max_size=4, unique=True), st.integers(1, 9),
                          st.integers(1, 9), st.integers(0, 5)), min_size=1, max_size=6),
       st.sampled_from(ANYWHERE), st.integers(1, 3))
def test_a_copys_need_is_the_first_release_whose_pass_uses_that_many(chains, module, k):
    """``Demand.copy_key(m, k)``: the earliest next release (by its deadline) of a pipeline one of
    whose passes uses ``m`` more than ``k`` times; no such pipeline: never needed."""
    pipelines = [realtime_spec(f"p{i}", names, period * 0.01, deadline * 0.01, [120, 160], PLATFORM)
                 for i, (names, period, deadline, _) in enumerate(chains)]
    nxt = {p.name: k0 for p, (_, _, _, k0) in zip(pipelines, chains, strict=True)}

    def need_time(p):
        return nxt[p.name] * p.period_s + p.deadline_s

    demand = Demand(need_time)
    demand.reset(pipelines)
    users = sorted((need_time(p), p.name) for p in pipelines
                   if any(c.get(module, 0) > k for c in p.pass_module_counts))
    key = demand.copy_key(module, k)
    if users:
        assert key[1:3] == users[0]
        assert key >= demand.key(module)
    else:
        assert key == (2,)
    order = NeedOrder([["threshold"], [module] * (k + 1)], demand, copies=True)
    assert order.copy_key(module, k) < order.copy_key(module, k + 1)


@settings(max_examples=15, deadline=None)
@given(st.sampled_from(["median3x3", "erode3x3", "threshold"]), st.sampled_from(["dilate3x3", "sobel_mag", "fast9"]),
       st.floats(2.0, 20.0), st.floats(0.3, 3.0), st.floats(0.0, 1.0))
def test_the_warm_up_fills_the_swap_slot_for_the_frame_the_stream_starts_first(first, second, at, gap, slack):
    """Two chains sharing a module on the PYNQ-Z2's two slots, one stream: the one released first
    (on a free stream: it starts first) has the later deadline. Ranked by deadline, the warm-up
    filled the swap slot for the other and the first frame waited for a load; in the order the
    stream starts them it finds its module resident."""
    from dataclasses import replace
    from pathlib import Path

    from fpgashare.catalogue.workload import Workload
    from fpgashare.cli.bench import run_one

    plat = load_platform("pynq-z2")
    load_s = max(plat.slot_load_seconds(s.index) for s in plat.slots)
    a = realtime_spec("a", [first, "gauss3x3"], 0.04, 0.02, [120, 160], plat)
    b = realtime_spec("b", [second, "gauss3x3"], 0.04, 0.02, [120, 160], plat)
    a_at = at / 1e3
    b_at = a_at + a.exec_s + gap * load_s                 # after the first frame ends
    b_deadline = a_at + 0.02 - b_at - 1e-4 - slack * 1e-3  # due before the first frame's deadline
    if b_deadline < b.exec_s + 2 * load_s:
        return                                           # too tight to run at all
    a, b = replace(a, offset_s=a_at), replace(b, offset_s=b_at, deadline_s=b_deadline)
    workload = Workload(Path("two_chains.toml"), plat, 0, 0.04, (a, b))
    engine, result = run_one(workload, "edf", "model", check_rejected=False, streams=1)
    if len(result["admitted"]) < 2:
        return                                           # (the test refuses the pair: nothing to check)
    start = next(f.start for f in engine.frames if f.pipeline.name == "a")
    loads = [e for e in engine.trace if e.track == "port" and engine.t0 - 1e-12 <= e.start < start]
    assert not loads, [e.name for e in loads]

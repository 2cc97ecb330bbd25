"""The cheap limits (runtime/sched/limits/belady.py, caps.py, dnn_windows.py): Belady's floor is
below any slot policy on the same order, the port-wait floor below any run on one stream, the
window bound grows with the window and holds against batches whose chain grows and shrinks with
the loads, and the copies caps hold against a sweep."""

from __future__ import annotations

import itertools
import random

from fpgashare.cli.bench import run_one, sweep
from fpgashare.sched.limits.belady import Ran, belady_loads, run_order, wait_floor_s
from fpgashare.sched.limits.caps import copies_cap, shortest_load_s
from fpgashare.sched.limits.dnn_windows import Window, fastest_timings, idle_windows, run_images, window_images
from fpgashare.sched.policies.registry import POLICIES
from hypothesis import example, given, settings
from hypothesis import strategies as st

from benchmarks.limit_gap import small_workload

MODULES = "abcdef"


def random_order(rng: random.Random, slots: int, n: int) -> list[Ran]:
    t, out = 0.0, []
    for _ in range(n):
        mods = tuple(rng.sample(MODULES, rng.randint(1, slots)))
        release = t + rng.choice([0.0, 0.0, rng.uniform(0, 3)])
        start = release + rng.uniform(0, 2)
        out.append(Ran(start, start + rng.uniform(0.1, 2), release, mods))
        t = out[-1].end
    return out


def policy_loads(order: list[Ran], slots: int, rng: random.Random, lru: bool) -> int:
    """Loads of an online policy (LRU or random eviction), the running job's modules kept."""
    resident: dict[str, int] = {}
    loads = 0
    for i, r in enumerate(order):
        for m in r.modules:
            if m not in resident:
                loads += 1
                if len(resident) >= slots:
                    victims = [x for x in resident if x not in r.modules]
                    victim = min(victims, key=resident.get) if lru else rng.choice(victims)
                    del resident[victim]
            resident[m] = i
    return loads


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 2**31 - 1), st.integers(1, 4))
def test_belady_is_at_most_any_policy_on_the_same_order(seed, slots):
    rng = random.Random(seed)
    order = random_order(rng, slots, rng.randint(1, 30))
    floor = belady_loads(order, slots)
    assert floor <= policy_loads(order, slots, rng, lru=True)
    assert floor <= policy_loads(order, slots, rng, lru=False)
    assert floor >= len({m for r in order for m in r.modules})        # each module loads once at least


def test_two_slots_alternating_pairs_load_and_wait_every_time():
    # K = 2, frames alternate {a,b} and {c,d}, each released as the one before ends: every module
    # of every frame loads, after the frame before it ends, while the frame waits.
    order, t = [], 0.0
    for k in range(10):
        order.append(Ran(t + 2.0, t + 3.0, t, ("a", "b") if k % 2 == 0 else ("c", "d")))
        t += 3.0
    assert belady_loads(order, 2) == 2 * len(order)
    assert wait_floor_s(order, 2, 1.0) == 2 * (len(order) - 1)


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 2**31 - 1))
def test_the_window_bound_grows_with_the_window(seed):
    rng = random.Random(seed)
    timings = {n: (rng.uniform(1e-4, 2e-3), rng.uniform(1e-5, 5e-4)) for n in range(1, 5)}
    w = Window(0.0, rng.uniform(0, 0.02), rng.randint(1, 4), rng.randint(0, 4), rng.randint(0, 4))
    longer = Window(0.0, w.end + rng.uniform(0, 0.01), w.free_slots, w.before, w.after)
    assert window_images([w], timings, 4, 1.3e-3) <= window_images([longer], timings, 4, 1.3e-3)
    shortest_fill = min(f for f, _ in timings.values())
    assert window_images([Window(0.0, shortest_fill * 0.99, 4, None, None)], timings, 4, 1.3e-3) == 0


def grow_and_shrink_images(rng: random.Random, w: Window, timings, slots: int, load_s: float) -> int:
    """Images of one schedule in ``w`` built without the bound's formula: tiles load one after
    another from the window's start (the port's only work), a batch runs on the tiles in place
    between arrivals, and at the end the chain gives slots back one load at a time for the next
    frame's modules."""
    resident = 0 if w.cold else (slots - w.before if w.before is not None else w.free_slots)
    resident = min(resident, w.free_slots)
    goal = rng.randint(resident, w.free_slots)
    reloads = max(0, (w.after or 0) - (slots - goal)) if w.after is not None else 0
    arrivals = [w.start + k * load_s for k in range(1, goal - resident + 1)]
    marks = [w.start, *arrivals]
    spans = [(marks[i], marks[i + 1] if i + 1 < len(marks) else None, resident + i) for i in range(len(marks))]
    stop = w.end - reloads * load_s                  # the next frame's reloads after the chain ends
    images = 0
    for a, b, n in spans:
        b = stop if b is None else min(b, stop)
        if n < 1 or b <= a:
            continue
        fill, step = timings[n]
        if b - a >= fill:
            images += 1 + int((b - a - fill) // step)
    return images


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 2**31 - 1))
def test_no_growing_chain_beats_the_window_bound(seed):
    rng = random.Random(seed)
    step = {n: rng.uniform(1e-5, 5e-4) / n for n in range(1, 5)}
    timings = {n: (step[n] * rng.uniform(1.0, 4.0), step[n]) for n in range(1, 5)}
    cold = rng.random() < 0.5
    w = Window(0.0, rng.uniform(0, 0.02), rng.randint(1, 4), None if cold else rng.randint(0, 4),
               rng.randint(0, 4) if rng.random() < 0.5 else None, cold)
    load_s = rng.uniform(1e-4, 2e-3)
    assert grow_and_shrink_images(rng, w, timings, 4, load_s) <= window_images([w], timings, 4, load_s)


@settings(max_examples=2, deadline=None)
@example(1165581801)    # an offset drawn at its period: the pipeline released no frame
@given(st.integers(0, 2**31 - 1))
def test_no_sweep_exceeds_the_copies_caps(seed):
    workload = small_workload(seed, max_pipelines=2)
    base = next(p for p in workload.pipelines if p.realtime)
    cap = copies_cap(base, workload.platform)
    for scheduler in ("edf", "fcfs"):
        assert sweep(workload, scheduler, "model", base.name)["max_pipelines"] <= cap["bound"], scheduler


@settings(max_examples=6, deadline=None)
@given(st.integers(0, 2**31 - 1))
def test_the_window_bound_charging_every_pass_holds_every_run(seed):
    # On several streams the windows span real-time passes: the bound charges the slots the
    # running passes hold and the reloads of every pass's modules, and still bounds every
    # scheduler's DNN images (on the board's streams, and on one).
    rng = random.Random(seed)
    workload = next(w for w in (small_workload(rng.randrange(2**31)) for _ in range(500))
                    if any(not p.realtime for p in w.pipelines))
    platform = workload.platform
    models = [p.model for p in workload.pipelines if not p.realtime]
    timings = fastest_timings(platform, models)
    slots, load_s = len(platform.slots), shortest_load_s(platform)
    for name in POLICIES:
        for streams in (None, 1):
            engine, result = run_one(workload, name, "model", check_rejected=False, streams=streams)
            busy = [(r.start, r.end, len(r.modules)) for r in run_order(engine)]
            order = run_order(engine)
            bound = run_images(busy, slots, platform.streams, load_s, 0.0, engine.end_s, timings, run_start=0.0,
                               modules=[r.modules for r in order])
            looser = run_images(busy, slots, platform.streams, load_s, 0.0, engine.end_s, timings, run_start=0.0)
            old = window_images(idle_windows(busy, slots, platform.streams, 0.0, engine.end_s, run_start=0.0),
                                timings, slots, load_s)
            images_per_s = result["totals"]["dnn_images_per_s"]
            assert images_per_s <= bound / workload.duration_s + 0.05, (name, streams, images_per_s, bound)
            assert bound <= looser <= old, (name, streams, bound, looser, old)


def tiles_and_passes(rng: random.Random, slots: int, load_s: float):
    """A schedule built without the bound's formula, from a cold start (every slot empty at 0):
    passes of random chains (copies of a module in distinct slots) one after another; before
    each, the port loads random tiles into slots the pass does not keep, then the pass's missing
    copies back to back just before it starts (evicting tiles or modules); one load at a time.
    Returns the passes (start, end, slots), their modules, and each tile's (slot, held from, to)."""
    content: list[str | None] = [None] * slots
    since: dict[int, float] = {}
    tiles, busy, modules = [], [], []
    t = 0.0
    for _ in range(rng.randint(1, 6)):
        chain = [rng.choice("abcd") for _ in range(rng.randint(1, slots))]
        keep: set[int] = set()
        missing = []
        for m in chain:
            slot = next((i for i in range(slots) if content[i] == m and i not in keep), None)
            if slot is None:
                missing.append(m)
            else:
                keep.add(slot)
        victims = [i for i in range(slots) if i not in keep]
        for slot in rng.sample(victims, rng.randint(0, len(victims))):     # tiles first
            if content[slot] == "tile":
                tiles.append((slot, since.pop(slot), t))
            content[slot] = "tile"
            since[slot] = t + load_s
            t += load_s
        t += rng.choice([0.0, rng.uniform(0, 3 * load_s)])
        for m in missing:                                                 # then the pass's copies
            slot = next(i for i in victims if i not in keep)
            keep.add(slot)
            if content[slot] == "tile":
                tiles.append((slot, since.pop(slot), t))
            content[slot] = m
            t += load_s
        t += rng.choice([0.0, rng.uniform(0, load_s)])
        end = t + rng.uniform(0.1, 2) * load_s
        busy.append((t, end, len(chain)))
        modules.append(chain)
        t = end + rng.choice([0.0, rng.uniform(0, 3 * load_s)])
    tiles += [(slot, start, t + load_s) for slot, start in since.items()]
    return busy, modules, tiles, t + load_s


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 2**31 - 1), st.integers(1, 4))
def test_no_schedule_holds_more_tiles_than_the_window_bound_allows(seed, slots):
    # The bound's n(t) with the passes' copies charged together on the one port (PassesAhead) and
    # from the cold start (cold_port_caps): never below the tiles a real schedule holds at t.
    from fpgashare.sched.limits.dnn_windows import run_stretches

    rng = random.Random(seed)
    load_s = 1.0
    busy, modules, tiles, end = tiles_and_passes(rng, slots, load_s)
    # Two streams: a batch may run beside a pass, so n(t) bounds the tiles held at any instant.
    pieces = [p for s in run_stretches(busy, slots, 2, load_s, 0.0, end, run_start=0.0, modules=modules) for p in s]
    marks = sorted({0.0, end, *(x for _, a, b in tiles for x in (a, b)), *(x for a, b, _ in pieces for x in (a, b))})
    for a, b in itertools.pairwise(marks):
        if b - a < 1e-9:
            continue          # (a sliver between two roundings of the same instant)
        t = (a + b) / 2
        held = sum(1 for _, x, y in tiles if x <= t < y)
        n = next((n for x, y, n in pieces if x <= t < y), 0)
        assert held <= n, (t, held, n, busy, modules, tiles)

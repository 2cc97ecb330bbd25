"""An evictor's put-back skipped when its own next frame certainly comes first
(runtime/sched/policies/put_back_skip.py; docs/guarantee.md, "Skipping an evictor's put-back"):
admitted sets miss nothing with it, the skip saves loads where it applies, and pins owed to a frame
that never comes go back before any frame that uses them starts."""

from __future__ import annotations

import math
import random
import re
from dataclasses import replace
from pathlib import Path

from fpgashare.backends.model import ModelBackend
from fpgashare.catalogue.platform import load_platform
from fpgashare.catalogue.workload import Workload, WorkloadError, realtime_spec
from fpgashare.sched.analysis.admission import admit
from fpgashare.sched.analysis.schedulability import AdmissionContract
from fpgashare.sched.core.engine import Engine
from fpgashare.sched.core.jobs import RELEASE
from fpgashare.sched.policies import put_back_skip
from fpgashare.sched.policies.edf import EdfPolicy
from fpgashare.sched.policies.hold import Holds
from fpgashare.sched.sources.periodic import PeriodicReleases, run_workload
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchmarks.limit_gap import FRAMES, VISION, small_workload
from tests.hold_everything import hold_everything

SEEDS = st.integers(0, 2**31 - 1)
LOAD = re.compile(r"load (\S+) -> slot (\d+)")


class CountingSkips(put_back_skip.Skips):
    """edf's skips, counted: each skip (the evictor frame's index after which the pins stayed out),
    each set of owed pins that fell due."""

    def __init__(self) -> None:
        super().__init__()
        self.skipped: list[tuple[str, int]] = []
        self.due = 0

    def begin(self, engine, restore) -> None:
        before = self.owed
        super().begin(engine, restore)
        if self.owed is not None and self.owed is not before:
            self.skipped.append((self.owed.pipeline, self.owed.index - 1))

    def settle(self, engine, restore) -> bool:
        settled = super().settle(engine, restore)
        self.due += settled
        return settled


class HoldEverything(Holds):
    """Every frame not started held for its whole budget (tests/hold_everything.py)."""

    held = hold_everything


class Counting(EdfPolicy):
    """edf with its skips counted; ``skip``: whether put-backs may be skipped; ``hold_all``: every
    frame held for its whole budget (edf never holds the frame the pins are owed to)."""

    def __init__(self, skip: bool = True, hold_all: bool = False) -> None:
        super().__init__()
        self.skip_put_backs, self.hold_all = skip, hold_all

    def setup(self, engine) -> None:
        super().setup(engine)
        self.skips = CountingSkips()
        if self.hold_all:
            self.held = HoldEverything()


def loads_into(trace, slot: int) -> list:
    return [e for e in trace if e.track == "port" and (m := LOAD.match(e.name)) and int(m.group(2)) == slot]


def holds_at(trace, slot: int, t: float) -> str | None:
    """What ``slot`` holds at ``t`` by the loads into it that ended by then."""
    done = [e for e in loads_into(trace, slot) if e.end <= t + 1e-12]
    return LOAD.match(max(done, key=lambda e: e.end).name).group(1) if done else None


def assert_pins_in_place_for_their_users(engine, contract: AdmissionContract) -> None:
    """A frame whose pipeline uses a pin starts while that pin is away only if it ends before the
    pin's reload starts (it borrowed the stream during an evictor's loads, rule 4)."""
    uses = {p.name: p.module_counts for p in engine.pipelines}
    for e in engine.trace:
        name = (e.args or {}).get("pipeline")
        if not e.track.startswith("stream") or name not in uses:
            continue
        for slot, pin in contract.pinned.items():
            if pin not in uses[name] or holds_at(engine.trace, slot, e.start) in (pin, None):
                continue
            back = min((p.start for p in loads_into(engine.trace, slot) if p.start >= e.start
                        and LOAD.match(p.name).group(1) == pin), default=None)
            assert back is not None and e.end <= back + 1e-12, (e.name, slot, pin)


def assert_no_misses(engine) -> None:
    late = [(f.key, f.outcome, f.reason) for f in engine.frames if f.outcome != "on_time"]
    assert not late, late


# ---- (1) admitted sets miss nothing with the skip --------------------------------------------------
def with_evictors(seed: int, tries: int = 60):
    """The first generated workload from ``seed`` whose phased one-stream admission has evictors,
    with only what it admits (or None)."""
    for k in range(tries):
        workload = small_workload(seed + k)
        if any(not p.realtime for p in workload.pipelines):
            continue
        admission = admit(workload, phased=True)
        if admission.contract.evictors:
            kept = {p.name for p in admission.admitted}
            return replace(workload, pipelines=tuple(p for p in workload.pipelines if p.name in kept)), admission
    return None, None


@settings(max_examples=16, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(SEEDS, st.integers(0, 10**6), st.booleans(), st.booleans())
def test_sets_admitted_with_evictors_miss_nothing_with_put_backs_skipped(seed, jitter_seed, hold_all, shaped):
    """Generated workloads (offsets, jitter on about half the pipelines) admitted with evictors, run
    for a dozen hyperperiods with fresh jitter, with or without every frame held for its budget:
    ``limit_gap``'s (where the skip is rare) or ``evictor_set``'s with tight deadlines beside the
    evictor (where phased admission gives an evicting plan and the skip is frequent)."""
    if shaped:
        workload, _ = evictor_set(seed, tight=True)
        admission = admit(workload, phased=True)
        kept = {p.name for p in admission.admitted}
        workload = replace(workload, pipelines=tuple(p for p in workload.pipelines if p.name in kept),
                           duration_s=workload.duration_s / 8)
    else:
        workload, admission = with_evictors(seed)
    if workload is None:
        return
    long = replace(workload, duration_s=workload.duration_s * 12, seed=jitter_seed)
    engine, _ = run_workload(long, ModelBackend(long.platform), Counting(hold_all=hold_all),
                             contract=admission.contract)
    assert_no_misses(engine)
    assert_pins_in_place_for_their_users(engine, admission.contract)


# ---- (2) and (3): generated evictor workloads where the evictor is the most frequent ------------------
def evictor_set(seed: int, tight: bool = False) -> tuple[Workload, AdmissionContract]:
    """A generated PYNQ-Z2 workload with both slots pinned and an evictor: a frequent pipeline on
    pin a, one or two rarer ones on pin b (and maybe a), and the evictor on a module of its own,
    released more often than b's users; deadlines up to the period, offsets and jitter drawn;
    with the contract an evicting plan would give it (run without admission, the dispatch is what
    is checked). ``tight``: the others' deadlines leave them less than a load, so that phased
    admission pins their modules and the evictor evicts."""
    rng = random.Random(seed)
    plat = load_platform("pynq-z2")
    a, b, e = rng.sample([m for m in VISION if m in plat.modules], 3)
    load_s = max(plat.slot_load_seconds(s.index) for s in plat.slots)
    drawn = [("fast", [a], rng.choice((0.01, 0.02))), ("evictor", [e], 0.01)]
    drawn += [(f"rare{i}", rng.choice(([b], [b, a], [a, b])), 0.04) for i in range(rng.randint(1, 2))]
    pipelines = []
    for name, chain, period in drawn:
        spec = None
        for _ in range(30):
            try:
                spec = realtime_spec(name, chain, period, period, list(rng.choice(FRAMES[:2])), plat,
                                     jitter_s=round(rng.uniform(0, 5e-4), 5) if rng.random() < 0.5 else 0.0)
            except WorkloadError:
                continue
            break
        assert spec is not None, (name, chain)
        deadline = rng.uniform(min(period, spec.exec_s + 3 * load_s), period)
        if tight and name != "evictor":
            deadline = min(period, spec.exec_s + rng.uniform(2e-4, 0.9 * load_s))
        pipelines.append(replace(spec, deadline_s=deadline, offset_s=round(rng.uniform(0, period), 4) % period))
    hyper = math.lcm(*(round(p.period_s * 1e3) for p in pipelines)) / 1e3
    workload = Workload(Path(f"evictor_set_{seed}.toml"), plat, seed, hyper * 8, tuple(pipelines))
    contract = AdmissionContract(pinned={0: a, 1: b}, load_s=load_s, evictors={"evictor": 1}, idle_loads=False)
    return workload, contract


def realtime_loads(engine) -> int:
    return sum(1 for e in engine.trace if e.track == "port" and e.name.startswith("load "))


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(SEEDS)
def test_the_skip_saves_loads_where_the_evictors_next_frame_comes_first(seed):
    workload, contract = evictor_set(seed)
    runs = {}
    for skip in (True, False):
        policy = Counting(skip=skip)
        engine, _ = run_workload(workload, ModelBackend(workload.platform), policy, contract=contract)
        runs[skip] = (engine, policy.skips.skipped)
    (on, skipped), (off, none) = runs[True], runs[False]
    assert skipped and not none
    assert realtime_loads(on) < realtime_loads(off)
    assert_pins_in_place_for_their_users(on, contract)


# ---- (3) the evictor stops sending --------------------------------------------------------------------
class StopsSending(PeriodicReleases):
    """``workload``'s releases, but pipeline ``name`` sends no frame from ``index`` on; the forecast
    still expects them (as for an app that goes quiet). ``drop``: instead, frame ``index`` comes
    already too late to finish, and is dropped; the rest come as usual."""

    def __init__(self, workload: Workload, name: str, index: int, drop: bool = False) -> None:
        super().__init__(workload)
        self.name, self.index, self.drop = name, index, drop

    def _withheld(self, frame) -> bool:
        return not self.drop and frame.pipeline.name == self.name and frame.index >= self.index

    def schedule(self) -> None:
        engine = self.engine
        push = engine.push

        def sent(t: float, kind: str, data: object) -> None:
            if not (kind == RELEASE and self._withheld(data)):
                push(t, kind, data)

        engine.push = sent
        try:
            super().schedule()
        finally:
            del engine.push
        engine.frames[:] = [f for f in engine.frames if not self._withheld(f)]
        for f in engine.frames:
            if self.drop and f.pipeline.name == self.name and f.index == self.index:
                f.deadline = f.release + 1e-6


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(SEEDS, st.booleans())
def test_pins_owed_to_a_frame_that_never_comes_go_back_before_their_users_start(seed, dropped):
    workload, contract = evictor_set(seed)
    first = Counting()
    run_workload(workload, ModelBackend(workload.platform), first, contract=contract)
    assert first.skips.skipped
    _, after = first.skips.skipped[0]                   # the evictor stops right after this frame
    policy = Counting()
    engine = Engine(workload, ModelBackend(workload.platform), policy, contract=contract,
                    source=StopsSending(workload, "evictor", after + 1, drop=dropped)).run()
    assert policy.skips.skipped[0] == ("evictor", after)     # the same run up to there: the pins stay out
    assert policy.skips.due >= 1                               # and fall due when its frame does not come
    if dropped:
        assert next(f for f in engine.frames if f.key == f"evictor/{after + 1}").outcome == "dropped"
    last = max(f.end for f in engine.frames if f.pipeline.name == "evictor" and f.end is not None
               and f.index <= after)
    uses = {p.name: p.module_counts for p in engine.pipelines}
    away = [(slot, pin) for slot, pin in contract.pinned.items() if holds_at(engine.trace, slot, last) != pin]
    assert away                                                # its last frame left a pin out
    for slot, pin in away:
        back = [e for e in loads_into(engine.trace, slot) if e.start >= last and LOAD.match(e.name).group(1) == pin]
        user = [e.start for e in engine.trace if e.track.startswith("stream") and e.start >= last
                and pin in uses.get((e.args or {}).get("pipeline"), {})]
        assert back and all(back[0].end <= t + 1e-12 for t in user), (slot, pin)
    assert_pins_in_place_for_their_users(engine, contract)

"""edf decides exactly as before the work that made its decision cheaper: each generated workload
runs twice, with the optimised code and with the straightforward versions it replaced (kept below
as references: edf's dispatch loop, load plan, drop test, idle-port work and prefetch target; the
engine's ``find_slots``, ``victim``, ``NeedOrder.head`` and the stream's lane choice), and every
frame's passes (start, end, slots), outcome and reason, every slice of the trace (each load on the
port, each job on the stream and slots), the pins moved and the DNN images done must be equal.

Workloads: benchmarks/workload_gen.py's on both platforms (DNN present or not), admitted (plain or
phased: pins, and contracts with evictors or the pinned-first rule) or all run without admission (frames
dropped), on one stream or partitioned over several, and on zcu104-x4 (a fused region); and the
workloads ``benchmarks/scheduler_cost.py`` times.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from contextlib import contextmanager
from dataclasses import replace
from types import SimpleNamespace

import pytest
from fpgashare.backends.model import ModelBackend
from fpgashare.catalogue.fused_slots import unblock, widest_first
from fpgashare.catalogue.platform import load_platform
from fpgashare.catalogue.workload import Workload
from fpgashare.sched.analysis.admission import admit
from fpgashare.sched.board.stream_plan import plan_streams
from fpgashare.sched.board.workload_run import run_board
from fpgashare.sched.core.demand import NeedOrder
from fpgashare.sched.core.frame_stream import FrameStream
from fpgashare.sched.core.jobs import Frame
from fpgashare.sched.core.slot_use import Placement
from fpgashare.sched.core.slots import Slot, SlotManager, SlotState
from fpgashare.sched.core.view import EngineView
from fpgashare.sched.policies import pin_lend, put_back
from fpgashare.sched.policies.edf import EdfPolicy
from fpgashare.sched.policies.edf_loads import LoadPlan, borrow_last, overtaken, pinned_victim
from fpgashare.sched.policies.guard import side_load_allowed
from fpgashare.sched.policies.pin_move import pin_move
from fpgashare.sched.policies.pinned_first import start_pinned_first
from fpgashare.sched.sources.periodic import run_workload
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks.limit_gap import small_workload
from benchmarks.scheduler_cost import STREAM_CHAINS
from benchmarks.scheduler_cost import workload as cost_workload
from benchmarks.workload_gen import random_workload


# ---- the references: the code as it was before it was made cheaper ----------------------------
class ReferenceEdf(EdfPolicy):
    """edf with its dispatch, plan, drop test, idle-port work and prefetch target as they were."""

    skip_put_backs = False      # (came after: UnheldEdf)

    def _dispatch(self, engine: EngineView) -> None:
        now = engine.now
        committed = engine.committed
        reserved: set[int] = set()
        borrowable: set[int] = set()
        ready_at = float("inf")
        late: dict[int, float] = {}
        if committed is not None and self.hopeless(engine, committed, (), engine.stream.free_at()):
            engine.drop(committed, "cannot finish by its deadline: the stream is taken until then")
            committed = None
        if committed is not None and engine.contract.pinned_first and engine.stream.free():
            start_pinned_first(engine, committed, self.priority)
        if committed is not None:
            plan = self._plan(engine, committed, set(), take_pins=True)
            come = committed.arrives is None or committed.arrives <= now   # rule 12 (a frame committed
            if not come:                                                    # before it comes): a change
                engine.wake(committed.arrives)                              # of what edf does, in both
            if come and not plan.loads and plan.complete and all(s is not None for s in plan.chosen) \
                    and engine.stream.free():
                engine.start(committed, plan.chosen)
                committed = None
                # rule 9 from the evictor's start: a change of what edf does, made after the
                if put_back.owing(engine, self._restore):      # cheaper decision, in both
                    return
                self._load_pins(engine)
            else:
                self._issue(engine, plan)
                reserved = plan.used
                borrowable = {s for s in plan.chosen if s is not None}
                ready_at = plan.ready_at
                late = plan.late
        stream_at = engine.stream.free_at()
        head_seen = False
        port_given = committed is not None
        for frame in sorted(engine.pending, key=self.priority):
            if frame is committed:
                head_seen = True
                continue
            exec_s = frame.exec_s
            if stream_at + frame.remaining_s > frame.deadline:
                engine.drop(frame, "cannot finish by its deadline: the stream is taken until then")
                continue
            later = committed is not None
            borrows = self.borrow and later and now + exec_s <= ready_at
            if later and not (borrows and engine.stream.free()):
                continue
            if borrows:
                free = borrowable | {v for v, t in late.items() if now + exec_s <= t}
                chosen, missing = engine.placement.find_slots(frame, reserved - free)
            else:
                chosen, missing = engine.placement.find_slots(frame, reserved)
            reason = self.hopeless(engine, frame, missing, stream_at)
            if reason:
                engine.drop(frame, reason)
                continue
            if not missing and frame.arrives is not None and frame.arrives > now:     # rule 12, as above
                if not later and engine.stream.free() and not port_given:
                    engine.commit(frame)
                    committed, port_given = frame, True
                    engine.wake(frame.arrives)
                    reserved = borrowable = {s for s in chosen if s is not None}
                    ready_at = now
                head_seen = True
                continue
            if not missing:
                if engine.stream.free() and (not later or borrows):
                    engine.start(frame, [s for s in chosen if s is not None])
                    stream_at = engine.stream.free_at()
                    if engine.committed is None:
                        self._load_pins(engine)
                    continue
                reserved |= {s for s in chosen if s is not None}
                head_seen = True
                continue
            is_head = not head_seen
            head_seen = True
            if port_given:
                continue
            port_given = True
            plan = self._plan(engine, frame, reserved, take_pins=is_head and engine.stream.free())
            if is_head and engine.stream.free():
                engine.commit(frame)
                committed = frame
                self._issue(engine, plan)
                reserved = reserved | plan.used
                borrowable = {s for s in plan.chosen if s is not None}
                ready_at = plan.ready_at
                late = plan.late
            else:
                if plan.loads and side_load_allowed(engine, plan.loads[0][1]) \
                        and not overtaken(engine, frame, plan.loads[0][0]):
                    engine.load(plan.loads[0][1], plan.loads[0][0], "demand")
                elif is_head and (frame.arrives is None or frame.arrives <= now) \
                        and (move := pin_move(engine, frame, chosen, missing)) is not None:
                    engine.move_pin(move.into, move.to)
                    engine.load(move.into, move.module, "demand")
                    plan.used = {s for s in chosen if s is not None} | {move.into}
                reserved |= plan.used
        if engine.committed is None:
            self._port_idle(engine, reserved)

    def _plan(self, engine: EngineView, frame: Frame, keep: set[int], take_pins: bool = False) -> LoadPlan:
        slots = engine.slots
        chosen, _ = engine.placement.find_slots(frame, keep)
        plan = LoadPlan(chosen, {s for s in chosen if s is not None})
        future = None
        waits = engine.now + engine.port.backlog_s()
        order = range(len(chosen)) if not slots.fused else widest_first(slots.platform, frame.modules)
        for module, slot in ((frame.modules[i], chosen[i]) for i in order):
            if slot is not None:
                continue
            coming = next((s for s in slots.coming_with(module) if s not in plan.used), None)
            if coming is not None:
                plan.used.add(coming)
                continue
            busy = next((s for s in slots.busy_with(module) if s not in plan.used and s not in keep), None)
            if busy is not None:
                plan.used.add(busy)
                waits = max(waits, engine.placement.free_at(busy) or engine.now)
                continue
            if future is None:
                future = engine.foresight.need_order([frame], copies=engine.placement.copies_matter())
            planned = {i for m, v in plan.loads for i in slots.taken_by(v, m)}
            victim = slots.victim(module, future, keep=keep | plan.used, planned=planned)
            if victim is None and take_pins:
                victim = pinned_victim(engine, frame, module, keep | plan.used)
            if victim is None:
                plan.complete = False
                continue
            plan.used.update(slots.taken_by(victim, module))
            plan.loads.append((module, victim))
        plan.ready_at = max(waits, engine.now + engine.port.backlog_s()
                            + sum(engine.port.load_seconds(v) for _, v in plan.loads))
        if len(plan.loads) > 1 and take_pins and len(engine.pending) > 1 and not slots.fused:
            borrow_last(engine, frame, plan)
        return plan

    def hopeless(self, engine: EngineView, frame: Frame, missing: Sequence[str], stream_at: float) -> str | None:
        exec_s = frame.remaining_s
        if stream_at + exec_s > frame.deadline:
            return "cannot finish by its deadline: the stream is taken until then"
        if missing:
            shortest = engine.port.shortest_load_s()
            if engine.now + len(frame.modules) * shortest + exec_s <= frame.deadline:
                return None
            slots = engine.slots
            new = sum(max(0, need - len(slots.ready_with(m)) - len(slots.busy_with(m)) - len(slots.coming_with(m)))
                      for m, need in frame.module_counts.items() if m in missing)
            if new and engine.now + new * shortest + exec_s > frame.deadline:
                return f"cannot finish by its deadline: {new} module(s) still to load"
        return None

    def _port_idle(self, engine: EngineView, reserved: set[int]) -> None:
        if not engine.port.free():
            return
        if self._load_pins(engine) or (engine.dnn_pipelines and pin_lend.lent(engine)):
            return
        if engine.changing:
            return
        waiting = sorted((f for f in engine.pending if f.start is None), key=self.priority)
        work = self.port_idle_work(engine, waiting)
        if work is not None:
            work(reserved)

    @staticmethod
    def _prefetch_target(engine: EngineView, waiting: list[Frame],
                         played: bool = False) -> tuple[NeedOrder, list[str], str] | None:
        if not engine.slots.idle():
            return None
        foresight = engine.foresight
        future = foresight.played_order(waiting) if played else \
            foresight.need_order(waiting, copies=engine.placement.copies_matter())
        needed = future.head(len(engine.slots.slots))
        slots = engine.slots
        module = next((m for m in needed if not slots.holds(m)), None)
        copies = engine.placement.copies_needed()
        second = None
        for m in needed:
            want = copies.get(m, 1)
            if want > 1:
                have = len(slots.ready_with(m)) + len(slots.busy_with(m)) + len(slots.coming_with(m))
                if 0 < have < want and (second is None or future.copy_key(m, have) < second[0]):
                    second = (future.copy_key(m, have), m)
        if second is not None and (module is None or second[0] < future.key(module)):
            module = second[1]
        return None if module is None else (future, needed, module)


def reference_free_lane(self) -> int:
    taken = {*self.lanes.values(), *((0,) if self._batches() else ())}
    return min(k for k in range(self.engine.video_streams) if k not in taken)



def reference_victim(self, module: str, future: NeedOrder, keep: set[int] = frozenset(),
                     planned: set[int] = frozenset()) -> int | None:
    pinned = self.pinned
    for i in self.compatible_slots(module):
        s = self.slots[i]
        if self.pin_modules.get(i) == module and i not in keep and s.module != module \
                and (s.state is SlotState.BLANK or s.state is SlotState.READY) \
                and (not self._fused or self._can_take(i, module, keep, planned)):
            return i
    candidates = [s for s in (self.slots[i] for i in self.compatible_slots(module))
                  if s.index not in keep and s.index not in pinned
                  and (s.state is SlotState.BLANK or s.state is SlotState.READY)]
    if self._fused:
        return self._fused_victim(module, future, keep, candidates, planned)
    if not candidates:
        return None
    blank = [s for s in candidates if s.state == SlotState.BLANK]
    if blank:
        return blank[0].index
    if self.replacement == "lru":
        return min(candidates, key=lambda s: (s.last_used, s.index)).index
    if not future.copies:
        return max(candidates, key=lambda s: (future.key(s.module), -s.last_used, -s.index)).index
    ready, busy, loading = self._holders or self._index()

    def rank(s: Slot) -> tuple:
        m = s.module
        held = len(ready.get(m, ())) + len(busy.get(m, ())) + len(loading.get(m, ()))
        return (future.key(m) if held <= 1 else future.copy_key(m, held - 1), -s.last_used, -s.index)
    return max(candidates, key=rank).index


def reference_find_slots(self, frame: Frame, reserved: set[int]) -> tuple[list[int | None], list[str]]:
    taken = set(reserved)
    chosen: list[int | None] = []
    missing = []
    slots = self.engine.slots
    ready = slots.ready_by_module()
    pinned = slots.pinned
    for module in frame.modules:
        copies = ready.get(module, ())
        if pinned and len(copies) > 1:
            copies = sorted(copies, key=lambda s: s not in pinned)
        for slot in copies:
            if slot not in taken:
                taken.add(slot)
                chosen.append(slot)
                break
        else:
            chosen.append(None)
            missing.append(module)
    if missing and slots.fused:
        return unblock(slots.platform, frame.modules, chosen, missing)
    return chosen, missing


def reference_head(self, count: int) -> list[str]:
    while len(self._first) < count and self._read_chain():
        pass
    out = list(self._first)[:count]
    if len(out) < count and self._demand is not None:
        for module in self._demand.order():
            if module not in self._first:
                out.append(module)
                if len(out) == count:
                    break
    return out


@contextmanager
def reference_code():
    """The engine's parts with their reference versions; yields the reference policy."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Placement, "find_slots", reference_find_slots)
        patch.setattr(SlotManager, "victim", reference_victim)
        patch.setattr(NeedOrder, "head", reference_head)
        patch.setattr(FrameStream, "free_lane", reference_free_lane)
        yield ReferenceEdf


# ---- the runs -----------------------------------------------------------------------------------
def trace(engine) -> list:
    """Everything a run decided: per engine (each partition's on several streams), every frame's
    passes, slots and outcome, the trace (loads, stream and slot jobs), pin moves, DNN images."""
    out = []
    for e in getattr(engine, "parts", None) or [engine]:
        frames = [(f.key, f.release, f.start, f.end, f.outcome, f.reason, tuple(f.streamed), f.slots)
                  for f in e.frames]
        slices = [(t.track, t.name, t.start, t.end, sorted((k, str(v)) for k, v in t.args.items()))
                  for t in e.trace]
        out.append((frames, slices, e.pin_moves, dict(e.dnn_images)))
    return out


def run(workload: Workload, mode: str, policy: type[EdfPolicy], streams: int = 1):
    """``workload`` under ``policy``: ``free`` (every pipeline, no admission), ``admitted`` or
    ``phased`` (the pipelines the plain or phased analysis admits, with its contract), ``streams``
    (partitioned over ``streams`` streams by the stream planner)."""
    backend = ModelBackend(workload.platform)
    if mode == "free":
        return run_workload(workload, backend, policy())[0]
    if mode == "streams":
        return run_board(workload, backend, plan_streams(workload, streams, spare_stream=True), policy)[0]
    admission = admit(workload, phased=mode == "phased")
    kept = {p.name for p in admission.admitted}
    admitted = replace(workload, pipelines=tuple(p for p in workload.pipelines if not p.realtime or p.name in kept))
    return run_workload(admitted, backend, policy(), contract=admission.contract)[0]


class UnheldEdf(EdfPolicy):
    """edf as it is, holding no frame back, with no early take and no skipped put-back: holds
    (tests/test_edf_holds.py), an evictor's early take (tests/test_early_take.py) and its skipped
    put-back (tests/test_putback_skip.py) came after the references and change decisions by design;
    what this file checks is the cheaper code."""

    holds = False
    early_takes = False
    skip_put_backs = False


def assert_unchanged(workload: Workload, mode: str, streams: int = 1) -> list:
    optimised = trace(run(workload, mode, UnheldEdf, streams))
    with reference_code() as reference:
        before = trace(run(workload, mode, reference, streams))
    assert optimised == before, f"{workload.path} ({mode}): the decisions differ from the reference code's"
    return optimised


# ---- the properties -----------------------------------------------------------------------------
@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**31), st.sampled_from(["free", "admitted", "phased", "streams"]), st.booleans())
def test_random_workloads_decide_as_the_reference(seed, mode, dnn):
    workload = random_workload(seed, max_s=0.8, dnn=dnn)
    streams = random.Random(seed).randint(1, workload.platform.streams)
    assert_unchanged(workload, mode, streams)


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 2**31), st.sampled_from(["free", "admitted"]), st.booleans())
def test_fused_region_workloads_decide_as_the_reference(seed, mode, dnn):
    """zcu104-x4: fast9 loads into a fused region of three slots (most of these workloads use it)."""
    assert_unchanged(random_workload(seed, platform="zcu104-x4", max_s=0.6, dnn=dnn), mode)


@settings(max_examples=6, deadline=None)
@given(st.integers(0, 2**31))
def test_evicting_and_pinned_first_contracts_decide_as_the_reference(start):
    """Phased contracts that let a pipeline take pins and put them back, or stream frames on their
    pins first (a few draws in a hundred): the first such draw from ``start`` on."""
    for seed in range(start, start + 400):
        small = small_workload(seed)         # one hyperperiod: run ten
        workload = replace(small, duration_s=10 * small.duration_s) if seed % 2 else random_workload(seed, max_s=0.8)
        contract = admit(workload, phased=True).contract
        if contract.evictors or contract.pinned_first:
            break
    assert contract.evictors or contract.pinned_first, f"no such contract in 400 draws from {start}"
    assert_unchanged(workload, "phased")


@pytest.mark.parametrize("streams", [1, 4])
def test_the_cost_benchmarks_workloads_decide_as_the_reference(streams):
    """The decisions benchmarks/scheduler_cost.py times at 16 pipelines (and so the ones made cheaper)."""
    workload = cost_workload(16) if streams == 1 else cost_workload(16, STREAM_CHAINS, 4)
    runs = assert_unchanged(workload, "free" if streams == 1 else "streams", streams)
    frames = [f for frames, _, _, _ in runs for f in frames]
    assert frames and all(f[4] == "on_time" for f in frames)     # a run with work in it, all of it on time


PLATFORMS = {name: load_platform(name) for name in ("zcu104", "pynq-z2", "zcu104-x4")}


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(sorted(PLATFORMS)), st.randoms(use_true_random=False))
def test_victims_placements_and_need_heads_are_the_references(name, rng):
    """On random slot states (loads, jobs, pins; fused regions on zcu104-x4) and need orders:
    ``victim``, ``find_slots`` and ``NeedOrder.head`` answer as their references, ties included."""
    platform = PLATFORMS[name]
    slots = SlotManager(ModelBackend(platform), rng.choice(["belady", "lru"]))
    modules = sorted(platform.modules)
    for t in range(rng.randint(0, 16)):
        slot = t if t < len(slots.slots) and rng.random() < 0.8 else rng.randrange(len(slots.slots))   # most full
        module = rng.choice(modules)
        if slots.compatible(slot, module) and slots.can_request(slot, module):
            slots.request(slot, module)
            slots.start_next(float(t))
            slots.finish(t + 0.5)
            slots.slots[slot].last_used = float(rng.choice([t, t // 3]))    # ties too
    slot, module = rng.randrange(len(slots.slots)), rng.choice(modules)
    if rng.random() < 0.3 and slots.compatible(slot, module) and slots.can_request(slot, module):
        slots.request(slot, module)          # a slot being loaded
    ready = [s.index for s in slots.slots if s.state is SlotState.READY and s.host is None]
    slots.acquire(rng.sample(ready, rng.randint(0, min(1, len(ready)))), "job")
    pinned = rng.sample(range(len(slots.slots)), rng.choice([0, 0, 1, 2]))
    slots.pinned = frozenset(pinned)
    slots.pin_modules = {i: rng.choice(modules) for i in pinned}
    chains = [rng.sample(modules, rng.randint(1, 3)) * rng.choice([1, 1, 2]) for _ in range(rng.randint(0, 5))]
    everyone = range(len(slots.slots))
    for _ in range(4):
        future = NeedOrder(chains, copies=rng.random() < 0.5)
        keep = set(rng.sample(everyone, rng.randint(0, 1)))
        planned = set(rng.sample(sorted(keep), rng.randint(0, len(keep))))
        module = rng.choice([m for m in modules if slots.compatible_slots(m)])
        assert slots.victim(module, future, keep, planned) == \
            reference_victim(slots, module, NeedOrder(chains, copies=future.copies), keep, planned)
        placement = Placement(SimpleNamespace(slots=slots))
        frame = SimpleNamespace(modules=tuple(rng.choice(modules) for _ in range(rng.randint(1, 4))))
        reserved = set(rng.sample(everyone, rng.randint(0, len(slots.slots))))
        assert placement.find_slots(frame, reserved) == reference_find_slots(placement, frame, reserved)
        count, asked, order, reference = rng.randint(0, 8), rng.choice(modules), NeedOrder(chains), NeedOrder(chains)
        assert order.key(asked) == reference.key(asked)      # (a key asked first reads some of the chains)
        assert order.head(count) == reference_head(reference, count)

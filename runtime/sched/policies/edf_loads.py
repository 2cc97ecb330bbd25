"""Which slots edf's loads take: a committing frame's load plan, the victims an evictor or a
prefetch may use, the slots a prefetch must leave alone, the pins to load back, and whether the
loads a frame still lacks can end in time; and the warm-up before the first release
(runtime/sched/policies/edf.py runs them).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field

from fpgashare.sched.core.jobs import Frame
from fpgashare.sched.core.view import EngineView, NeedOrder, SlotState
from fpgashare.sched.policies import pin_lend
from fpgashare.sched.policies.backfill import DNN as DNN_TILE
from fpgashare.sched.policies.copy_order import ordered_copies
from fpgashare.sched.policies.guard import side_load_allowed


@dataclass
class LoadPlan:
    """Where a frame's stages would run: resident slots, slots being loaded or busy with its
    modules, and the loads still to queue (module, victim slot)."""

    chosen: list[int | None]
    used: set[int] = field(default_factory=set)        #: every slot the frame counts on
    loads: list[tuple[str, int]] = field(default_factory=list)
    complete: bool = True                              #: every stage has a source
    ready_at: float = 0.0                              #: when all of it could be resident
    #: victim slot -> when its load would start: a frame that ends by then may stream on it first
    late: dict[int, float] = field(default_factory=dict)


def borrow_last(engine: EngineView, frame: Frame, plan: LoadPlan) -> None:
    """Queue the committing frame's loads so that victims holding a module another pending frame
    uses come last, and note when each victim's load would start (``plan.late``): a pending frame
    resident there that ends by then may stream first (rule 4: it ends before the loads it overlaps,
    and the load into its slot starts no later than planned), and its module is not evicted before
    it runs. Only the order of the committed frame's own loads changes, never their number."""
    wanted = {m for f in engine.pending if f is not frame and f.start is None for m in f.modules}
    slots = engine.slots.slots
    plan.loads.sort(key=lambda load: slots[load[1]].module in wanted)
    at = engine.now + engine.port.backlog_s()
    for _, victim in plan.loads:
        if slots[victim].module in wanted:
            plan.late[victim] = at
        at += engine.port.load_seconds(victim)


def overtaken(engine: EngineView, frame: Frame, module: str) -> bool:
    """Whether a load of ``module`` for the pending ``frame``, made now under the job on the
    stream, is certainly undone before ``frame`` runs: a frame of another pipeline, certainly
    pending when that job ends (its latest arrival by then) and due before ``frame`` (its latest
    deadline), runs first, does not use ``module`` and needs every swap slot, so its loads evict
    the copy. The load would then be made twice; not making it now is always allowed (rule 3
    only bounds side loads), and ``frame`` loads it at its commit as it would after the eviction."""
    end = engine.foresight.stream_job_end()
    if end is None or len(frame.pipeline.pass_stages) > 1:
        return False
    pins: dict[str, int] = {}
    for m in engine.contract.pinned.values():
        pins[m] = pins.get(m, 0) + 1
    swap = len(engine.slots.slots) - len(engine.contract.pinned)
    for p in engine.pipelines:
        if p is frame.pipeline or module in p.module_counts or len(p.pass_stages) > 1:
            continue
        latest = engine.foresight.next_release_s(p) + p.jitter_s
        if latest > end or latest + p.deadline_s >= frame.deadline:
            continue
        if sum(max(0, c - pins.get(m, 0)) for m, c in p.module_counts.items()) >= swap:
            return True
    return False


def prefetch_victim(engine: EngineView, reserved: set[int], target: tuple[NeedOrder, list[str], str]) -> int | None:
    future, needed, module = target
    return engine.slots.victim(module, future, keep=reserved | holding(engine, future, needed, module))


def may_load(engine: EngineView, victim: int, hidden_only: bool, module: str | None = None) -> bool:
    """Whether a prefetch (of ``module``) into ``victim`` may start now: allowed by the contract
    (guard.py) and, with ``hidden_only``, ending before the job on the stream."""
    if hidden_only:
        end = engine.foresight.stream_job_end()
        if end is None or engine.now + engine.port.load_seconds(victim) > end:
            return False
    return side_load_allowed(engine, victim, module)


def pinned_victim(engine: EngineView, frame: Frame, module: str, keep: set[int],
                  owed: Collection[int] = (), mine: bool = False, rank: bool = False) -> int | None:
    """A pinned slot an evictor's frame may load ``module`` into: idle, compatible, holding a pin
    the frame does not use, within the number of pins the contract lets it take. ``owed``: pinned
    slots whose pins an evictor's next frame is to put back (put_back_skip.py); ``mine``: they are
    this frame's, counted within that number and taken first (no further pin goes); else they are
    neither taken nor counted (the evictor they are owed to puts them back). ``rank``: of several
    pins, the one needed last."""
    contract = engine.contract
    budget = contract.evictors.get(frame.pipeline.name, 0)
    if not budget:
        return None
    slots = engine.slots
    if mine:
        for i in sorted(owed):
            if i not in keep and slots.slots[i].state in (SlotState.BLANK, SlotState.READY) \
                    and slots.compatible(i, module):
                return i
    counted = set(keep) | set(owed) if mine else set(keep) - set(owed)
    taken = sum(1 for i in counted if i in contract.pinned and slots.slots[i].module != contract.pinned[i])
    if taken >= budget:
        return None
    free = [i for i, pin in sorted(contract.pinned.items())
            if i not in keep and pin not in frame.module_counts
            and slots.slots[i].state in (SlotState.BLANK, SlotState.READY)
            and slots.slots[i].module == pin and slots.compatible(i, module)]
    if rank and len(free) > 1:
        # Which pin it takes is free (the analysis counts d_e of them, any it does not use): the one
        # needed last, so that its next frame may find the slot still its own (put_back_skip.py).
        free.sort(key=lambda i: -pin_needed_at(engine, contract.pinned[i]))
    return free[0] if free else None


def pin_needed_at(engine: EngineView, module: str) -> float:
    """The earliest a frame using ``module`` may want it: now if one is pending or streaming, else
    the earliest next release of a pipeline using it (inf if none)."""
    if any(module in f.pipeline.module_counts for f in engine.pending) \
            or any(module in f.pipeline.module_counts for f in engine.running.values()):
        return engine.now
    return min((engine.foresight.next_release_s(p) for p in engine.pipelines if module in p.module_counts),
               default=float("inf"))


def holding(engine: EngineView, future: NeedOrder, needed: list[str], upto: str) -> set[int]:
    """Slots holding a module needed before ``upto``, or by the same release as ``upto``, or
    ``upto`` itself: prefetch must not evict them (evicting one to load another the same frame needs only moves
    the load, and then it cannot be hidden). Copies are items of their own: a second copy of
    ``upto`` is due when the first chain using it twice is, and a slot's copy is needed when its
    last copy would be missed (``SlotManager.evict_key``)."""
    slots = engine.slots
    have = len(slots.ready_with(upto)) + len(slots.busy_with(upto)) + len(slots.coming_with(upto))
    target = future.copy_key(upto, have)
    keep = set()
    for s in slots.slots:
        if s.module is None or s.state not in (SlotState.READY, SlotState.BUSY):
            continue
        key = slots.evict_key(s.module, future)
        if s.module == upto or key < target or (key[0] == 1 and key[:3] == target[:3]):
            keep.add(s.index)
    return keep


def load_pins(engine: EngineView, warm_up: bool = False, owed: Collection[int] = ()) -> bool:
    """Load a pinned module its slot does not hold yet (a new admission may pin more, or a
    pin moved: pin_move.py), else a module a lend moved out of its slot (``plan_reload``).
    ``owed``: pinned slots left to an evictor's next frame (put_back_skip.py), not loaded here."""
    if not engine.contract.pinned and not engine.planned_reloads:
        return False
    for slot, module in sorted(engine.contract.pinned.items()):
        s = engine.slots.slots[slot]
        if (s.module == module and s.state in (SlotState.READY, SlotState.BUSY, SlotState.LOADING)) \
                or slot in owed:
            continue
        if s.module == DNN_TILE and s.state is SlotState.READY and not warm_up \
                and pin_lend.defer_reload(engine, slot):
            continue        # lent to the DNN for this idle gap: back by its latest start
        if s.state not in (SlotState.BLANK, SlotState.READY) or not engine.slots.can_request(slot, module):
            continue        # (a fused module's pin waits for its region's other slots to be idle)
        if warm_up or side_load_allowed(engine, slot):
            engine.load(slot, module, "pin")
            if not warm_up:
                return True
    for slot, (module, by) in sorted(engine.planned_reloads.items()):
        s = engine.slots.slots[slot]
        if engine.now + engine.port.load_seconds(slot) > by or s.module == module:
            del engine.planned_reloads[slot]          # too late to be harmless, or done
        elif s.state in (SlotState.BLANK, SlotState.READY) and not engine.slots.holds(module) \
                and engine.slots.can_request(slot, module) and side_load_allowed(engine, slot):
            del engine.planned_reloads[slot]
            engine.load(slot, module, "prefetch")
            return True
    return False


def short_of_loads(engine: EngineView, frame: Frame, missing: Sequence[str]) -> str | None:
    """``hopeless``'s second test: a reason if ``missing`` modules, loaded back to back at the
    port's fastest, would end too late."""
    exec_s = frame.remaining_s
    shortest = engine.port.shortest_load_s()
    if engine.now + len(frame.modules) * shortest + exec_s <= frame.deadline:
        return None         # even a load for every stage would leave it in time (the cheap test)
    # Copies no slot holds, runs or receives must be loaded, whoever keeps the others.
    slots = engine.slots
    new = sum(max(0, need - len(slots.ready_with(m)) - len(slots.busy_with(m)) - len(slots.coming_with(m)))
              for m, need in frame.module_counts.items() if m in missing)
    if new and engine.now + new * shortest + exec_s > frame.deadline:
        return f"cannot finish by its deadline: {new} module(s) still to load"
    return None


def warm_up(engine: EngineView) -> None:
    """Fill the blank slots with what the first frames need, each copy of a module an item of
    its own, in the order the stream would start the first releases (``copy_order.ordered_copies``): a
    chain using a module twice gets its second copy where it comes, not a module needed later.
    A copy already held (a pin, an earlier load) is skipped."""
    future = engine.foresight.played_order()
    slots = engine.slots
    for module, k in ordered_copies(engine):
        if len(slots.ready_with(module)) + len(slots.coming_with(module)) > k:
            continue
        victim = slots.victim(module, future)
        if victim is None or slots.slots[victim].state is not SlotState.BLANK:
            break
        engine.load(victim, module, "warm-up")

"""The daemon's board re-partitioned online: the same planner ``bench`` uses, adopted through a
board-wide mode change.

When a pipeline registers, the planner (runtime/sched/board/stream_plan.py) is asked for the whole set
(the pipelines admitted, in registration order, then the newcomer). If the plan admits all of them
and keeps the current partitions, the newcomer simply joins its partition (a partition's own mode
change, mode_change.py). If the plan partitions the board differently, it is adopted only through
this *re-layout*, in steps whose every state is analysed:

1. *Checked when asked.* Every partition of the plan passes the one-stream analysis with the port
   shared by all of them (``port_share`` = their number: a partition that was quiet offline may
   load now, so none is assumed quiet). And while a new partition's pins are not loaded yet, its
   frames may need every module of their chains but those pinned where they already are (a pin
   of the layout in force, kept in the same slot, is resident at the switch): each partition must
   also pass with that many loads a frame and one pin load of blocking (``transition_check``). A
   plan that fails either is not adopted; the newcomer may then still join a current partition.
2. *Old partitions until a board-idle instant.* The current partitions go on under their contracts
   until no partition has a frame waiting or streaming, a DNN batch or a load (DNN batches, lends
   and pin moves pause meanwhile). Then nothing started under the old layout is in flight.
3. *New partitions from a transition contract.* At that instant the new partitions take over with
   only the pins they keep (every frame loads what it lacks, as step 1 counted; if a kept pin was
   given back meanwhile the re-layout is refused instead) and each runs a mode
   change to its plan's contract: pins load one at a time while it is idle, and it switches at its
   next idle instant; the newcomer's registration returns at its partition's switch.
4. *Bounded.* If no board-idle instant comes within ``RELAYOUT_LIMIT_S`` the re-layout is given up
   and the newcomer refused with that reason (nothing changed meanwhile).

Pipelines keep their frames' arrival curves across the move (the curve is the app's, not the
partition's); modules stay where they are in the slots.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path

from fpgashare.catalogue.platform import Platform
from fpgashare.catalogue.workload import PipelineSpec, Workload, on_platform
from fpgashare.sched.analysis.holds import SEARCH_S, with_holds
from fpgashare.sched.analysis.schedulability import AdmissionContract, analyse, load_seconds, transition_check
from fpgashare.sched.board.stream_plan import StreamPlan, plan_streams
from fpgashare.sched.board.trials import remember
from fpgashare.sched.core.slots import SlotState

#: Longest wait, in board seconds, for an instant when the whole board is idle.
RELAYOUT_LIMIT_S = 2.0


@dataclass
class Relayout:
    """A checked plan waiting for its board-idle instant."""

    plan: StreamPlan
    verdicts: list                             #: per partition, with the shared port
    joining: PipelineSpec | None
    on_ready: Callable[[], None] | None
    on_refused: Callable[[str], None] | None
    asked_at: float


def propose(platform: Platform, admitted: list[PipelineSpec], besteffort: list[PipelineSpec],
            newcomer: PipelineSpec, cap: int, pinned_now: dict[int, str] | None = None,
            splits: bool = True, control_s: float | None = None) -> Iterator[StreamPlan]:
    """Layouts that take ``admitted`` (registration order) and ``newcomer``, best first: the
    planner's, if it admits all of them; then the board cut evenly into N partitions for each N up
    to ``cap``, each pipeline in order into the partition that admits it with the fewest loads a
    second (what a fixed split would do), where every pipeline finds one. The even splits are
    offered even when the planner's layout takes everyone: the planner does not know which modules
    are pinned where now, and a layout that keeps them may be the only one with a safe transition.
    ``splits`` False: the planner's layout only. ``control_s``: what every operation costs the
    analysis beyond its cycles (default: the shell's register traffic; the daemon adds the host's
    delay of it, ``Board.control_s``). Lazily: a caller that takes the first layout
    that passes its check pays for no split after it."""
    workload = Workload(Path("<daemon>"), platform, 0, 1.0, (*admitted, newcomer, *besteffort))
    plan = plan_streams(workload, cap, holds=False)     # budgets come with each partition's mode change
    wanted = {p.name for p in (*admitted, newcomer)}
    if wanted <= {p.name for p in plan.admitted}:
        yield _cover(platform, plan)
    if splits:
        for n in range(1, cap + 1):
            split = even_split(platform, [*admitted, newcomer], n, pinned_now or {}, control_s)
            if split is not None:
                yield split


def even_split(platform: Platform, pipelines: list[PipelineSpec], n: int,
               pinned_now: dict[int, str] | None = None, control_s: float | None = None) -> StreamPlan | None:
    """``pipelines`` placed in order on the board cut into ``n`` even partitions, or None if one
    finds no partition that admits it. A pipeline goes first to a partition that holds modules of
    its chain pinned now (``pinned_now``: board slot -> module): those pins stay resident across
    the switch, so its frames need fewer loads before the new pins are in (``check``)."""
    pinned_now = pinned_now or {}
    from fpgashare.backends.slot_view import sub_platform
    from fpgashare.errors import FpgashareError
    from fpgashare.sched.analysis.control_traffic import control_seconds
    from fpgashare.sched.board.partition_check import Partition
    from fpgashare.sched.board.partition_slots import consecutive_runs

    if not 1 <= n <= min(platform.streams, len(platform.slots)):
        return None
    parts = [Partition(k, slots) for k, slots in enumerate(consecutive_runs([s.index for s in platform.slots], n))]
    subs = [sub_platform(platform, part.slots) for part in parts]
    control_s = control_seconds(platform) if control_s is None else control_s
    kw = {"port_share": n, "board_load_s": load_seconds(platform), "control_s": control_s,
          "check_ddr": False, "few_pins": True, "afford_change": True, "afford_share": platform.streams}
    for p in pipelines:
        best = None
        for part, sub in zip(parts, subs, strict=True):
            try:
                fitted = on_platform(p, sub)
            except FpgashareError:
                continue
            verdict = analyse([*part.pipelines, fitted], sub, **kw)
            if verdict.ok:
                members = [*part.pipelines, fitted]
                rate = sum(verdict.plan.loads.get(q.name, 0) / q.period_s for q in members) if verdict.plan else 0.0
                kept = sum(1 for g in part.slots if pinned_now.get(g) in p.modules)
                rank = (-kept, rate, -verdict.slack_s, part.stream)
                if best is None or rank < best[0]:
                    best = (rank, part, fitted)
        if best is None:
            return None
        best[1].pipelines.append(best[2])
    return StreamPlan(parts)


def _cover(platform: Platform, plan: StreamPlan) -> StreamPlan:
    """``plan`` with every slot in some partition (the daemon's partitions cover the board)."""
    # Slots the plan left free join the DNN's partition, else the one with the fewest pipelines
    # (more slots never fail a partition's analysis).
    taken = {s for part in plan.partitions for s in part.slots}
    free = tuple(s.index for s in platform.slots if s.index not in taken)
    if free:
        host = min(plan.partitions, key=lambda q: (not q.dnn, len(q.pipelines), q.stream))
        parts = [replace(q, slots=tuple(sorted((*q.slots, *free)))) if q is host else q for q in plan.partitions]
        plan = replace(plan, partitions=parts)
    return plan


def check(plan: StreamPlan, platform: Platform, sub_platform, newcomer: str,
          pinned_now: dict[int, str], control_s: float | None = None) -> tuple[list, str]:
    """Per partition of ``plan``: its pipelines fitted to its slots, its verdict with the port
    shared by all of them, and the pins it keeps from the layout in force (``pinned_now``: board
    slot -> module; they are resident at the switch, so they count from the start); or the reason
    the plan cannot be adopted safely (module docstring, step 1)."""
    from collections import Counter

    from fpgashare.sched.analysis.control_traffic import control_seconds
    from fpgashare.sched.analysis.residency import residency, unpinned_loads

    kw = {"port_share": len(plan.partitions), "board_load_s": load_seconds(platform),
          "control_s": control_seconds(platform) if control_s is None else control_s}
    verdicts = []
    for part in plan.partitions:
        sub = sub_platform(part.slots)
        fitted = [on_platform(p, sub) for p in part.pipelines]
        moving = [p for p in fitted if p.name != newcomer]
        used = {m for p in fitted for m in p.modules}
        here = {k: pinned_now[g] for k, g in enumerate(part.slots) if pinned_now.get(g) in used}
        # Pins kept where they are shorten the transition; a partition that runs the DNN first
        # tries the fewest pins (its tiles need the slots).
        why = ""
        for forced in (({}, here) if part.dnn else (here, {})):
            verdict = analyse(fitted, sub, keep_pinned=forced, few_pins=part.dnn, check_ddr=False,
                              afford_change=True, afford_share=platform.streams, **kw)
            if not verdict.ok:
                why = f"stream {part.stream} of the new layout fails with the port shared: {verdict.reason}"
                continue
            keep = {k: m for k, m in verdict.contract.pinned.items() if here.get(k) == m}
            if isinstance(residency(moving, sub, Counter(keep.values()), keep), str):
                keep = {}
            loads = {p.name: unpinned_loads(p, Counter(keep.values())) for p in moving}
            transit = transition_check(moving, loads, sub, **kw)
            if transit.ok:
                verdicts.append((fitted, verdict, keep, loads))
                break
            why = (f"stream {part.stream} of the new layout could not keep its deadlines before its modules "
                   f"are pinned: {transit.reason}")
        else:
            return [], why
    return verdicts, ""


def transition_contract(verdict_contract: AdmissionContract, kept: dict[int, str]) -> AdmissionContract:
    """What a new partition runs under until its pins are in: only the pins it keeps from the
    layout before, no idle load but its change's pins, no DNN batch that could overlap a release."""
    return replace(verdict_contract, pinned=dict(kept), idle_loads=False, dnn_block_s=0.0, holds={})


def replan_test(board, spec: PipelineSpec, planner_only: bool = False,
                control_s: float | None = None, budgets: bool = True) -> Callable[[], bool]:
    """A callable that asks the planner for ``board``'s set plus ``spec`` and, if the plan keeps
    the current partitions or passes ``check``, records the choice in ``board.chosen`` and says
    True. ``planner_only``: the planner's layout alone, not the even splits (``propose``);
    ``budgets``: the verdicts taken get their hold budgets (board_admission.admission_test).
    Snapshots are taken now (the call may run off the loop's thread)."""
    platform, cap = board.platform, board.cap
    control_s = board.control_s if control_s is None else control_s
    order = list(board.order)
    besteffort = list(board.dnn_pipelines)
    current = [(tuple(v.global_slots), frozenset(p.name for p in e.members.changes.target_pipelines))
               for v, e in zip(board.views, board.parts, strict=True)]
    pinned_now = {v.global_slots[s]: m for v, e in zip(board.views, board.parts, strict=True)
                  for s, m in e.members.changes.target_contract.pinned.items()}
    trials = {tuple(v.global_slots): (k, e) for k, (v, e) in enumerate(zip(board.views, board.parts, strict=True))}
    from fpgashare.backends.slot_view import sub_platform

    def test() -> bool:
        for plan in propose(platform, order, besteffort, spec, cap, pinned_now, splits=not planner_only,
                            control_s=control_s):
            layout = [(tuple(part.slots), frozenset(p.name for p in part.pipelines if p.name != spec.name))
                      for part in plan.partitions]
            if sorted(layout) == sorted(current):
                home = next(part for part in plan.partitions if spec.name in {p.name for p in part.pipelines})
                k, engine = trials[tuple(home.slots)]
                fitted = on_platform(spec, engine.platform)
                if engine.members.admission_test(fitted, control_s)() is None:
                    if budgets:
                        engine.members.budget(fitted)
                    remember(board.chosen, spec, ("join", k, fitted))
                    return True
                continue
            verdicts, _ = check(plan, platform, lambda slots: sub_platform(platform, slots), spec.name, pinned_now,
                                control_s)
            if verdicts:
                if budgets:     # each partition's switch to its plan's contract brings its budgets
                    until = time.monotonic() + SEARCH_S
                    verdicts = [(fitted, with_holds(v, fitted, dnn=part.dnn, until=until), keep, loads)
                                for (fitted, v, keep, loads), part in zip(verdicts, plan.partitions, strict=True)]
                remember(board.chosen, spec, ("relayout", Relayout(plan, verdicts, spec, None, None, 0.0)))
                return True
        return False

    return test


def kept_in_place(board, relayout: Relayout) -> bool:
    """Whether every pin the plan keeps from the layout in force is resident where it was counted
    (a departure since the check may have given one back)."""
    slots = {v.global_slots[i]: s for v, e in zip(board.views, board.parts, strict=True)
             for i, s in enumerate(e.slots.slots)}
    return all(slots[part.slots[k]].module == m and slots[part.slots[k]].state in (SlotState.READY, SlotState.BUSY)
               for part, (_, _, kept, _) in zip(relayout.plan.partitions, relayout.verdicts, strict=True)
               for k, m in kept.items())


def board_idle(board) -> bool:
    """No partition has a frame that has not ended (waiting, held to its curve, on the fabric or
    the host), a DNN batch, a load, or a mode change under way."""
    return all(e.idle() and not e.frames and not e.cpu_jobs.running and not e.members.changes.active
               for e in board.parts)


def adopt(board, relayout: Relayout) -> None:
    """Step 3 of the module docstring, at a board-idle instant: the plan's partitions replace the
    current ones."""
    old = list(zip(board.views, board.parts, strict=True))
    slots = {v.global_slots[i]: s for v, e in old for i, s in enumerate(e.slots.slots)}
    # A fused region's members point at their host by the partition's own slot numbers: by board slot here.
    hosts = {v.global_slots[i]: v.global_slots[s.host] for v, e in old for i, s in enumerate(e.slots.slots)
             if s.host is not None}
    hosted = set(hosts.values())
    moving = {p.name: (e, e.members.pipeline_state(p.name)) for _, e in old for p in e.pipelines}
    besteffort = [(p, e) for _, e in old for p in e.dnn_pipelines]
    host = [(p, e) for _, e in old for p in e.cpu_pipelines]
    board.retired += old
    board.build([tuple(part.slots) for part in relayout.plan.partitions])
    board.home.clear()
    for k, (view, engine) in enumerate(zip(board.views, board.parts, strict=True)):
        engine.want_output = old[0][1].want_output
        here = list(view.global_slots)
        for i, slot in enumerate(engine.slots.slots):
            g = here[i]
            was = slots[g]
            slot.state, slot.module, slot.last_used = was.state, was.module, was.last_used
            members = [m for m, h in hosts.items() if h == g]
            if g in hosts:
                slot.host = here.index(hosts[g]) if hosts[g] in here else None
            if (g in hosts and hosts[g] not in here) or (g in hosted and not all(m in here for m in members)):
                # a fused module cut by the new partitions is not counted on: loaded again if wanted
                slot.state, slot.module, slot.host = SlotState.BLANK, None, None
        fitted, verdict, kept, loads = relayout.verdicts[k]
        engine.placement.set_contract(transition_contract(verdict.contract, kept))
        staying = [p for p in fitted if p.name in moving]
        for p in staying:
            engine.members.adopt(p, moving[p.name][1])
            board.home[p.name] = k
        engine.members.changes.loads = {p.name: loads[p.name] for p in staying}
        engine.pipelines_changed()
        joining = next((p for p in fitted if relayout.joining is not None and p.name == relayout.joining.name), None)
        if joining is not None:
            board.home[joining.name] = k
        engine.members.changes.ask(verdict, [*staying, *([joining] if joining else [])], joining,
                           relayout.on_ready if joining else None)
    # The DNN goes where the plan put it (the planner gave that partition its slots for it).
    planned = [k for k, part in enumerate(relayout.plan.partitions) if part.dnn]
    home = (planned[0] if planned else board.dnn_home()) if besteffort else 0
    for p, was in besteffort:
        target = board.parts[home]
        target.dnn_pipelines.append(p)
        target.dnn_images[p.name] = was.dnn_images.get(p.name, 0)
        target.dnn.queue[p.name] = was.dnn.queue.pop(p.name, [])
        board.home[p.name] = home
    for p, was in host:
        board.parts[0].cpu_pipelines.append(p)
        if p.name in was.source.host_nets:
            board.parts[0].source.host_nets[p.name] = was.source.host_nets[p.name]
        board.home[p.name] = 0
    board.give_spare_stream()       # the new layout's spare stream, if any, to the DNN's partition
    board.relayouts += 1


def step_relayout(board) -> None:
    """Adopt the waiting re-layout at a board-idle instant, or give it up once too late."""
    relayout = board.relayout
    board.hold_partitions(relayout is not None)
    if relayout is None:
        return
    if board_idle(board) and not kept_in_place(board, relayout):
        board.relayout = None
        board.hold_partitions(False)
        board.order = [p for p in board.order if p.name != relayout.joining.name]
        join_instead(board, relayout, "the modules its new partitions counted on were given back meanwhile")
    elif board_idle(board):
        board.relayout = None
        board.hold_partitions(False)
        adopt(board, relayout)
        for engine in board.parts:
            engine.after_dispatch()
        board.arbiter.grant()
    elif board.clock.now() - relayout.asked_at > RELAYOUT_LIMIT_S:
        board.relayout = None
        board.hold_partitions(False)
        board.order = [p for p in board.order if p.name != relayout.joining.name]
        why = f"the board was never idle within {RELAYOUT_LIMIT_S:g} s to change its partitions"
        join_instead(board, relayout, why)


def join_instead(board, relayout: Relayout, why: str) -> None:
    """The re-layout for a newcomer was given up: it joins a partition in force if one admits
    it now (analysed against the set as it is), else it is refused with ``why``."""
    spec = relayout.joining
    refusal = board.admission_test(spec, replan=False, budgets=False)()      # on the loop: no budgets
    if refusal is None:
        board.add_pipeline(spec, admitted=True, on_ready=relayout.on_ready, on_refused=relayout.on_refused)
    elif relayout.on_refused is not None:
        relayout.on_refused(f"{why} for {spec.name}, and no partition in force admits it: {refusal}")

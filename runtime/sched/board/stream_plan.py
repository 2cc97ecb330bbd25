"""Admission over several video streams: real-time pipelines are partitioned onto streams, each
stream with slots of its own, and every partition must pass the one-stream analysis.

Why partitions (the README's "Admitted means guaranteed, on S streams" gives the whole argument):

- A partition is a stream and a disjoint set of slots. Its frames and loads use only its own
  slots and stream, so inside it the one-stream model of ``analysis.py`` holds as it is: one
  non-preemptive job at a time on a virtual processor, a frame's loads before its stream.
- What partitions share is the configuration port. Loads are granted round-robin over the
  partitions and each keeps at most one load queued or in flight (``port_share.py``), so a load
  ends within ``L + (P - 1) x L_board`` of its request (P partitions that load; L the partition's
  longest load, L_board the board's). Each partition is analysed with that as its load time
  (``analyse(port_share=P, board_load_s=...)``): every term that counts a load counts the wait too.
- Pin moves (``pin_move.py``) assume the port is free when the job on the stream ends; with other
  partitions loading it may not be, so they are off while another partition loads.
- DDR bandwidth is shared by every stream: the admitted frames of all partitions together must fit
  the budget (``analysis.ddr_budget``).

Pipelines are taken in registration order and an earlier one is never evicted. A pipeline goes to
an existing partition that stays *quiet* with it (every module pinned: it never loads after the
first release, so it costs the others no port time), the one with most slack; else to a new
partition on a free stream with as many free slots as pin its whole chain (fewer if fewer are
free, never fewer than its longest pass); else to the existing partition that loads least for it;
else to one grown by free slots; else it is refused with the reason of the last try.
Adding a partition raises P for every partition, so every partition is checked again each time
(a partition's verdict, quiet or at the share, remembered across plans: ``partition_check.py``).
Best-effort DNN work gets its own partition from the streams and tile slots left; failing that it
backfills inside the real-time partition with the most slack, which then pins as few modules as
it can (as on one stream).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from fpgashare.backends.slot_view import sub_platform
from fpgashare.catalogue.platform import Platform
from fpgashare.catalogue.workload import PipelineSpec, Workload
from fpgashare.dnn.planning import dnn_plan
from fpgashare.sched.analysis.holds import with_holds
from fpgashare.sched.analysis.schedulability import Verdict, analyse
from fpgashare.sched.board.partition_check import Partition, all_pass, check, loaders, phased_plans, quiet_verdict
from fpgashare.sched.board.partition_slots import ddr_refusal, new_slots
from fpgashare.sched.policies.backfill import DNN, refusal


@dataclass
class StreamPlan:
    partitions: list[Partition]
    rejected: list[dict] = field(default_factory=list)     #: {"name", "reason"}

    @property
    def admitted(self) -> list[PipelineSpec]:
        return [p for part in self.partitions for p in part.pipelines]


def plan_streams(workload: Workload, streams: int, phased: bool = False, spare_stream: bool = False,
                 holds: bool = True) -> StreamPlan:
    """Partition ``workload``'s real-time pipelines over ``streams`` streams (module docstring), or
    keep them on one stream with every slot when that admits more (partitioning splits the slots,
    and a chain that needs them all, or a set that shares modules, can fit only one partition).
    ``phased``: the workload's frames are released as written (``analyse(phased=True)``; not for a
    daemon's streams). ``spare_stream``: a real-time partition hosting the DNN gets a stream no
    partition uses for its batches (``with_spare_stream``; a run of the plan's partitions, not a
    daemon's layout). ``holds``: each partition's contract also gets the hold budgets its slack
    allows, once the plan is made (runtime/sched/analysis/holds.py; a daemon's partitions get
    theirs with each mode change instead: runtime/sched/analysis/mode_change.py)."""
    plan = spread_plan(workload, streams, phased)
    if streams > 1:
        one = one_stream(workload, phased, holds=False)
        if (len(one.admitted), -_load_rate(one)) > (len(plan.admitted), -_load_rate(plan)):
            plan = one
    if holds:
        for part in plan.partitions:
            if part.verdict is not None:
                part.verdict = with_holds(part.verdict, part.pipelines, dnn=part.dnn, phased=phased)
    return with_spare_stream(plan, workload.platform, streams) if spare_stream else plan


def with_spare_stream(plan: StreamPlan, platform: Platform, streams: int) -> StreamPlan:
    """``plan`` with a stream no partition uses handed to the real-time partition that hosts the
    DNN, if there is one: its batches run on that stream, beside the partition's frames
    (runtime/sched/policies/backfill.py, ``beside_pass``; docs/guarantee.md, "On several streams",
    item 7). The analysis of every partition is unchanged: the DNN's batches take no port time,
    and their register traffic is one stream's, which *X* already counts for every stream."""
    streams = max(1, min(streams, platform.streams))
    used = {part.stream for part in plan.partitions}
    spare = [k for k in range(streams) if k not in used]
    host = next((part for part in plan.partitions if part.dnn and part.pipelines), None)
    if host is not None and spare:
        host.dnn_stream = spare[0]
    return plan


def _load_rate(plan: StreamPlan) -> float:
    """Loads per second the plan's frames may need at most (the analysis's n_i / T_i)."""
    return sum(_loads_per_s(part.verdict, part.pipelines) for part in plan.partitions)


def _loads_per_s(verdict: Verdict | None, pipelines: list[PipelineSpec]) -> float:
    if verdict is None or verdict.plan is None:
        return 0.0
    return sum(verdict.plan.loads[p.name] / p.period_s for p in pipelines)


def one_stream(workload: Workload, phased: bool = False, holds: bool = True) -> StreamPlan:
    """Every slot and one stream: the one-stream admission (runtime/sched/analysis/admission.py) as a plan."""
    from fpgashare.sched.analysis.admission import admit

    admission = admit(workload, phased=phased, holds=holds)
    part = Partition(0, tuple(s.index for s in workload.platform.slots), list(admission.admitted),
                     admission.verdict or analyse([], workload.platform), dnn=_runs_dnn(workload))
    return StreamPlan([part], admission.rejected)


def _runs_dnn(workload: Workload) -> bool:
    """Whether ``workload`` has best-effort DNN work its platform has a tile slot for."""
    return any(not p.realtime for p in workload.pipelines) and refusal(
        workload.platform, [p.model for p in workload.pipelines if not p.realtime]) is None


def idle_fraction(part: Partition) -> float:
    """The share of its stream's time ``part``'s real-time frames leave."""
    return max(0.0, 1.0 - sum(p.exec_s / p.period_s for p in part.pipelines))


def spread_plan(workload: Workload, streams: int, phased: bool = False) -> StreamPlan:
    """The partitioned plan alone (module docstring); ``plan_streams`` may prefer one stream."""
    with phased_plans(phased):
        return _spread(workload, streams)


def _spread(workload: Workload, streams: int) -> StreamPlan:
    platform = workload.platform
    streams = max(1, min(streams, platform.streams, len(platform.slots)))
    dnn = _runs_dnn(workload)
    parts: list[Partition] = []
    rejected: list[dict] = []
    free = [s.index for s in platform.slots]
    ddr = 0.0
    for p in (q for q in workload.pipelines if q.realtime):
        rate = p.ddr_bytes_per_frame / p.period_s
        refusal = ddr_refusal(platform, ddr + rate)
        if refusal:
            rejected.append({"name": p.name, "reason": refusal})
            continue
        placed, reason = _place(p, parts, free, platform, streams, dnn)
        if placed:
            ddr += rate
        else:
            rejected.append({"name": p.name, "reason": reason})
    if dnn:
        _place_dnn(parts, free, platform, streams)
    _spread_free(parts, free, platform)
    if not parts:        # nothing admitted: one partition of every slot (the DNN's, if any)
        parts = [Partition(0, tuple(free), dnn=dnn)]
    share = max(1, loaders(parts, platform))
    for part in parts:
        part.verdict = _final_check(part, platform, share, streams + 1)
    return StreamPlan(parts, rejected)


def _final_check(part: Partition, platform: Platform, share: int, widest: int) -> Verdict:
    """``part``'s verdict with the partitions that load sharing the port, or, if that fails, at the
    narrowest wider share that passes (placement checked it at most at ``widest``). A wider share
    counts every load longer than the port will make it, which only overstates the analysis's
    terms, so its contract holds with the shorter loads. The fallback is needed for frames
    committed before their known release (early_commit.py): their lead is sized with the load
    time, so a shorter load can fail a test a longer one passes."""
    verdict = _widened(part, platform, share, widest)
    if not verdict.ok:
        raise RuntimeError(f"stream {part.stream}'s admitted set fails its final check: {verdict.reason}")
    return verdict


def _widened(part: Partition, platform: Platform, share: int, widest: int) -> Verdict:
    """``part``'s verdict at the narrowest passing share from ``share`` to ``widest``, else the widest's."""
    for s in range(share, max(share, widest) + 1):
        verdict = check(part, platform, s)
        if verdict.ok:
            return verdict
    return verdict


def _final_pass(parts: list[Partition], platform: Platform, widest: int) -> bool:
    """Whether ``parts``, as the final plan, would pass ``_final_check`` (every partition)."""
    share = max(1, loaders(parts, platform))
    return all(_widened(part, platform, share, widest).ok for part in parts)


def _share(parts: list[Partition], dnn: bool, streams: int) -> int:
    """1 while a stream may still be left for the DNN's own partition (it loads tiles), else 0."""
    return 1 if dnn and len(parts) < streams and not any(q.dnn for q in parts) else 0


def _place(p: PipelineSpec, parts: list[Partition], free: list[int], platform: Platform, streams: int,
           dnn: bool) -> tuple[bool, str]:
    """Put ``p`` into a partition (changing ``parts`` and ``free``) if every partition then passes:
    an existing partition that stays quiet with it, else a new one on a free stream, else the
    existing partition that loads least for it, else one grown by free slots."""
    reason = "no partition's stream and slots can take it"
    share = _share(parts, dnn, streams)
    quiet: list[tuple[float, Partition]] = []
    loading: list[tuple[tuple[float, float], Partition]] = []
    for part in parts:
        trial = replace(part, pipelines=[*part.pipelines, p])
        verdicts, why = all_pass([trial if q is part else q for q in parts], platform, share)
        if not verdicts:
            reason = why
            continue
        v = verdicts[parts.index(part)]
        if quiet_verdict(trial, platform) is not None:
            quiet.append((-v.slack_s, part))
        else:
            loading.append(((_loads_per_s(v, trial.pipelines), -v.slack_s), part))
    if quiet:
        min(quiet, key=lambda c: c[0])[1].pipelines.append(p)
        return True, ""
    if len(parts) < streams:
        options = new_slots(p, platform, free)
        for slots in options:
            trial = Partition(len(parts), slots, [p])
            verdicts, why = all_pass([*parts, trial], platform, _share([*parts, trial], dnn, streams))
            if verdicts:
                parts.append(trial)
                free[:] = [s for s in free if s not in slots]
                return True, ""
            reason = why
        if not options and not parts:
            reason = f"its chain does not fit the {len(free)} slot(s) of {platform.name}"
    if loading:
        min(loading, key=lambda c: c[0])[1].pipelines.append(p)
        return True, ""
    for part in parts:
        for extra in range(1, len(free) + 1):
            trial = replace(part, pipelines=[*part.pipelines, p], slots=tuple(sorted((*part.slots, *free[:extra]))))
            verdicts, why = all_pass([trial if q is part else q for q in parts], platform, share)
            if verdicts:
                part.pipelines, part.slots = trial.pipelines, trial.slots
                del free[:extra]
                return True, ""
    return False, reason + (f" ({len(parts)} of {streams} stream(s) taken)" if streams > 1 else "")


def _spread_free(parts: list[Partition], free: list[int], platform: Platform) -> None:
    """Slots no partition took go, one at a time, to a partition that loads, if it then loads less
    (more of its modules pinned) and every partition still passes."""
    for slot in list(free):
        share = max(1, loaders(parts, platform))
        best: tuple[float, Partition] | None = None
        for part in parts:
            if part.dnn or quiet_verdict(part, platform) is not None or not part.pipelines:
                continue
            before = check(part, platform, share)
            trial = replace(part, slots=tuple(sorted((*part.slots, slot))))
            verdicts, _ = all_pass([trial if q is part else q for q in parts], platform, 0)
            if not verdicts or before.plan is None:
                continue
            after = verdicts[parts.index(part)]
            gain = _loads_per_s(before, part.pipelines) - _loads_per_s(after, part.pipelines)
            if gain > 0 and (best is None or gain > best[0]):
                best = (gain, part)
        if best is not None:
            best[1].slots = tuple(sorted((*best[1].slots, slot)))
            free.remove(slot)


def _place_dnn(parts: list[Partition], free: list[int], platform: Platform, streams: int) -> None:
    """Best-effort DNN work: its own partition from the free tile slots on a free stream; else the
    real-time partition with the most slack takes it (and any free slots) if it still passes.
    (Choosing the partition with the highest bound instead, ``dnn_bound_of``, gave the same DNN
    rate on ``multicam_edge_cnn_zcu104`` with twice the tile swaps: the bound counts loads free.)"""
    tiles = [s for s in free if platform.slot(s).name in platform.module(DNN).slots]
    if tiles and len(parts) < streams:
        parts.append(Partition(len(parts), tuple(free), dnn=True))
        free.clear()
        return
    by_slack = sorted(parts, key=lambda q: -(check(q, platform, len(parts)).slack_s))
    for part in by_slack:
        trial = replace(part, dnn=True, slots=tuple(sorted((*part.slots, *free))))
        # Judged as the final check judges it: a partition admitted at a wider share (a frame
        # committed early may pass only there) may host the DNN at that share too.
        if _final_pass([trial if q is part else q for q in parts], platform, streams + 1):
            part.dnn, part.slots = True, trial.slots
            free.clear()
            return


def dnn_bound_of(part: Partition, platform: Platform, models: list[str]) -> float:
    """Images per second the DNN could get at most in ``part``: the stream time its frames leave,
    at the partitioner's fastest chain over its tile slots (fill latency and loads free)."""
    sub = sub_platform(platform, part.slots)
    tiles = len(sub.slots_for(DNN))
    if not tiles or not models:
        return 0.0
    return idle_fraction(part) * max(dnn_plan(sub, m, tiles).images_per_s for m in models)

"""A partition of a stream plan and its verdict: the one-stream analysis of its pipelines on its
slots, with the configuration port shared by the partitions that load, remembered across plans.

A partition is *quiet* when its analysis pins every module its chains use: it never loads after
the first release, so it takes no port time from the others and is not counted in the share
(``quiet_verdict``). Every other partition is analysed with the port shared by all that load
(``check``, ``all_pass``; the argument for the share is runtime/sched/board/stream_plan.py's).
With known phases (``phased_plans``) a partition the plain test refuses is tried with the phased
tests too: evicting plans, pinned frames first, frames committed before their release.
runtime/sched/board/stream_plan.py places pipelines into partitions with these verdicts.
"""

from __future__ import annotations

import contextvars
import threading
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from fpgashare.backends.slot_view import sub_platform
from fpgashare.catalogue.platform import Platform
from fpgashare.catalogue.workload import PipelineSpec
from fpgashare.sched.analysis.control_traffic import control_seconds
from fpgashare.sched.analysis.evicting_pins import analyse_evicting
from fpgashare.sched.analysis.pinned_first import analyse_pinned_first
from fpgashare.sched.analysis.schedulability import Verdict, analyse, load_seconds


@dataclass
class Partition:
    """One stream and the slots only its work uses."""

    stream: int
    slots: tuple[int, ...]                    #: the board's slot indices
    pipelines: list[PipelineSpec] = field(default_factory=list)
    verdict: Verdict | None = None            #: the analysis of its pipelines on its slots
    dnn: bool = False                         #: best-effort DNN work runs here too
    #: a stream no partition uses, on which this partition's DNN batches run beside its frames
    dnn_stream: int | None = None

    @property
    def quiet(self) -> bool:
        """Every module its chains use pinned: no load after the first release."""
        v = self.verdict
        return not self.dnn and v is not None and v.plan is not None and not any(v.plan.loads.values())


#: Verdicts by (platform, pipelines, slots, share, dnn, phased), least recently used dropped first.
#: Trials re-check the partitions they leave alone, and a daemon's re-plan at each registration
#: places the same admitted pipelines in the same order again, so across calls only the trials
#: with the newcomer are new. The analysis is a function of the key alone (frozen specs and
#: platforms). Keys hold object ids: each entry keeps its pipelines and platform alive, so no id
#: in a key can belong to another object while the entry exists.
#: Plans are made on a daemon's worker threads (a trial past its time limit still finishes on its
#: worker while the next one starts), so the memo is used under a lock.
_MEMO: OrderedDict[tuple, tuple[Verdict, tuple[PipelineSpec, ...], Platform]] = OrderedDict()
_MEMO_ENTRIES = 4096
_MEMO_LOCK = threading.Lock()

#: Whether the plan being made may use the phased test (``analyse(phased=True)``): set for the
#: length of one ``plan_streams`` / ``spread_plan`` call (``phased_plans``; a part of ``_MEMO``'s
#: keys); a context variable, so a plan made on one thread never sees another thread's setting.
_PHASED: contextvars.ContextVar[bool] = contextvars.ContextVar("fpgashare_plan_phased", default=False)


@contextmanager
def phased_plans(phased: bool) -> Iterator[None]:
    """Within it, the verdicts of this thread's (or task's) plan may use the phased test
    (``analyse(phased=True)``): the workload's frames are released as written."""
    token = _PHASED.set(phased)
    try:
        yield
    finally:
        _PHASED.reset(token)


def _analyse(part: Partition, platform: Platform, share: int) -> Verdict:
    phased = _PHASED.get()
    key = (id(platform), tuple(id(p) for p in part.pipelines), part.slots, share, part.dnn, phased)
    with _MEMO_LOCK:
        hit = _MEMO.get(key)
        if hit is not None:
            _MEMO.move_to_end(key)
            return hit[0]
    args = dict(few_pins=part.dnn, port_share=share, check_ddr=False, board_load_s=load_seconds(platform),
                control_s=control_seconds(platform), phased=phased)
    view = sub_platform(platform, part.slots)
    verdict = analyse(part.pipelines, view, **args)
    if not verdict.ok and phased:     # known phases (bench): evicting plans, pinned frames first
        other = analyse_evicting(part.pipelines, view, phased=True, port_share=share,
                                 board_load_s=load_seconds(platform), control_s=control_seconds(platform))
        verdict = other if other.ok else verdict
    if not verdict.ok and phased:
        other = analyse_pinned_first(part.pipelines, view, **args)
        verdict = other if other.ok else verdict
    if not verdict.ok and phased:     # frames committed before their known release
        other = analyse(part.pipelines, view, early_commit=True, **args)
        verdict = other if other.ok else verdict
    if not verdict.ok and phased:
        other = analyse_evicting(part.pipelines, view, phased=True, port_share=share, early_commit=True,
                                 board_load_s=load_seconds(platform), control_s=control_seconds(platform))
        verdict = other if other.ok else verdict
    with _MEMO_LOCK:
        _MEMO[key] = (verdict, tuple(part.pipelines), platform)
        if len(_MEMO) > _MEMO_ENTRIES:
            _MEMO.popitem(last=False)
    return verdict


def quiet_verdict(part: Partition, platform: Platform) -> Verdict | None:
    """The verdict that pins every module ``part``'s chains use, if it passes: such a partition
    never loads once its pins are in (before the first release), so it takes no port time from the
    others and nobody's loads delay it (its engine is told: ``Engine.loads_after_t0``)."""
    if part.dnn:
        return None
    v = _analyse(part, platform, 1)
    return v if v.ok and v.plan is not None and not any(v.plan.loads.values()) else None


def check(part: Partition, platform: Platform, share: int) -> Verdict:
    """``part``'s verdict with the port shared by ``share`` partitions that load: the quiet one if
    it passes (then the share does not matter), else the analysis at that share."""
    return quiet_verdict(part, platform) or _analyse(part, platform, share)


def loaders(parts: list[Partition], platform: Platform) -> int:
    """Partitions that may load after the first release (every one but the quiet ones)."""
    return sum(quiet_verdict(q, platform) is None for q in parts)


def all_pass(parts: list[Partition], platform: Platform, extra: int) -> tuple[list[Verdict], str]:
    """Every partition's verdict, the port shared by the partitions that load (and ``extra`` more:
    the DNN's own, while a stream may still be left for it), or the first failure's reason."""
    share = max(1, loaders(parts, platform) + extra)
    verdicts = []
    for part in parts:
        v = check(part, platform, share)
        if not v.ok:
            return [], v.reason
        verdicts.append(v)
    return verdicts, ""

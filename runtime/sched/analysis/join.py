"""How a newcomer joins a running partition's set: the analysis of the set with it, keeping the
pins in force where they are; the check that the set in force affords the new pins' loads meanwhile
(mode_change.py, step 1); and, where the pins in force leave it no room, giving some back first.

Giving pins back.

Pins are kept across a partition's mode changes (mode_change.py), so a set whose pins fill the
slots refuses every newcomer whose chain needs a slot of its own, although the set with fewer pins
and the newcomer would pass the analysis. Such a join is made in two analysed changes:

1. *Give back.* The set in force switches, at an idle instant, to a contract C1 whose pins are a
   subset of those in force, C (``first``). C1 passed the analysis for the set in force alone;
   nothing is loaded, so no transition blocking is added, and once switched, every busy period is
   one C1's analysis covers. A pin of C that C1 drops is never replaced by another module before
   the switch (C1 only drops), so C holds in full until then.
2. *Join.* The newcomer's change to C' (``then``, pins a superset of C1's) follows as any other:
   C' pins load while the partition is idle, and the set in force under C1 must afford one pin
   load of blocking meanwhile (``transition_check`` with C1's loads).

Which pins to keep: those the analysis of the set with the newcomer chose freely (no pins imposed)
at the same slot; the rest are given back.
"""

from __future__ import annotations

from collections.abc import Sequence

from fpgashare.catalogue.platform import Platform
from fpgashare.catalogue.workload import PipelineSpec
from fpgashare.sched.analysis.schedulability import Verdict, analyse, transition_check


def join_giving_back(before: Sequence[PipelineSpec], newcomer: PipelineSpec, platform: Platform,
                     pinned: dict[int, str], analysis_kw: dict) -> tuple[Verdict, Verdict] | str:
    """(C1, C') for a join that first gives back pins of ``pinned`` (module docstring), or why not."""
    kw = {**analysis_kw, "few_pins": True, "afford_change": True}
    candidate = [*before, newcomer]
    free = analyse(candidate, platform, **kw)
    if not free.ok:
        return free.reason
    kept = {s: m for s, m in pinned.items() if free.contract.pinned.get(s) == m}
    if kept == pinned:
        return "the pins in force already leave it room"
    first = analyse(list(before), platform, keep_pinned=kept, **kw)
    if not first.ok:
        return f"the pipelines admitted now would not keep their deadlines with fewer pins: {first.reason}"
    if not set(first.contract.pinned.items()) < set(pinned.items()):
        return "giving pins back would need other pins first, or gives none back"
    then = analyse(candidate, platform, keep_pinned=dict(first.contract.pinned), **kw)
    if not then.ok:
        return then.reason
    if set(then.contract.pinned.items()) - set(first.contract.pinned.items()):
        loads = dict(first.plan.loads) if first.plan is not None else {p.name: 0 for p in before}
        check = transition_check(list(before), loads, platform,
                                 **{k: v for k, v in analysis_kw.items() if k != "check_ddr"})
        if not check.ok:
            return (f"no safe mode change: while {newcomer.name}'s pinned modules load, the pipelines "
                    f"admitted now would not keep their deadlines with fewer pins ({check.reason})")
    return first, then


def join_verdict(before: Sequence[PipelineSpec], loads: dict[str, int], newcomer: PipelineSpec,
                 platform: Platform, pinned: dict[int, str], analysis_kw: dict,
                 afford_share: int | None) -> tuple[Verdict, Verdict | None, str | None]:
    """(C', the give-back step before it or None, why not) for ``newcomer`` joining ``before``
    (whose frames need ``loads`` loads under the contract in force, whose pins are ``pinned``)."""
    verdict = analyse([*before, newcomer], platform, keep_pinned=pinned, few_pins=True, afford_change=True,
                      afford_share=afford_share, **analysis_kw)
    if verdict.ok and set(verdict.contract.pinned.items()) - set(pinned.items()):
        # New pins load beside the frames of the set in force: it must afford one load of
        # blocking per busy period meanwhile (mode_change.py).
        check = transition_check(list(before), loads, platform,
                                 **{k: v for k, v in analysis_kw.items() if k != "check_ddr"})
        if not check.ok:
            return verdict, None, (f"no safe mode change: while {newcomer.name}'s pinned modules load, the "
                                   f"pipelines admitted now would not keep their deadlines ({check.reason})")
    if not verdict.ok and pinned and before:
        steps = join_giving_back(before, newcomer, platform, pinned, analysis_kw)
        if not isinstance(steps, str):
            return steps[1], steps[0], None
    return verdict, None, None if verdict.ok else verdict.reason

"""Pinned frames first: admission for a rule under which a frame that loads nothing is not
blocked by another frame's loads.

Under the plain contract (runtime/sched/analysis/schedulability.py) a committed frame's loads and
its stream are one non-preemptive job: a more urgent frame arriving while it loads waits for the
whole of it, loads included, even if that frame needs no load at all. A pipeline with a short
deadline whose modules are all pinned is then refused for the loads of a less urgent one (a
camera frame of 4.6 ms due 5.9 ms after release, behind another pipeline's two 1.3 ms loads).

Under the *pinned-first* rule (the contract's ``pinned_first``; ``EdfPolicy`` through
runtime/sched/policies/pinned_first.py) the most urgent pending frame, if every stage of it is in the slot pinned
for its module, starts streaming as soon as the stream is free, also while a less urgent frame is
committed; the committed frame's loads go on (they use swap slots and the port, which the pinned
frame does not), and it streams after. Nothing else changes: a frame that needs a load still
commits only onto a free stream and keeps the port until it streams; borrowing, idle loads and
DNN batches are as before.

The test is the same processor demand test (phase-free, and phased where phases are known) with
another blocking term (``processor_demand.PinnedFirst``), for a window [t0, d]:

- if every frame due in the window loads nothing: one stream job (a frame's stream, not its
  loads), ``max {Ĉ_j : D_j > t}``: such frames need only the stream, and after t0 the stream
  serves only them (a committed frame streams only when no more urgent frame is ready);
- else: one job as before (``max S_j``), or a pinned frame's stream followed by a committed
  frame's stream (the pinned frame started while the other loaded: ``max Ĉ_pinned + max Ĉ``).

docs/guarantee.md, "Pinned frames first", gives the argument. ``admit(phased=True)`` and the
partitioned plan (runtime/sched/board/stream_plan.py) try it where the plain test refuses; a
daemon's admission keeps the plain rule.
"""

from __future__ import annotations

from collections.abc import Sequence

from fpgashare.catalogue.platform import Platform
from fpgashare.catalogue.workload import PipelineSpec
from fpgashare.sched.analysis.schedulability import Verdict, analyse


def analyse_pinned_first(pipelines: Sequence[PipelineSpec], platform: Platform, **kwargs) -> Verdict:
    """``analyse`` with the pinned-first rule's test (module docstring): its verdict, whose
    contract has ``pinned_first`` set when it admits. ``kwargs``: as for ``analyse``."""
    return analyse(pipelines, platform, pinned_first=True, **kwargs)

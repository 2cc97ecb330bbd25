"""FRED's static binding of pipelines to partitions (runtime/sched/policies/fred.py runs each
partition): the plan a FRED user configures by hand, made here so the policy sees only its
partition's engine (docs/layout.md: a policy imports the view, never the board).

Partitions: as many as the streams and slots allow with every chain's longest pass fitting (slots
split evenly into runs of consecutive slots), pipelines bound to the least loaded partition their
chain fits, heaviest first. No admission: every real-time pipeline is bound somewhere (to the
first partition if it fits none), as FRED admits everything.

Whoever builds a run of a policy on several streams asks ``binding_of`` for the policy's own
binding (bench); a policy without one (edf) is placed by its admission (stream_plan.py).
"""

from __future__ import annotations

from collections.abc import Callable

from fpgashare.backends.slot_view import sub_platform
from fpgashare.catalogue.passes import fits
from fpgashare.catalogue.platform import Platform
from fpgashare.catalogue.workload import PipelineSpec, Workload
from fpgashare.sched.board.partition_check import Partition
from fpgashare.sched.board.partition_slots import consecutive_runs
from fpgashare.sched.board.stream_plan import StreamPlan
from fpgashare.sched.core.policy import Policy
from fpgashare.sched.policies.fred import FredPolicy

#: A space-sharing policy's own binding of a workload's pipelines to partitions on ``streams`` streams.
Binding = Callable[[Workload, int], StreamPlan]


def _fits(p: PipelineSpec, platform: Platform, slots: tuple[int, ...]) -> bool:
    """Whether every pass of ``p`` fits ``slots`` at once."""
    sub = sub_platform(platform, slots)
    return all(fits(stages, sub) for stages in p.pass_modules)


def fred_partitions(workload: Workload, streams: int) -> StreamPlan:
    """FRED's partitions of ``workload`` on at most ``streams`` streams (module docstring)."""
    platform = workload.platform
    realtime = [p for p in workload.pipelines if p.realtime]
    slots = [s.index for s in platform.slots]
    longest = max((len(m) for p in realtime for m in p.pass_modules), default=1)
    count = max(1, min(streams, platform.streams, len(slots) // max(1, longest), len(realtime)))
    groups = consecutive_runs(slots, count)
    parts = [Partition(k, g) for k, g in enumerate(groups)]
    load = [0.0] * count
    for p in sorted(realtime, key=lambda q: -q.exec_s / q.period_s):
        fitting = [k for k in range(count) if _fits(p, platform, groups[k])] or [0]
        k = min(fitting, key=lambda i: load[i])
        parts[k].pipelines.append(p)
        load[k] += p.exec_s / p.period_s
    return StreamPlan(parts)


#: The policies that bind pipelines to partitions by a rule of their own, not by an admission.
BINDINGS: dict[type[Policy], Binding] = {FredPolicy: fred_partitions}


def binding_of(policy: Policy) -> Binding | None:
    """``policy``'s own binding of pipelines to partitions, or None (it has none: edf's admission
    places pipelines, the other baselines run on one stream)."""
    return BINDINGS.get(type(policy))

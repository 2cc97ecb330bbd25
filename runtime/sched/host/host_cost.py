"""The host as a resource: the daemon's own time per frame and per load, and the check that the
set it admits leaves the host able to answer every frame in time.

The daemon is one thread (an event loop, runtime/daemon/server.py). Every frame costs it work of
its own beside the fabric's: reading the submit, handing the frame to the engine, starting the
stream, ending it, copying the output into the ring and replying. Every partial load costs it
starting and ending the load. ``HostCost`` holds these as wall seconds on the machine the daemon
runs on (``per_frame_s``, ``per_byte_s`` of the output copied, ``per_load_s``), and
``block_s``: the longest piece of other work (a request's handling) the loop may be running when
real-time work becomes ready, since a callback is never preempted.

The argument (docs/guarantee.md, "The host as a resource"): treat the loop as a processor whose
jobs are the frames' host work, ``h_i = (per_frame + bytes_i * per_byte + loads_i * per_load) /
dilation`` board seconds per frame of pipeline i, released with the frames (period ``T_i``,
jitter ``J_i``), behind at most one other callback ``b``. The longest time any piece of it waits
and runs is bounded by the host's busy period ``w = b + sum_i ceil((w + J_i) / T_i) h_i`` (the
least fixed point; ``analysis.busy_period``): work that becomes ready inside a busy period ends by
its end, whatever the order the loop takes it in. Each pipeline gets a response bound ``R_i`` when
it registers (``HostBudget``: a share of its own slack, or one reserve for all), fixed from then
on; the fabric analysis is given the deadline ``D_i - 2 R_i`` and the jitter ``J_i + R_i``
(``fabric_spec``): a frame reaches the engine up to ``R_i`` after it came (its release later by up
to R_i, so more jitter), and its answer leaves up to ``R_i`` after the fabric ends it. Admission
refuses a set whose ``w`` exceeds the smallest ``R_i`` (the reason names the host). The bounds
being fixed, the pipelines admitted earlier keep the deadlines they were analysed with when a
newcomer comes: only the host check sees the whole set again.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np
from fpgashare.catalogue.workload import PipelineSpec
from fpgashare.sched.analysis.processor_demand import busy_period
from fpgashare.sched.host.cpu_work import chain_shape

log = logging.getLogger(__name__)

#: The measured costs are multiplied by this at calibration (a machine's speed varies with what
#: else runs on it; the re-check raises the model further if the daemon sees slower frames).
CALIBRATION_MARGIN = 2.0

#: Each pipeline's response bound R by default, a policy: this share of its slack (deadline less
#: its frame's fabric time), so the fabric keeps 1 - 2 x SLACK_SHARE of it. More admits more
#: pipelines on the host and leaves the fabric less (``fpgashare daemon --host-reserve-ms`` sets
#: one R for every pipeline instead).
SLACK_SHARE = 0.05

#: With a share of the slack, R is at most this many times the host's busy period when the
#: pipeline registers: the set may grow about this much on the host before a newcomer is refused.
HEADROOM = 8.0


@dataclass(frozen=True)
class HostCost:
    """The daemon's own work, in wall seconds on its host (module docstring)."""

    per_frame_s: float = 0.0
    per_byte_s: float = 0.0
    per_load_s: float = 0.0
    block_s: float = 0.0

    def __post_init__(self) -> None:
        for name in ("per_frame_s", "per_byte_s", "per_load_s", "block_s"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0.0):
                raise ValueError(f"HostCost.{name} must be a finite number >= 0, not {value!r}")

    def frame_wall_s(self, p: PipelineSpec) -> float:
        """Host wall seconds one frame of ``p`` costs at most (every stage loaded for it)."""
        loads = sum(sum(c.values()) for c in p.pass_module_counts) if p.stages else 0
        return self.per_frame_s + self.per_byte_s * _frame_bytes(p) + self.per_load_s * loads

    def scaled(self, factor: float) -> HostCost:
        """Every cost times ``factor`` (a margin, or a re-check's correction)."""
        return HostCost(self.per_frame_s * factor, self.per_byte_s * factor, self.per_load_s * factor,
                        self.block_s * factor)


#: No host cost: the analysis as it was, for a daemon told its host is free (a virtual clock's
#: tests that are not about the host).
FREE = HostCost()


def _frame_bytes(p: PipelineSpec) -> float:
    """Bytes the daemon copies for a frame of ``p``: its output into the client's ring (the
    input is read where the client wrote it)."""
    rows, cols = chain_shape((*p.stages, *p.cpu_after), *p.frame)
    return float(rows * cols)


@dataclass(frozen=True)
class HostBudget:
    """A host's cost and the response bounds the daemon commits to (board seconds, module
    docstring): ``reserve_s`` for every pipeline, or (None) each pipeline's ``share`` of its own
    slack, fixed when it registers and kept in ``reserves``."""

    cost: HostCost
    dilation: float = 1.0
    reserve_s: float | None = None
    share: float = SLACK_SHARE
    reserves: dict[str, float] = field(default_factory=dict, compare=False)   #: pipeline -> its R
    #: pipeline -> what its R took from its deadline (2R, and one more R for each host hand-off)
    taken: dict[str, float] = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        if self.reserve_s is not None and not (math.isfinite(self.reserve_s) and self.reserve_s >= 0.0):
            raise ValueError(f"the host reserve must be a finite number of seconds >= 0, not {self.reserve_s!r}")
        if not 0.0 <= self.share < 0.5:
            raise ValueError(f"the host's share of a pipeline's slack must be in [0, 0.5), not {self.share!r}")

    @property
    def free(self) -> bool:
        """No host accounting: a host taken as free (no cost, or a reserve of 0)."""
        return self.cost == FREE or self.reserve_s == 0.0

    def reserve_for(self, p: PipelineSpec) -> float:
        """The most ``p``'s response bound R may be (the fixed reserve, or its share of its slack)."""
        if self.free:
            return 0.0
        return self.reserve_s if self.reserve_s is not None else self.share * max(0.0, p.deadline_s - p.exec_s)

    def job_s(self, p: PipelineSpec) -> float:
        """Board seconds of host work one frame of ``p`` costs."""
        return self.cost.frame_wall_s(p) / self.dilation

    def busy_s(self, pipelines: Sequence[PipelineSpec]) -> float:
        """The host's longest busy period with ``pipelines`` (their jitters as given), board seconds."""
        h = np.array([self.job_s(p) for p in pipelines], dtype=np.float64)
        periods = np.array([p.period_s for p in pipelines], dtype=np.float64)
        jitters = np.array([p.jitter_s for p in pipelines], dtype=np.float64)
        return busy_period(h, periods, jitters, self.cost.block_s / self.dilation)

    def fabric_spec(self, p: PipelineSpec, others: Sequence[PipelineSpec] = ()) -> PipelineSpec | str:
        """``p`` as the fabric's analysis must see it (deadline ``D - (2 + b + a) R``, jitter
        ``J + (1 + b) R``, with ``b``, ``a`` 1 where it has host stages before, after), or
        why the host's reserve leaves it no time. A pipeline with stages on the host hands its
        frame over once more each way: its fabric part may be released up to R later (CPU stages
        before: one more R of deadline and jitter) and its host stages after may start up to R
        later (one more R of deadline), the loop noticing each end late. With a share of the slack, R is no more than
        HEADROOM times the host's busy period with ``others`` (the pipelines admitted, as the
        engine holds them) and ``p``: where the host is cheap the fabric keeps nearly all its
        slack, and the set may still grow HEADROOM-fold on the host. Records ``p``'s R."""
        reserve = self.reserve_for(p)
        if not reserve:
            return p
        if self.reserve_s is None:
            busy = self.busy_s([*[q for q in others if q.realtime], replace(p, jitter_s=p.jitter_s + reserve)])
            reserve = min(reserve, HEADROOM * busy)
        before, after = (1 if p.cpu_before else 0), (1 if p.cpu_after else 0)
        taken = (2 + before + after) * reserve
        deadline, jitter = p.deadline_s - taken, p.jitter_s + (1 + before) * reserve
        if deadline < p.exec_s:
            return (f"the host: its response bound of {reserve * 1e3:.3f} ms each way (the daemon's own work per "
                    f"frame, measured on this host) leaves {max(deadline, 0.0) * 1e3:.3f} ms of "
                    f"{p.name}'s {p.deadline_s * 1e3:.3f} ms deadline for a {p.exec_s * 1e3:.3f} ms frame")
        if jitter >= p.period_s:
            return (f"the host: its response bound of {reserve * 1e3:.3f} ms (the daemon's own work per frame, "
                    f"measured on this host) makes {p.name}'s releases jitter {jitter * 1e3:.3f} ms, not less "
                    f"than its {p.period_s * 1e3:.3f} ms period")
        self.reserves[p.name] = reserve
        self.taken[p.name] = taken
        # Judged from when the daemon took it, such a frame may end later than its fabric part's
        # deadline plus its CPU bounds by the loop's late notices: the prefix's end (the fabric part
        # released up to R later, its deadline counting from that release), the fabric's end (the
        # suffix started up to R later) and the suffix's own end (the frame's end is when the loop
        # notices it, the answer leaving then: the way back's R). That is still the app's deadline
        # less its two R each way (one taken before the daemon took the frame, one for the answer).
        handover = (before + 2 * after) * reserve
        return replace(p, deadline_s=deadline, jitter_s=jitter, handover_s=handover)

    def op_delay_s(self, pipelines: Sequence[PipelineSpec]) -> float:
        """How late the loop may start any one fabric operation (a frame's pass, a load) after the
        engine's event for it, with ``pipelines`` (every real-time pipeline on the board): the
        loop's longest busy period w, the same bound ``check`` holds within every R. Board
        seconds; 0 for a free host. It grows as pipelines join: the board re-analyses the sets in
        force with the longer delay before it admits one (board_admission.py)."""
        rt = [p for p in pipelines if p.realtime]
        return 0.0 if self.free or not rt else self.busy_s(rt)

    def check(self, pipelines: Sequence[PipelineSpec]) -> str | None:
        """Why the host cannot serve ``pipelines`` (every real-time pipeline on the board, as the
        engine holds them: ``fabric_spec``'s, whose jitter already counts their R) within the
        smallest of their bounds R, or None if it can."""
        rt = [p for p in pipelines if p.realtime]
        if not rt or self.free:
            return None
        util = float(sum(self.job_s(p) / p.period_s for p in rt))
        if util >= 1.0:
            return (f"the host: the daemon's own work for these {len(rt)} pipelines would keep its loop busy "
                    f"{util:.3f} of the time (>= 1; {max(map(self.job_s, rt)) * 1e3:.3f} ms per frame at most, "
                    f"measured on this host)")
        # Pipelines without a bound (no slack to share: the fabric's analysis refuses or pins them
        # to their own deadline) leave the host no window of their own.
        bounds = [(self.reserves[p.name], p.name) for p in rt if self.reserves.get(p.name)]
        if not bounds:
            return None
        bound, tightest = min(bounds)
        w = self.busy_s(rt)
        if w > bound:
            return (f"the host: with these {len(rt)} pipelines its loop may be busy {w * 1e3:.3f} ms at a time "
                    f"(utilisation {util:.3f}), more than the {bound * 1e3:.3f} ms response bound {tightest}'s "
                    f"deadline leaves the daemon's own work (measured on this host)")
        return None


def observed_frame_s(samples: Sequence[float]) -> float:
    """The per-frame host time a re-check takes from observed wall samples: their 99th percentile
    (one slow frame, a page fault, is not the machine being slower)."""
    return float(np.percentile(np.asarray(samples, dtype=np.float64), 99)) if len(samples) else 0.0


#: Frames between two re-checks of the measured cost against what the daemon sees.
RECHECK_EVERY = 500


class HostWatch:
    """The re-check while the daemon runs: the host wall time each real-time frame actually cost
    the loop (its submit's handling and its end's, ``record``), against the model's. When the
    99th percentile of observed / modelled passes 1 the cost is raised by that factor for every
    later admission (the reserve stays: pipelines admitted keep the deadlines they were analysed
    with) and the daemon says so in its log and status."""

    def __init__(self, budget: HostBudget) -> None:
        self.budget = budget
        self.ratios: list[float] = []
        self.raised = 1.0            #: product of every correction so far
        self.frames = 0

    def record(self, p: PipelineSpec, wall_s: float) -> None:
        modelled = self.budget.cost.frame_wall_s(p)
        if modelled <= 0.0:
            return
        self.frames += 1
        self.ratios.append(wall_s / modelled)
        if len(self.ratios) >= RECHECK_EVERY:
            self.recheck()

    def recheck(self) -> None:
        worst = observed_frame_s(self.ratios)
        self.ratios.clear()
        if worst > 1.0:
            self.budget = replace(self.budget, cost=self.budget.cost.scaled(worst))
            self.raised *= worst
            log.warning("the host is slower than calibrated: frames cost it %.2fx the model (p99); admission now "
                        "counts %.3f ms a frame", worst, self.budget.cost.per_frame_s * 1e3)

    def summary(self) -> dict:
        c = self.budget.cost
        return {"per_frame_ms": round(c.per_frame_s * 1e3, 4), "per_load_ms": round(c.per_load_s * 1e3, 4),
                "per_mb_ms": round(c.per_byte_s * 1e9, 4),
                "reserve_ms": None if self.budget.reserve_s is None else round(self.budget.reserve_s * 1e3, 4),
                "slack_share": self.budget.share,
                "raised": round(self.raised, 3), "frames_watched": self.frames}

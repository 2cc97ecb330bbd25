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
its end, whatever the order the loop takes it in. The daemon commits to a host *reserve* ``R``
(``HostBudget``): admission refuses a set whose ``w`` exceeds ``R`` (the reason names the host),
and the fabric analysis is given, for every pipeline, the deadline ``D - 2R`` and the jitter
``J + R`` (``fabric_deadline``): a frame reaches the engine up to ``R`` after it came (its release
later by up to R, so more jitter), and its answer leaves up to ``R`` after the fabric ends it. With
``R`` fixed when the daemon starts, the pipelines admitted earlier keep the deadlines they were
analysed with when a newcomer comes: only the host check sees the whole set again.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
from fpgashare.sched.analysis import busy_period
from fpgashare.sched.cpu_work import chain_shape
from fpgashare.workload import PipelineSpec

log = logging.getLogger(__name__)

#: The measured costs are multiplied by this at calibration (a machine's speed varies with what
#: else runs on it; the re-check raises the model further if the daemon sees slower frames).
CALIBRATION_MARGIN = 2.0

#: The default reserve, a policy: the host's fixed work for RESERVE_FRAMES frames, plus the whole
#: work of RESERVE_HEAVY frames of the most expensive kind (the largest frame copied, every slot
#: loaded), plus one other callback. More admits more pipelines on the host and leaves each
#: pipeline's fabric 2R less of its deadline (``fpgashare daemon --host-reserve-ms``).
RESERVE_FRAMES = 4
RESERVE_HEAVY = 1


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
    """A host's cost and the reserve ``R`` the daemon commits to (board seconds, module docstring)."""

    cost: HostCost
    dilation: float = 1.0
    reserve_s: float = 0.0

    @classmethod
    def of(cls, cost: HostCost, dilation: float = 1.0, reserve_s: float | None = None,
           largest_frame: tuple[int, int] = (0, 0), most_loads: int = 0) -> HostBudget:
        """The budget for ``cost``; the reserve defaults to RESERVE_FRAMES frames' fixed work,
        RESERVE_HEAVY frames of the most expensive kind (``largest_frame`` copied, ``most_loads``
        loads) and one other callback."""
        if reserve_s is None:
            heaviest = cost.per_frame_s + cost.per_byte_s * largest_frame[0] * largest_frame[1] \
                + cost.per_load_s * most_loads
            reserve_s = (RESERVE_FRAMES * cost.per_frame_s + RESERVE_HEAVY * heaviest + cost.block_s) / dilation
        if not (math.isfinite(reserve_s) and reserve_s >= 0.0):
            raise ValueError(f"the host reserve must be a finite number of seconds >= 0, not {reserve_s!r}")
        return cls(cost, dilation, reserve_s)

    def job_s(self, p: PipelineSpec) -> float:
        """Board seconds of host work one frame of ``p`` costs."""
        return self.cost.frame_wall_s(p) / self.dilation

    def fabric_spec(self, p: PipelineSpec) -> PipelineSpec | str:
        """``p`` as the fabric's analysis must see it (deadline ``D - 2R``, jitter ``J + R``), or
        why the host's reserve leaves it no time."""
        reserve = self.reserve_s
        if not reserve:
            return p
        deadline, jitter = p.deadline_s - 2 * reserve, p.jitter_s + reserve
        if deadline < p.exec_s or jitter >= p.period_s:
            return (f"the host: its response bound of {reserve * 1e3:.3f} ms each way (the daemon's own work per "
                    f"frame, measured on this host) leaves {max(deadline, 0.0) * 1e3:.3f} ms of "
                    f"{p.name}'s {p.deadline_s * 1e3:.3f} ms deadline for a {p.exec_s * 1e3:.3f} ms frame")
        return replace(p, deadline_s=deadline, jitter_s=jitter)

    def check(self, pipelines: Sequence[PipelineSpec]) -> str | None:
        """Why the host cannot serve ``pipelines`` (every real-time pipeline on the board, as the
        engine holds them: ``fabric_spec``'s, whose jitter already counts the reserve) within the
        reserve, or None if it can."""
        rt = [p for p in pipelines if p.realtime]
        if not rt or not self.reserve_s:
            return None
        h = np.array([self.job_s(p) for p in rt], dtype=np.float64)
        periods = np.array([p.period_s for p in rt], dtype=np.float64)
        jitters = np.array([p.jitter_s for p in rt], dtype=np.float64)
        util = float(np.sum(h / periods))
        block = self.cost.block_s / self.dilation
        if util >= 1.0:
            return (f"the host: the daemon's own work for these {len(rt)} pipelines would keep its loop busy "
                    f"{util:.3f} of the time (>= 1; {h.max() * 1e3:.3f} ms per frame at most, measured on this host)")
        w = busy_period(h, periods, jitters, block)
        if w > self.reserve_s:
            return (f"the host: with these {len(rt)} pipelines its loop may be busy {w * 1e3:.3f} ms at a time "
                    f"(utilisation {util:.3f}), more than the {self.reserve_s * 1e3:.3f} ms response bound the "
                    f"daemon reserves for its own work per frame (measured on this host)")
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
                "per_mb_ms": round(c.per_byte_s * 1e9, 4), "reserve_ms": round(self.budget.reserve_s * 1e3, 4),
                "raised": round(self.raised, 3), "frames_watched": self.frames}

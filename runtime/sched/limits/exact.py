"""The exact optimum over one horizon, with CP-SAT: most real-time pipelines served with no miss,
then the fewest loads for a chosen set.

The model (docs/limits.md says what it leaves out and why each figure still bounds any scheduler):

- a job per pass of every frame (``jobs.frame_jobs``), an optional interval inside its window,
  present iff its pipeline is admitted (a pipeline is served whole or not at all); the passes of
  a frame in order;
- the shell's video streams: at most ``platform.streams`` jobs at once (no overlap on one stream);
- each module of a job sits in a compatible slot, the job's modules in distinct slots;
- per slot, the jobs that use it form a sequence (a circuit through a depot): consecutive uses
  do not overlap, and a use whose module differs from the one before it in that slot needs a load
  into the slot between the two, of that slot's load time;
- the one configuration port loads one partial at a time (no overlap of loads);
- the slots' first contents are free (the registration window fills every slot before the first
  release, for every scheduler alike).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise

from fpgashare.platform import Platform
from fpgashare.sched.limits import require_ortools
from fpgashare.sched.limits.jobs import Job, load_ticks

log = logging.getLogger(__name__)

#: Workers CP-SAT may use (the project's machines share their cores).
WORKERS = 1


@dataclass(frozen=True)
class Use:
    """Job ``job`` computes with ``module`` in ``slot`` over [start, end)."""

    job: str
    module: str
    slot: int
    start: int
    end: int


@dataclass(frozen=True)
class Load:
    """A partial of ``module`` goes into ``slot`` over [start, end), for job ``job``."""

    slot: int
    module: str
    start: int
    end: int
    job: str


@dataclass(frozen=True)
class Schedule:
    admitted: tuple[str, ...]
    starts: dict[str, int]          #: job key -> start tick
    uses: tuple[Use, ...]
    loads: tuple[Load, ...]


@dataclass(frozen=True)
class Solution:
    """What the solver found: ``value`` (the objective of ``schedule``), whether it proved it
    optimal, and ``bound``, a bound on the optimum it proved (upper for a maximum, lower for a
    minimum). ``status``: optimal, feasible, infeasible or unknown (no answer in the time limit)."""

    status: str
    value: int | None
    bound: float | None
    schedule: Schedule | None
    wall_s: float

    @property
    def proved(self) -> bool:
        return self.status in ("optimal", "infeasible")


class _Model:
    """The CP-SAT model of ``jobs`` on ``platform`` (module docstring)."""

    def __init__(self, jobs: Sequence[Job], platform: Platform, pipelines: Sequence[str]) -> None:
        cp_model = require_ortools()
        self.cp_model = cp_model
        self.jobs, self.platform = list(jobs), platform
        m = self.m = cp_model.CpModel()
        self.admit = {name: m.NewBoolVar(f"admit[{name}]") for name in pipelines}
        self.start, self.end, self.ivs = {}, {}, []
        for j in self.jobs:
            on = self.admit[j.pipeline]
            latest = j.due - j.length
            if latest < j.release:          # the pass cannot meet its deadline even alone
                m.Add(on == 0)
                latest = j.release
            s = m.NewIntVar(j.release, latest, f"s[{j.key}]")
            e = m.NewIntVar(j.release + j.length, latest + j.length, f"e[{j.key}]")
            self.start[j.key], self.end[j.key] = s, e
            self.ivs.append(m.NewOptionalIntervalVar(s, j.length, e, on, f"job[{j.key}]"))
        by_frame: dict[tuple[str, int], list[Job]] = {}
        for j in self.jobs:
            by_frame.setdefault((j.pipeline, j.frame), []).append(j)
        for passes in by_frame.values():
            passes.sort(key=lambda j: j.step)
            for a, b in pairwise(passes):
                m.Add(self.end[a.key] <= self.start[b.key]).OnlyEnforceIf(self.admit[a.pipeline])
        if platform.streams == 1:
            m.AddNoOverlap(self.ivs)
        else:
            m.AddCumulative(self.ivs, [1] * len(self.ivs), platform.streams)
        self._slots()

    def _slots(self) -> None:
        m, platform = self.m, self.platform
        lt = load_ticks(platform)
        # An instance: module i of job j. x[(u, s)]: the instance sits in slot s.
        self.inst = [(j, i, mod) for j in self.jobs for i, mod in enumerate(j.modules)]
        self.x: dict[tuple[int, int], object] = {}
        for u, (j, _, mod) in enumerate(self.inst):
            homes = [s.index for s in platform.slots_for(mod)]
            for s in homes:
                self.x[u, s] = m.NewBoolVar(f"x[{j.key}.{u},{s}]")
            m.Add(sum(self.x[u, s] for s in homes) == self.admit[j.pipeline])
        per_job_slot: dict[tuple[str, int], list] = {}
        for (u, s), var in self.x.items():
            per_job_slot.setdefault((self.inst[u][0].key, s), []).append(var)
        for group in per_job_slot.values():
            if len(group) > 1:
                m.AddAtMostOne(group)
        self.fresh: dict[tuple[int, int], object] = {}
        self.load_start: dict[tuple[int, int], object] = {}
        loads = []
        for slot in platform.slots:
            s = slot.index
            nodes = [u for u in range(len(self.inst)) if (u, s) in self.x]
            arcs = [(0, 0, m.NewBoolVar(f"empty[{s}]"))]
            for k, u in enumerate(nodes, start=1):
                ju = self.inst[u][0]
                arcs.append((k, k, self.x[u, s].Not()))
                arcs.append((0, k, m.NewBoolVar(f"first[{u},{s}]")))
                arcs.append((k, 0, m.NewBoolVar(f"last[{u},{s}]")))
                fresh = m.NewBoolVar(f"fresh[{u},{s}]")
                m.AddImplication(fresh, self.x[u, s])
                ls = m.NewIntVar(0, ju.due, f"ls[{u},{s}]")
                loads.append(m.NewOptionalFixedSizeIntervalVar(ls, lt[s], fresh, f"load[{u},{s}]"))
                m.Add(ls + lt[s] <= self.start[ju.key]).OnlyEnforceIf(fresh)
                self.fresh[u, s], self.load_start[u, s] = fresh, ls
            for a, u in enumerate(nodes, start=1):
                ju, _, mu = self.inst[u]
                for b, w in enumerate(nodes, start=1):
                    jw, _, mw = self.inst[w]
                    if ju.key == jw.key or ju.release + ju.length > jw.due - jw.length:
                        continue          # the same job, or u cannot end before w must start
                    arc = m.NewBoolVar(f"arc[{u},{w},{s}]")
                    arcs.append((a, b, arc))
                    m.Add(self.end[ju.key] <= self.start[jw.key]).OnlyEnforceIf(arc)
                    if mu != mw:          # another module in between: w's module loads after u ends
                        m.AddImplication(arc, self.fresh[w, s])
                        m.Add(self.load_start[w, s] >= self.end[ju.key]).OnlyEnforceIf(arc)
            m.AddCircuit(arcs)
        m.AddNoOverlap(loads)

    def loads_expr(self):
        return sum(self.fresh.values())

    def solve(self, time_limit_s: float, maximize: bool) -> tuple[object, str, float]:
        solver = self.cp_model.CpSolver()
        solver.parameters.max_time_in_seconds = time_limit_s
        solver.parameters.num_workers = WORKERS
        t = time.perf_counter()
        status = solver.Solve(self.m)
        wall = time.perf_counter() - t
        name = {self.cp_model.OPTIMAL: "optimal", self.cp_model.FEASIBLE: "feasible",
                self.cp_model.INFEASIBLE: "infeasible"}.get(status, "unknown")
        return solver, name, wall

    def schedule(self, solver) -> Schedule:
        admitted = tuple(n for n, v in self.admit.items() if solver.Value(v))
        starts = {j.key: solver.Value(self.start[j.key]) for j in self.jobs if j.pipeline in admitted}
        uses, loads = [], []
        for (u, s), var in self.x.items():
            if not solver.Value(var):
                continue
            j, _, mod = self.inst[u]
            uses.append(Use(j.key, mod, s, starts[j.key], starts[j.key] + j.length))
            if solver.Value(self.fresh[u, s]):
                ls = solver.Value(self.load_start[u, s])
                loads.append(Load(s, mod, ls, ls + load_ticks(self.platform)[s], j.key))
        return Schedule(admitted, starts, tuple(sorted(uses, key=lambda x: (x.slot, x.start))),
                        tuple(sorted(loads, key=lambda x: x.start)))


def most_admitted(jobs: Sequence[Job], platform: Platform, pipelines: Sequence[str], prefix: bool = False,
                  time_limit_s: float = 10.0) -> Solution:
    """The most pipelines (``pipelines``, in registration order) some schedule serves with no miss;
    with ``prefix`` the longest prefix of that order. ``bound``: the solver's proved upper bound."""
    model = _Model(jobs, platform, pipelines)
    admit = [model.admit[n] for n in pipelines]
    if prefix:
        for a, b in pairwise(admit):
            model.m.AddImplication(b, a)
    # Most pipelines first; among those, fewest loads (a tie-break worth less than one pipeline).
    weight = len(model.fresh) + 1
    model.m.Maximize(weight * sum(admit) - model.loads_expr())
    solver, status, wall = model.solve(time_limit_s, True)
    if status in ("optimal", "feasible"):
        value = sum(solver.Value(a) for a in admit)
        bound = solver.BestObjectiveBound()
        upper = min(len(admit), int((bound + weight - 1) // weight)) if status == "feasible" else value
        return Solution(status, value, float(upper), model.schedule(solver), wall)
    return Solution(status, None, float(len(admit)), None, wall)


def fewest_loads(jobs: Sequence[Job], platform: Platform, pipelines: Sequence[str], serve: Sequence[str],
                 time_limit_s: float = 10.0) -> Solution:
    """The fewest loads of a schedule that serves every pipeline of ``serve`` with no miss (the
    others left out). ``bound``: the solver's proved lower bound; infeasible: no such schedule."""
    model = _Model([j for j in jobs if j.pipeline in serve], platform, pipelines)
    for name, var in model.admit.items():
        model.m.Add(var == (1 if name in serve else 0))
    model.m.Minimize(model.loads_expr())
    solver, status, wall = model.solve(time_limit_s, False)
    if status in ("optimal", "feasible"):
        value = sum(solver.Value(v) for v in model.fresh.values())
        return Solution(status, value, float(solver.BestObjectiveBound()), model.schedule(solver), wall)
    return Solution(status, None, None, None, wall)

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

from fpgashare.catalogue.platform import Platform
from fpgashare.sched.limits import require_ortools
from fpgashare.sched.limits.jobs import Job, load_ticks

log = logging.getLogger(__name__)

#: Workers CP-SAT may use: its portfolio of two proves these models several times sooner than one
#: worker does (measured on the generated workloads of benchmarks/limit_gap.py).
WORKERS = 2


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


def start_var(m, job: Job, on, name: str) -> tuple[object, int]:
    """The start of ``job`` in its window on model ``m``, with the latest start; a pass that cannot
    fit its window even alone is not admitted (``on`` false) and gets its release as window."""
    latest = job.due - job.length
    if latest < job.release:
        m.Add(on == 0)
        latest = job.release
    return m.NewIntVar(job.release, latest, name), latest


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
            s, latest = start_var(m, j, on, f"s[{j.key}]")
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
        firsts = {}
        for slot in platform.slots:
            s = slot.index
            nodes = [u for u in range(len(self.inst)) if (u, s) in self.x]
            arcs = [(0, 0, m.NewBoolVar(f"empty[{s}]"))]
            firsts[s] = (arcs[0][2], [])
            for k, u in enumerate(nodes, start=1):
                ju = self.inst[u][0]
                arcs.append((k, k, self.x[u, s].Not()))
                arcs.append((0, k, m.NewBoolVar(f"first[{u},{s}]")))
                firsts[s][1].append((u, arcs[-1][2]))
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
        self._break_slot_symmetry(firsts, lt)

    def _break_slot_symmetry(self, firsts: dict, lt: dict[int, int]) -> None:
        """Slots that load alike and take the same modules are interchangeable: renaming them maps a
        schedule to one as good. Keep only the schedules whose slots' first uses come in instance
        order (an empty slot last), which every schedule has a renaming into."""
        platform, m = self.platform, self.m
        homes = [frozenset(mod for mod in platform.modules if slot.name in platform.module(mod).slots)
                 for slot in platform.slots]
        if len(set(homes)) != 1 or len(set(lt.values())) != 1:
            return
        rank = {u: r for r, u in enumerate(sorted(range(len(self.inst)),
                                                  key=lambda u: (self.inst[u][0].release, self.inst[u][0].key, u)))}
        big = len(self.inst) + 1
        order = []
        for s in sorted(firsts):
            empty, first = firsts[s]
            order.append(sum(rank[u] * lit for u, lit in first) + big * empty)
        for a, b in pairwise(order):
            m.Add(a <= b)

    def loads_expr(self):
        return sum(self.fresh.values())

    def solve(self, time_limit_s: float, maximize: bool) -> tuple[object, str, float]:
        solver = self.cp_model.CpSolver()
        solver.parameters.max_time_in_seconds = time_limit_s
        solver.parameters.num_workers = WORKERS
        solver.parameters.cp_model_probing_level = 0  # probing took seconds per round on suites
        t = time.perf_counter()
        status = solver.Solve(self.m)
        wall = time.perf_counter() - t
        name = {self.cp_model.OPTIMAL: "optimal", self.cp_model.FEASIBLE: "feasible",
                self.cp_model.INFEASIBLE: "infeasible"}.get(status, "unknown")
        return solver, name, wall

    def schedule(self, solver) -> Schedule:
        admitted = tuple(n for n, v in self.admit.items() if solver.Value(v))
        starts = {j.key: solver.Value(self.start[j.key]) for j in self.jobs if j.pipeline in admitted}
        uses, loads = [], {}
        for (u, s), var in self.x.items():
            if not solver.Value(var):
                continue
            j, _, mod = self.inst[u]
            uses.append(Use(j.key, mod, s, starts[j.key], starts[j.key] + j.length))
            if solver.Value(self.fresh[u, s]):
                ls = solver.Value(self.load_start[u, s])
                loads[j.key, s] = Load(s, mod, ls, ls + load_ticks(self.platform)[s], j.key)
        uses.sort(key=lambda x: (x.slot, x.start))
        # Keep only the loads a change of module needs (the count objective leaves spare ones free).
        needed = [loads[b.job, b.slot] for a, b in pairwise(uses)
                  if a.slot == b.slot and a.module != b.module and (b.job, b.slot) in loads]
        return Schedule(admitted, starts, tuple(uses), tuple(sorted(needed, key=lambda x: x.start)))


def most_admitted(jobs: Sequence[Job], platform: Platform, pipelines: Sequence[str], prefix: bool = False,
                  time_limit_s: float = 10.0) -> Solution:
    """The most pipelines (``pipelines``, in registration order) some schedule serves with no miss;
    with ``prefix`` the longest prefix of that order. ``bound``: the solver's proved upper bound."""
    model = _Model(jobs, platform, pipelines)
    admit = [model.admit[n] for n in pipelines]
    if prefix:
        for a, b in pairwise(admit):
            model.m.AddImplication(b, a)
    # The count alone: a tie-break on loads would make the solver prove the fewest loads too
    # (fewest_loads answers that for the set chosen).
    model.m.Maximize(sum(admit))
    solver, status, wall = model.solve(time_limit_s, True)
    if status in ("optimal", "feasible"):
        value = sum(solver.Value(a) for a in admit)
        upper = value if status == "optimal" else min(len(admit), int(solver.BestObjectiveBound() + 1e-6))
        return Solution(status, value, float(upper), model.schedule(solver), wall)
    if status == "infeasible":          # not even the empty set: cannot happen, every job is optional
        return Solution(status, 0, 0.0, None, wall)
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


def calm_schedule(jobs: Sequence[Job], platform: Platform, pipelines: Sequence[str], serve: Sequence[str],
                  loads: int, time_limit_s: float = 10.0) -> Solution:
    """Among the schedules serving ``serve`` with at most ``loads`` loads, one whose loads run as
    little as possible after the release of the frame they serve (time a frame may wait for the
    port). ``value``: that late load time in ticks. Its wait (``schedule_wait.stalled_ticks``) is
    one the board can achieve with those loads, so it bounds the least wait from above."""
    model = _Model([j for j in jobs if j.pipeline in serve], platform, pipelines)
    for name, var in model.admit.items():
        model.m.Add(var == (1 if name in serve else 0))
    model.m.Add(model.loads_expr() <= loads)
    lt = load_ticks(platform)
    late = []
    for (u, s), fresh in model.fresh.items():
        job = model.inst[u][0]
        var = model.m.NewIntVar(0, max(0, job.due - job.release), f"late[{u},{s}]")
        model.m.Add(var >= model.load_start[u, s] + lt[s] - job.release).OnlyEnforceIf(fresh)
        late.append(var)
    model.m.Minimize(sum(late))
    solver, status, wall = model.solve(time_limit_s, False)
    if status in ("optimal", "feasible"):
        return Solution(status, int(solver.ObjectiveValue()), float(solver.BestObjectiveBound()),
                        model.schedule(solver), wall)
    return Solution(status, None, None, None, wall)

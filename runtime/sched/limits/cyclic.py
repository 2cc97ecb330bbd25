"""A cyclic table for a fixed set of periodic pipelines, with CP-SAT: one hyperperiod H of frame
passes and loads that repeats forever (the ``planned`` policy is handed it, ``table_to_run``, and
runs it; docs/planned.md).

It is the exact model (exact.py) made periodic and made to hold for every realisation:

- a job per pass of each frame a pipeline releases in one hyperperiod, an optional interval in
  [nominal + jitter, nominal + deadline]: it starts no earlier than the frame's latest arrival and
  ends by its earliest arrival's deadline, so it is valid for every draw of the jitter;
- lengths are the engine's own times (``PipelineSpec.pass_seconds``: the cycles the model backend
  counts; a load: the slot's longest partial) plus the register traffic *X* one operation may add
  (``control_traffic.control_seconds``, as the admission analysis charges every pass and load: the
  co-simulated board's loads do run over their port cycles while other streams' work runs),
  rounded up to ticks, plus ``MARGIN_TICKS``;
- every resource is shared *modulo H*: a job's start ``s`` (relative to its frame's hyperperiod,
  up to 2H) is folded into [0, H) as ``sn``; the stream, the port and each slot carry the folded
  intervals and their copies shifted by -H, so a job that crosses H cannot overlap the next
  hyperperiod's first jobs;
- per slot the uses form a cycle (a circuit through a depot, as in exact.py, read cyclically): a
  use whose module differs from its predecessor's, the last use's for the first, needs a load
  between the two, which may start before 0 (the previous hyperperiod);
- objective: most pipelines, then fewest loads (one weighted objective: a pipeline outweighs
  every load).

A plan is used only if CP-SAT returns a feasible schedule; optimality is not needed for it to hold
(cyclic_check.py checks a plan independently of the model).
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass, replace
from itertools import pairwise

from fpgashare.catalogue.platform import Platform
from fpgashare.catalogue.workload import Workload
from fpgashare.errors import FpgashareError
from fpgashare.sched.analysis.control_traffic import control_seconds
from fpgashare.sched.limits import require_ortools
from fpgashare.sched.limits.exact import WORKERS, start_var
from fpgashare.sched.limits.jobs import TICK_S, realtime, ticks_down, ticks_up

log = logging.getLogger(__name__)

#: Ticks added to every pass and load: the engine's event times are float sums from its first
#: release, and its model times are exact cycles over a clock; one tick (100 ns) absorbs the
#: rounding of both, so a pass never ends after the instant its slots are planned again.
MARGIN_TICKS = 1

#: Seconds CP-SAT may spend on a plan.
PLAN_TIME_LIMIT_S = 10.0

#: Module uses (a stage of a pass) one hyperperiod may hold: each slot's cycle has a constraint per
#: pair of its uses, so a longer table is a model CP-SAT cannot even build in its time limit.
MAX_USES = 240


class PlanError(FpgashareError):
    """A workload the cyclic plan cannot take (the error names why)."""


@dataclass(frozen=True)
class PlanJob:
    """Pass ``step`` of frame ``frame`` (its index within the hyperperiod) of ``pipeline``: it
    streams ``length`` ticks through ``modules`` somewhere in [release, due], ticks from the
    start of its hyperperiod."""

    pipeline: str
    frame: int
    step: int
    release: int
    due: int
    length: int
    modules: tuple[str, ...]

    @property
    def key(self) -> tuple[str, int, int]:
        return self.pipeline, self.frame, self.step


@dataclass(frozen=True)
class PlanLoad:
    """A load of ``module`` into ``slot`` at ``start`` ticks into every hyperperiod (0 <= start < H)."""

    slot: int
    module: str
    start: int
    length: int
    #: the uses it loads for (until the slot's next load): (pipeline, plan frame, hyperperiod of
    #: that frame less the load's), so a run can skip a load whose uses' frames never come
    serves: tuple[tuple[str, int, int], ...] = ()


@dataclass(frozen=True)
class CyclicPlan:
    """A table that repeats every ``hyperperiod`` ticks. ``starts``/``slots``: by job key, the
    start (relative to the frame's hyperperiod, may pass hp) and the slot of each module;
    ``initial``: what each slot holds at the start of a hyperperiod (the warm-up loads it);
    ``loads``: the loads of one hyperperiod, by start; ``refused``: pipeline -> reason."""

    hyperperiod: int
    admitted: tuple[str, ...]
    refused: dict[str, str]
    jobs: tuple[PlanJob, ...]
    starts: dict[tuple[str, int, int], int]
    slots: dict[tuple[str, int, int], tuple[int, ...]]
    loads: tuple[PlanLoad, ...]
    initial: dict[int, str]
    frames: dict[str, int]          #: frames per hyperperiod, by pipeline
    shift: dict[str, int]           #: frame k of a pipeline is the plan's frame (k + shift) mod frames
    status: str
    wall_s: float
    streams: int = 1                #: video streams the table runs at once

    @property
    def hyperperiod_s(self) -> float:
        return self.hyperperiod * TICK_S

    @property
    def tick_s(self) -> float:
        """Seconds per tick of the table's instants and lengths."""
        return TICK_S

    @property
    def late_s(self) -> float:
        """How far past its planned instant a pass may still start: half the margin every planned
        pass and load carries (``MARGIN_TICKS``), so a start this late still ends before its slots'
        next use."""
        return MARGIN_TICKS * TICK_S / 2

    def place(self, pipeline: str, index: int) -> tuple[int, int]:
        """Frame ``index`` of ``pipeline``: (the plan's frame, the hyperperiod it belongs to)."""
        n, j = divmod(index + self.shift[pipeline], self.frames[pipeline])
        return j, n


def whole_ticks(seconds: float, what: str) -> int:
    ticks = round(seconds / TICK_S)
    if ticks <= 0 or abs(seconds / TICK_S - ticks) > 1e-6:
        raise PlanError(f"{what} is {seconds!r} s: a cyclic plan needs a positive whole number of "
                        f"{TICK_S * 1e9:.0f} ns ticks")
    return ticks


def plan_jobs(workload: Workload) -> tuple[list[PlanJob], int, dict[str, int], dict[str, int]]:
    """The jobs of one hyperperiod (module docstring), the hyperperiod in ticks, frames per
    hyperperiod and the index shift of each pipeline."""
    pipelines = realtime(workload)
    for p in pipelines:
        if p.cpu_before or p.cpu_after:
            raise PlanError(f"pipeline {p.name} has CPU stages: the cyclic plan covers fabric-only pipelines")
        if p.jitter_s < 0 or p.deadline_s <= 0:
            raise PlanError(f"pipeline {p.name}: jitter must be >= 0 and the deadline > 0")
        # A module on a fused region occupies every slot of it and loads for longer than a slot's
        # partial: the table's slots hold one module each, so it cannot place one (edf can).
        fused = next((m for m in dict.fromkeys(p.modules) if m in workload.platform.modules and any(
            len(workload.platform.footprint(s.index, m)) > 1 for s in workload.platform.slots_for(m))), None)
        if fused is not None:
            raise PlanError(f"pipeline {p.name} uses {fused}, which takes a fused region of "
                            f"{workload.platform.name}: the cyclic plan places modules in single slots")
    periods = {p.name: whole_ticks(p.period_s, f"pipeline {p.name}'s period") for p in pipelines}
    control = control_seconds(workload.platform)
    hyper = math.lcm(*periods.values()) if periods else 0
    jobs, frames, shift = [], {}, {}
    for p in pipelines:
        frames[p.name] = hyper // periods[p.name]
        q = math.floor(p.offset_s / p.period_s + 1e-9)
        shift[p.name] = q
        offset = p.offset_s - q * p.period_s
        # A window longer than H would need a second fold; the first H of it is still a window.
        reach = min(p.deadline_s, hyper * TICK_S)
        for j in range(frames[p.name]):
            nominal = offset + j * p.period_s
            release, due = ticks_up(nominal + p.jitter_s), ticks_down(nominal + reach)
            for step, (modules, seconds) in enumerate(zip(p.pass_modules, p.pass_seconds, strict=True)):
                jobs.append(PlanJob(p.name, j, step, release, due, ticks_up(seconds + control) + MARGIN_TICKS,
                                    modules))
    return jobs, hyper, frames, shift


def load_length(platform: Platform) -> dict[int, int]:
    """Ticks of a load into each slot: its longest partial (the port's time) and its register
    traffic, rounded up, plus the margin."""
    control = control_seconds(platform)
    return {s.index: ticks_up(platform.slot_load_seconds(s.index) + control) + MARGIN_TICKS for s in platform.slots}


class _CyclicModel:
    """The CP-SAT model (module docstring)."""

    def __init__(self, jobs: list[PlanJob], platform: Platform, names: list[str], hyper: int, streams: int) -> None:
        cp = self.cp = require_ortools()
        m = self.m = cp.CpModel()
        self.jobs, self.platform, self.hp = jobs, platform, hyper
        hp = hyper
        self.admit = {n: m.NewBoolVar(f"admit[{n}]") for n in names}
        self.s, self.sn, self.bounds = {}, {}, {}
        stream = []
        for j in jobs:
            on = self.admit[j.pipeline]
            s, latest = start_var(m, j, on, f"s{j.key}")
            wrap = m.NewBoolVar(f"w{j.key}")
            sn = m.NewIntVar(0, hp - 1, f"sn{j.key}")
            m.Add(sn == s - hp * wrap)
            self.s[j.key], self.sn[j.key] = s, sn
            lo = j.release - hp if j.release >= hp else j.release
            hi = min(latest, hp - 1)
            self.bounds[j.key] = (lo, hi)
            stream += self._folded(sn, j.length, on, hi + j.length > hp, f"job{j.key}")
        for a, b in pairwise(jobs):
            if (a.pipeline, a.frame) == (b.pipeline, b.frame):
                m.Add(self.s[a.key] + a.length <= self.s[b.key]).OnlyEnforceIf(self.admit[a.pipeline])
        if streams == 1:
            m.AddNoOverlap(stream)
        else:                               # the shell's streams share the slots (docs/shell.md)
            m.AddCumulative(stream, [1] * len(stream), streams)
        self._slots()

    def _folded(self, start, length: int, on, crosses: bool, name: str) -> list:
        """The interval at ``start`` and, if it may cross hp, its copy hp earlier."""
        ivs = [self.m.NewOptionalFixedSizeIntervalVar(start, length, on, name)]
        if crosses:
            ivs.append(self.m.NewOptionalFixedSizeIntervalVar(start - self.hp, length, on, name + "-hp"))
        return ivs

    def _slots(self) -> None:
        m, hp = self.m, self.hp
        lt = load_length(self.platform)
        self.inst = [(j, i, mod) for j in self.jobs for i, mod in enumerate(j.modules)]
        self.x: dict[tuple[int, int], object] = {}
        for u, (j, _, mod) in enumerate(self.inst):
            homes = [s.index for s in self.platform.slots_for(mod)]
            if not homes:
                raise PlanError(f"module {mod} of pipeline {j.pipeline} fits no slot of {self.platform.name}")
            for s in homes:
                self.x[u, s] = m.NewBoolVar(f"x[{u},{s}]")
            m.Add(sum(self.x[u, s] for s in homes) == self.admit[j.pipeline])
        per_job_slot: dict[tuple, list] = {}
        for (u, s), var in self.x.items():
            per_job_slot.setdefault((self.inst[u][0].key, s), []).append(var)
        for group in per_job_slot.values():
            if len(group) > 1:
                m.AddAtMostOne(group)
        self.fresh, self.ln = {}, {}
        port = []
        firsts: dict[int, tuple] = {}       # slot -> (its empty literal, its first use's literals)
        for slot in self.platform.slots:
            s = slot.index
            nodes = [u for u in range(len(self.inst)) if (u, s) in self.x]
            arcs = [(0, 0, m.NewBoolVar(f"empty[{s}]"))]
            first, last, held = {}, {}, []
            for k, u in enumerate(nodes, start=1):
                j = self.inst[u][0]
                arcs.append((k, k, self.x[u, s].Not()))
                first[u] = m.NewBoolVar(f"first[{u},{s}]")
                last[u] = m.NewBoolVar(f"last[{u},{s}]")
                arcs += [(0, k, first[u]), (k, 0, last[u])]
                held += self._folded(self.sn[j.key], j.length, self.x[u, s], self.bounds[j.key][1] + j.length > hp,
                                     f"use[{u},{s}]")
                fresh = m.NewBoolVar(f"fresh[{u},{s}]")
                m.AddImplication(fresh, self.x[u, s])
                ln = m.NewIntVar(-hp, hp - 1, f"ln[{u},{s}]")      # may start in the previous hyperperiod
                m.Add(ln + lt[s] <= self.sn[j.key]).OnlyEnforceIf(fresh)
                lw = m.NewBoolVar(f"lw[{u},{s}]")
                lp = m.NewIntVar(0, hp - 1, f"lp[{u},{s}]")
                m.Add(lp == ln + hp * lw)
                port += self._folded(lp, lt[s], fresh, True, f"load[{u},{s}]")
                held += self._folded(lp, lt[s], fresh, True, f"hold[{u},{s}]")
                self.fresh[u, s], self.ln[u, s] = fresh, ln
            for a, u in enumerate(nodes, start=1):
                ju, _, mu = self.inst[u]
                eu = self.sn[ju.key] + ju.length
                for b, w in enumerate(nodes, start=1):
                    jw, _, mw = self.inst[w]
                    if ju.key == jw.key:
                        continue
                    if self.bounds[ju.key][0] + ju.length <= self.bounds[jw.key][1]:
                        arc = m.NewBoolVar(f"arc[{u},{w},{s}]")
                        arcs.append((a, b, arc))
                        m.Add(eu <= self.sn[jw.key]).OnlyEnforceIf(arc)
                        if mu != mw:
                            m.AddImplication(arc, self.fresh[w, s])
                            m.Add(self.ln[w, s] >= eu).OnlyEnforceIf(arc)
                    if mu != mw:                # the wrap: w first after u last, a hyperperiod on
                        m.AddBoolOr([last[u].Not(), first[w].Not(), self.fresh[w, s]])
                        m.Add(self.ln[w, s] >= eu - hp).OnlyEnforceIf([last[u], first[w]])
            m.AddCircuit(arcs)
            firsts[s] = (arcs[0][2], first)
            m.AddNoOverlap(held)
        m.AddNoOverlap(port)
        self._break_slot_symmetry(firsts, lt)

    def _break_slot_symmetry(self, firsts: dict, lt: dict[int, int]) -> None:
        """Slots that load alike and take the same modules are interchangeable (renaming them maps
        a table to one as good): keep only tables whose slots' first uses in the hyperperiod come in
        instance order, an empty slot last (as exact.py does for its horizon)."""
        platform = self.platform
        homes = [frozenset(mod for mod in platform.modules if slot.name in platform.module(mod).slots)
                 for slot in platform.slots]
        if len(set(homes)) != 1 or len(set(lt.values())) != 1:
            return
        big = len(self.inst) + 1
        order = [sum(u * lit for u, lit in first.items()) + big * empty for empty, first in
                 (firsts[s] for s in sorted(firsts))]
        for a, b in pairwise(order):
            self.m.Add(a <= b)

    def solve(self, time_limit_s: float):
        m = self.m
        weight = len(self.fresh) + 1
        m.Maximize(weight * sum(self.admit.values()) - sum(self.fresh.values()))
        solver = self.cp.CpSolver()
        solver.parameters.max_time_in_seconds = time_limit_s
        solver.parameters.num_workers = WORKERS
        solver.parameters.cp_model_probing_level = 0
        status = solver.Solve(m)
        name = {self.cp.OPTIMAL: "optimal", self.cp.FEASIBLE: "feasible"}.get(status, "unknown")
        return solver, name

    def plan(self, solver, status: str, frames: dict[str, int], shift: dict[str, int], wall: float) -> CyclicPlan:
        """The table the solver found; spare loads (of the module the slot already holds) left out."""
        hp = self.hp
        admitted = tuple(n for n, v in self.admit.items() if solver.Value(v))
        jobs = tuple(j for j in self.jobs if j.pipeline in admitted)
        starts = {j.key: solver.Value(self.s[j.key]) for j in jobs}
        slots: dict[tuple[str, int, int], list[int]] = {j.key: [-1] * len(j.modules) for j in jobs}
        by_slot: dict[int, list[tuple[int, str, int, PlanJob]]] = {}
        for (u, s), var in self.x.items():
            if solver.Value(var):
                j, i, mod = self.inst[u]
                slots[j.key][i] = s
                by_slot.setdefault(s, []).append((starts[j.key] % hp, mod, u, j))
        lt = load_length(self.platform)
        loads, initial = [], {}
        for s, uses in sorted(by_slot.items()):
            uses.sort()
            mine = []
            changes = [k for k in range(len(uses)) if uses[k - 1][1] != uses[k][1]]  # k = 0: after the last use
            for c, k in enumerate(changes):
                start = solver.Value(self.ln[uses[k][2], s]) % hp
                upto = changes[(c + 1) % len(changes)]
                served = [uses[i % len(uses)] for i in range(k, upto if upto > k else upto + len(uses))]
                # A use folded after the load is in the load's cycle, else the next; its frame's
                # hyperperiod is that cycle less the fold of its start.
                mine.append(PlanLoad(s, uses[k][1], start, lt[s], tuple(
                    (j.pipeline, j.frame, (0 if t > start else 1) - starts[j.key] // hp) for t, _, _, j in served)))
            loads += mine
            # What the slot holds at the start of a hyperperiod: the last load's module (one that
            # straddles the wrap is under way then: the warm-up has done it), else its one module.
            initial[s] = max(mine, key=lambda ld: ld.start).module if mine else uses[0][1]
        refused = {n: "not in the cyclic plan: CP-SAT found no table that serves it beside the admitted "
                      f"pipelines (status {status})" for n in self.admit if n not in admitted}
        return CyclicPlan(hp, admitted, refused, jobs, starts, {k: tuple(v) for k, v in slots.items()},
                          tuple(sorted(loads, key=lambda ld: ld.start)), initial, frames, shift, status, wall)


def table_to_run(workload: Workload, time_limit_s: float = PLAN_TIME_LIMIT_S, streams: int = 1,
                 edf_admits: int = 0) -> tuple[CyclicPlan | None, str]:
    """The table the ``planned`` policy is handed for ``workload`` on ``streams`` video streams (the
    engine must carry as many: ``Engine(video_streams=...)``), and "", or None and why there is
    none to run: no table, or one serving fewer pipelines than ``edf_admits`` (what edf's admission
    guarantees; a time-limited solve may stop at a poor table). Without one the policy is edf."""
    try:
        plan = cyclic_plan(workload, time_limit_s, streams)
    except PlanError as exc:
        return None, str(exc)
    if plan is None:
        return None, f"CP-SAT found no cyclic table in {time_limit_s:g} s"
    if not plan.admitted:
        return None, "the table serves no pipeline"
    if len(plan.admitted) < edf_admits:
        return None, f"the table serves {len(plan.admitted)} pipelines, edf's admission {edf_admits}"
    log.info("planned: table (%s) over %.1f ms serves %s with %d loads per hyperperiod", plan.status,
             plan.hyperperiod_s * 1e3, ", ".join(plan.admitted), len(plan.loads))
    return plan, ""


def cyclic_plan(workload: Workload, time_limit_s: float = PLAN_TIME_LIMIT_S, streams: int = 1) -> CyclicPlan | None:
    """The cyclic table of ``workload``'s real-time pipelines (module docstring) on ``streams`` of
    the shell's video streams, or None if CP-SAT found no feasible one in ``time_limit_s``. Raises
    PlanError on a workload it cannot take."""
    if not 1 <= streams <= workload.platform.streams:
        raise PlanError(f"{workload.platform.name} has {workload.platform.streams} video streams, not {streams}")
    jobs, hyper, frames, shift = plan_jobs(workload)
    if not jobs:
        raise PlanError("the workload has no real-time pipeline to plan")
    uses = sum(len(j.modules) for j in jobs)
    if uses > MAX_USES:
        raise PlanError(f"one hyperperiod ({hyper * TICK_S * 1e3:g} ms) holds {uses} module uses, more than a "
                        f"table takes ({MAX_USES})")
    names = [p.name for p in realtime(workload)]
    started = time.perf_counter()
    model = _CyclicModel(jobs, workload.platform, names, hyper, streams)
    solver, status = model.solve(time_limit_s)
    if status == "unknown":
        return None
    return replace(model.plan(solver, status, frames, shift, time.perf_counter() - started), streams=streams)

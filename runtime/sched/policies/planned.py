"""``planned``: run a cyclic table (runtime/sched/limits/cyclic.py) for a fixed set of periodic
pipelines, guaranteed by construction (docs/planned.md).

The table is made before the run, by whoever builds it (``cyclic.table_to_run``: bench), for the
workload's real-time pipelines; it admits the pipelines it serves and refuses the rest with a
reason, and the policy is handed it. Then, on the engine:

- the warm-up loads each slot with what the table holds at the start of a hyperperiod;
- every load of the table starts at its planned instant (t0 + n*H + start), into its slot, for
  every hyperperiod n, as soon as the use before it in that slot has ended (the table leaves the
  slot and the port free by then; only float rounding can make an end come a hair later);
- every frame pass starts at its planned instant on its planned slots, never before its release;
  a frame that arrives later than its pipeline's declared jitter allows is dropped (the table has
  no room for it), as is one whose pass could not start within the table's ``late_s`` of its
  instant (its slots still held: a backend slower than the timing model; the table stays intact
  for the rest).

No DNN runs under a table (its slot and port time is not proved free for a whole lend). Handed no
table (CP-SAT found none in its time limit, the workload is one the table cannot take, or edf's
admission guarantees more pipelines than the table serves), the policy is edf, its admission and
its dispatch: the run says ``plan: none``.

The policy reads the table only through ``Table`` below and never makes one: the solver is the
limits layer's, and a policy imports the engine's view alone (tests/test_layers.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from fpgashare.sched.core.jobs import Frame
from fpgashare.sched.core.policy import Policy
from fpgashare.sched.core.view import EngineView, SlotState
from fpgashare.sched.policies.edf import EdfPolicy

#: Float noise tolerated when comparing the engine's time with a planned instant.
EPS_S = 1e-12


class TableLoad(Protocol):
    """One load of the table (``cyclic.PlanLoad``)."""

    slot: int
    module: str
    start: int
    serves: tuple[tuple[str, int, int], ...]


class Table(Protocol):
    """A cyclic table as the policy reads it (``cyclic.CyclicPlan``): instants in ticks of
    ``tick_s`` from the start of a hyperperiod of ``hyperperiod`` ticks."""

    hyperperiod: int
    admitted: tuple[str, ...]
    starts: dict[tuple[str, int, int], int]
    slots: dict[tuple[str, int, int], tuple[int, ...]]
    loads: Sequence[TableLoad]
    initial: dict[int, str]
    frames: dict[str, int]
    shift: dict[str, int]
    status: str
    wall_s: float
    streams: int

    @property
    def hyperperiod_s(self) -> float: ...

    @property
    def tick_s(self) -> float: ...

    @property
    def late_s(self) -> float: ...

    def place(self, pipeline: str, index: int) -> tuple[int, int]: ...


class PlannedPolicy(Policy):
    name = "planned"
    admission = False       #: the table admits (cyclic.table_to_run); without one, edf's admission

    def __init__(self, plan: Table | None = None, no_plan_reason: str = "no table was handed to it") -> None:
        """``plan``: the table to run (``cyclic.table_to_run``), or None and why there is none:
        then the policy is edf."""
        self.plan = plan
        self.no_plan_reason = "" if plan is not None else no_plan_reason
        self.fallback = EdfPolicy()
        self._load_seq = 0            # loads of the table started so far, over all hyperperiods
        self._arrived: set[str] = set()
        self._specs: dict = {}          # the engine's real-time pipelines by name

    def describe(self) -> dict | str:
        """The table in a run's JSON, or ``none``."""
        plan = self.plan
        if plan is None:
            return "none"
        return {"status": plan.status, "hyperperiod_ms": round(plan.hyperperiod_s * 1e3, 4), "streams": plan.streams,
                "admitted": list(plan.admitted), "loads_per_hyperperiod": len(plan.loads),
                "solve_s": round(plan.wall_s, 2)}

    # ---- on the engine
    def setup(self, engine: EngineView) -> None:
        if self.plan is None:
            self.fallback.setup(engine)
            return
        self._specs = {p.name: p for p in engine.pipelines}
        self._load_seq, self._arrived = 0, set()      # a run starts the table from its first load
        for slot, module in sorted(self.plan.initial.items()):
            engine.load(slot, module, "warm-up")

    def dispatch(self, engine: EngineView) -> None:
        if self.plan is None:
            self.fallback.dispatch(engine)
            return
        self._loads(engine)
        for frame in sorted(engine.pending, key=lambda f: f.seq):
            self._frame(engine, frame)

    def _loads(self, engine: EngineView) -> None:
        """Start the table's loads whose instants have come."""
        plan = self.plan
        if not plan.loads:
            return
        while True:
            n, i = divmod(self._load_seq, len(plan.loads))
            load = plan.loads[i]
            at = engine.t0 + (n * plan.hyperperiod + load.start) * plan.tick_s
            if at >= engine.end_s + plan.hyperperiod_s:
                return          # every frame's passes are over: a frame's window ends within 2H of its hyperperiod
            if at > engine.now + EPS_S:
                engine.wake(at)
                return
            slot = engine.slots.slots[load.slot]
            if slot.state not in (SlotState.READY, SlotState.BLANK):
                return          # the use before it ends at this instant: its end is the next event
            # A load none of whose uses' frames come (before the first frame, after the last) is
            # skipped: the slot's next load does not depend on what it holds.
            if slot.module != load.module and any(self._comes(engine, p, j, n + dn) for p, j, dn in load.serves):
                engine.load(load.slot, load.module, "plan")
            self._load_seq += 1

    def _comes(self, engine: EngineView, pipeline: str, j: int, n: int) -> bool:
        """Whether the run releases the plan's frame ``j`` of hyperperiod ``n`` of ``pipeline``."""
        p = self._specs[pipeline]
        index = n * self.plan.frames[pipeline] + j - self.plan.shift[pipeline]
        return index >= 0 and p.offset_s + index * p.period_s < engine.end_s - engine.t0

    def _frame(self, engine: EngineView, frame: Frame) -> None:
        """Start ``frame``'s pass at its instant, or drop it if the table cannot take it."""
        plan, p = self.plan, frame.pipeline
        if frame.key not in self._arrived:
            self._arrived.add(frame.key)
            latest = engine.t0 + p.offset_s + frame.index * p.period_s + p.jitter_s
            if frame.release > latest + EPS_S:
                engine.drop(frame, f"arrived {(frame.release - latest) * 1e6:.1f} us after its latest declared "
                                   f"arrival (jitter {p.jitter_s * 1e3:g} ms): the table has no room for it")
                return
        j, n = plan.place(p.name, frame.index)
        key = (p.name, j, frame.step)
        at = engine.t0 + (n * plan.hyperperiod + plan.starts[key]) * plan.tick_s
        if at > engine.now + EPS_S:
            engine.wake(at)
            return
        slots = plan.slots[key]
        ready = all(engine.slots.slots[s].state is SlotState.READY and engine.slots.slots[s].module == m
                    for s, m in zip(slots, frame.modules, strict=True))
        if ready and engine.stream.free():
            engine.start(frame, slots)
        elif engine.now >= at + plan.late_s - EPS_S:
            engine.drop(frame, f"could not start pass {frame.step} at its planned instant {at * 1e3:.4f} ms "
                               "(its slots or the stream were still taken)")
        else:                   # a load or a pass ends at this instant: its end is the next event
            engine.wake(at + plan.late_s)

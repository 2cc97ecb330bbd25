"""Loads per hyperperiod once a run is in its steady state, against the best cyclic schedule.

The exact model's fewest loads (``exact.fewest_loads``) are those of a *one-shot* schedule: one
hyperperiod from free first contents, ending with the hyperperiod. A camera pipeline runs
forever, and a schedule that runs on must leave each hyperperiod with the slots ready for the
next: a module swapped out for another pipeline's frame goes back in before the frame that needs
it next, inside or after the horizon. The one-shot optimum never pays that, so the loads of a
continuing schedule that repeats every hyperperiod exceed it whenever two frames of a
hyperperiod need the same slot for different modules (docs/limits.md, "Loads in the steady
state", has an example where every continuing schedule makes two loads a hyperperiod and the
one-shot optimum one).

The steady-state figure therefore compares, per hyperperiod:

- ``run_per_hyperperiod``: the real-time loads the scheduler made in hyperperiods 3 .. m + 2 of a
  run of m + 3 (the first two hold the warm-up's after-effects, the last the run's end), divided
  by m;
- ``cyclic_optimum``: the fewest loads of one hyperperiod of a schedule that repeats every
  hyperperiod (of the pipelines it serves, which may be shorter: its loads are then counted as
  often as it fits in the workload's) and serves the same pipelines (``cyclic.cyclic_plan`` on those pipelines: most
  pipelines, then fewest loads; its slots' contents wrap from the end of a hyperperiod to the
  start of the next, docs/planned.md). It is achievable (planned runs such tables); with jitter
  its passes start at instants valid for every draw, so it may load more than a schedule that
  adapts to the draws. It is an optimum over schedules that repeat every hyperperiod, not a
  bound for all schedules: one repeating every k hyperperiods may do better, so a run below it is
  no figure beyond a limit.
"""

from __future__ import annotations

from dataclasses import replace

from fpgashare.catalogue.workload import Workload
from fpgashare.sched.limits import dnn_windows
from fpgashare.sched.limits.cyclic import PlanError, cyclic_plan
from fpgashare.sched.limits.jobs import realtime

#: Hyperperiods counted.
STEADY_HYPERPERIODS = 4
#: Hyperperiods before the count. One is not enough: a frame may run up to its deadline after its
#: release, so the first hyperperiod lacks the runs of frames released before the start and the
#: loads they cause (a module they would have swapped out is still resident, and the load putting
#: it back is skipped). In a schedule that repeats every hyperperiod, every frame run in the second
#: hyperperiod was released in the run (deadline and jitter within a hyperperiod), so its runs are
#: the steady ones; each slot's contents at the start of the third are those its last load of the
#: second left, the steady ones too; from there on the loads are the steady state's.
LEAD_IN_HYPERPERIODS = 2


def steady_workload(workload: Workload, hyperperiods: int = STEADY_HYPERPERIODS) -> Workload:
    """``workload`` run for ``hyperperiods`` + 3 of its hyperperiods (its duration is one): the
    first two hold the warm-up's after-effects (``LEAD_IN_HYPERPERIODS``), the last the run's end
    (a load for a frame after the end is never made)."""
    return replace(workload, duration_s=workload.duration_s * (LEAD_IN_HYPERPERIODS + hyperperiods + 1))


def run_per_hyperperiod(engine, hyper_s: float, hyperperiods: int = STEADY_HYPERPERIODS) -> float:
    """Real-time loads (not a DNN tile's) that started in the ``hyperperiods`` after the first
    ``LEAD_IN_HYPERPERIODS`` that follow the engine's first release ``t0``, per hyperperiod."""
    lo = engine.t0 + LEAD_IN_HYPERPERIODS * hyper_s
    hi = lo + hyperperiods * hyper_s
    tile = f"load {dnn_windows.TILE} "
    loads = sum(1 for e in engine.trace if e.track == "port" and e.name.startswith("load ")
                and not e.name.startswith(tile) and lo - 1e-12 <= e.start < hi - 1e-12)
    return loads / hyperperiods


def cyclic_optimum(workload: Workload, serve: list[str], time_limit_s: float) -> dict:
    """The fewest loads a hyperperiod of a cyclic table serving exactly ``serve`` makes:
    ``{"loads", "proved"}``, or ``{"loads": None, "why"}`` where no table serves them all within
    ``time_limit_s`` (or the table model does not take the workload)."""
    rt = [p for p in realtime(workload) if p.name in set(serve)]
    if not rt:
        return {"loads": 0, "proved": True}
    try:
        plan = cyclic_plan(replace(workload, pipelines=tuple(rt)), time_limit_s=time_limit_s)
    except PlanError as e:
        return {"loads": None, "why": str(e)}
    if plan is None or set(plan.admitted) != {p.name for p in rt}:
        return {"loads": None, "why": "no cyclic table serves them all" if plan else "no table within the time limit"}
    return {"loads": table_loads(len(plan.loads), plan.hyperperiod_s, workload.duration_s),
            "proved": plan.status == "optimal"}


def table_loads(loads: int, table_hyper_s: float, hyper_s: float) -> int:
    """A cyclic table's ``loads`` a hyperperiod of its own (``table_hyper_s``) over ``hyper_s``, the
    workload's hyperperiod: a multiple of the table's, whose pipelines may repeat sooner."""
    repeats = round(hyper_s / table_hyper_s)
    if repeats < 1 or abs(repeats * table_hyper_s - hyper_s) > 1e-3 * table_hyper_s:
        raise ValueError(f"{hyper_s} s is no multiple of the table's hyperperiod {table_hyper_s} s")
    return loads * repeats


def figures(engine, workload: Workload, serve: list[str], cyclic: dict,
            hyperperiods: int = STEADY_HYPERPERIODS) -> dict:
    """The steady-state loads of a run of ``steady_workload(workload)`` beside ``cyclic``
    (``cyclic_optimum`` of the pipelines it served)."""
    run = run_per_hyperperiod(engine, workload.duration_s, hyperperiods)
    out = {"run_per_hyperperiod": round(run, 3), "hyperperiods": hyperperiods, "served": sorted(serve),
           "cyclic_optimum": cyclic["loads"]}
    if cyclic["loads"] is None:
        out["why_no_optimum"] = cyclic["why"]
        return out
    out["cyclic_proved"] = cyclic["proved"]
    out["ratio"] = round(run / cyclic["loads"], 3) if cyclic["loads"] else (1.0 if not run else None)
    out["within_1.1"] = run <= 1.1 * cyclic["loads"] + 1e-9
    return out

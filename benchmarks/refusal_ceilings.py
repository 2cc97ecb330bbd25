"""Where edf's remaining refusals come from: the most a mechanism of each kind could gain.

On ``limit_gap``'s generated workloads edf admits fewer pipelines than the exact optimum serves.
This measures, per workload, how many pipelines edf's admission (the bench path: phased tests,
evicting plans, pinned frames first, the stream planner) would take if one term of its analysis
were *removed*, and sets each count against the optimum. A removed term is not a sound test: each
count is a **ceiling** on what any mechanism that shrinks that term can gain, never a claim that
the set could be admitted.

- ``put-backs free``: an evictor's job without the reload of the pins it takes (no put-back,
  no tail): the most any way of putting pins back (lazily, hidden, fewer) can gain;
- ``loads free``: every load takes no port time (a load's register traffic X stays): the most
  any hiding or saving of loads (prefetch promised under other frames, loads before a known
  release, fewer loads per frame) can gain;
- ``no blocking``: no job delays a more urgent one that comes while it runs (the blocking term
  of non-preemptive EDF is 0, as if frames could be preempted at no cost): the most any inserted
  idle time, frames on a spare stream, or preemption can gain;
- ``loads free, no blocking``: both;
- ``commit before release``: not a removed term but frames committed before their known release
  (runtime/sched/analysis/early_commit.py) tried on every analysis path: a single-pass frame with
  ``n`` loads beyond its jitter ``J`` released ``δ = n·L − J`` before its earliest release,
  without jitter, due by its earliest deadline, for whichever subset of pipelines passes. edf
  has it for plain and evicting plans (admission tries it last); on pinned-first plans it is not
  argued, so this row is a ceiling on extending it there.

    python -m benchmarks.refusal_ceilings --rows out/limit_gap.json [more.json ...]  # limit_gap --json runs
    python -m benchmarks.refusal_ceilings --count 40 [--seed N]                      # computes the optimum itself
    python -m benchmarks.refusal_ceilings --quick

The relaxations replace the analysis's functions for the duration of one admission
(``unittest.mock.patch``): this is a measurement of the analysis, not a part of it.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import itertools
import json
import logging
import random
import sys
from collections.abc import Iterator
from pathlib import Path
from unittest import mock

import numpy as np
from fpgashare.backends import backend_class
from fpgashare.catalogue.workload import Workload
from fpgashare.cli.bench import streams_used
from fpgashare.sched.analysis import evicting_pins, processor_demand, schedulability
from fpgashare.sched.analysis.admission import admit
from fpgashare.sched.board.stream_plan import plan_streams

from benchmarks.limit_gap import small_workload
from benchmarks.results import write_result

log = logging.getLogger(__name__)

RELAXATIONS = ("as is", "put-backs free", "loads free", "no blocking", "loads free, no blocking",
               "commit before release")

_load_and_control = schedulability.load_and_control
_evicting_plan = evicting_pins._plan
_release_test = processor_demand.release_test


def _free_loads(*args, **kwargs) -> tuple[float, float]:
    return 0.0, _load_and_control(*args, **kwargs)[1]


def _no_put_back(pipelines, platform, pins, slots, ok):
    found = _evicting_plan(pipelines, platform, pins, slots, ok)
    if found is None:
        return None
    rate, plan, evictors = found
    loads = {name: n - evictors.get(name, 0) for name, n in plan.loads.items()}
    return rate, schedulability.ResidencyPlan(plan.pinned, loads), evictors


def _kept_tail(jobs, tail, first):
    return None if tail is None or not np.any(tail) else np.asarray(tail, dtype=np.float64)


def _no_blocking(jobs, periods, deadlines, jitters, phases, extra_block_s, most_slack=True, first=None, tail=None,
                 one_job=None, hold=None):
    # The pinned-first rule's blocking with every frame "pinned" and no stream time is 0 for every
    # window, phase-free and phased; tails (credits only) are kept.
    nothing = processor_demand.PinnedFirst(np.zeros_like(jobs), np.ones(jobs.shape, dtype=bool))
    with mock.patch.object(processor_demand, "_checked_tail", _kept_tail):
        return _release_test(jobs, periods, deadlines, jitters, phases, extra_block_s, most_slack, nothing, tail,
                             one_job, hold)


_arrays = schedulability._arrays
#: id(S) -> (S, each task's stream time with its register traffic), for the release test that follows
_STREAMS: dict[int, tuple[np.ndarray, np.ndarray]] = {}


def _remembered_arrays(pipelines, loads, load_s, control_s=0.0):
    arrays = _arrays(pipelines, loads, load_s, control_s)
    _STREAMS.clear()
    _STREAMS[id(arrays[0])] = (arrays[0], np.array([p.exec_s + len(p.pass_seconds) * control_s for p in pipelines]))
    return arrays


def _committed_before_release(jobs, periods, deadlines, jitters, phases, extra_block_s, most_slack=True, first=None,
                              tail=None, one_job=None, hold=None):
    best = _release_test(jobs, periods, deadlines, jitters, phases, extra_block_s, most_slack, first, tail, one_job,
                         hold)
    known = _STREAMS.get(id(jobs))
    # Holds are budgets given after admission, never with early frames (holds.py): no early frames then.
    if phases is None or (best.ok and not most_slack) or known is None or known[0] is not jobs \
            or (hold is not None and np.any(hold)):
        return best
    loads = jobs - known[1] - (0.0 if tail is None else np.asarray(tail, dtype=np.float64))
    single = np.ones(jobs.shape, dtype=bool) if one_job is None else np.asarray(one_job, dtype=bool)
    early = np.where(single, np.maximum(0.0, loads - jitters), 0.0)
    chosen = [i for i in range(jobs.size) if early[i] > 0.0]
    for k in range(1, len(chosen) + 1):
        for subset in itertools.combinations(chosen, k):
            shift = np.zeros_like(jobs)
            shift[list(subset)] = early[list(subset)]
            check = _release_test(jobs, periods, deadlines + shift, np.where(shift > 0.0, 0.0, jitters),
                                  phases - shift, extra_block_s, most_slack, first, tail, one_job)
            if check.slack_s > best.slack_s:
                best = check
            if best.ok and not most_slack:
                return best
    return best


@contextlib.contextmanager
def relaxed(name: str) -> Iterator[None]:
    """The analysis with the term ``name`` removed (module docstring), until the block ends."""
    with contextlib.ExitStack() as stack:
        if "loads free" in name:
            for module in (schedulability, evicting_pins):
                stack.enter_context(mock.patch.object(module, "load_and_control", _free_loads))
        if name == "put-backs free":
            stack.enter_context(mock.patch.object(evicting_pins, "_plan", _no_put_back))
            stack.enter_context(mock.patch.object(evicting_pins, "put_back_tails",
                                                  lambda pipelines, evictors, load_s: np.zeros(len(pipelines))))
        if "no blocking" in name:
            for module in (schedulability, evicting_pins):
                stack.enter_context(mock.patch.object(module, "release_test", _no_blocking))
        if name == "commit before release":
            for module in (schedulability, evicting_pins):
                stack.enter_context(mock.patch.object(module, "_arrays", _remembered_arrays))
                stack.enter_context(mock.patch.object(module, "release_test", _committed_before_release))
        yield


def admitted(workload: Workload) -> int:
    """Real-time pipelines edf admits on ``workload`` as ``fpgashare bench`` does (model backend)."""
    used = streams_used(workload.platform, backend_class("model").streams_carried(workload.platform), None)
    if used > 1:
        return len(plan_streams(workload, used, phased=True, spare_stream=True).admitted)
    return len(admit(workload, phased=True).admitted)


def measure(seed: int, optimum: int, baseline_all: bool | None = None) -> dict:
    """Per relaxation, edf's admitted count on the workload of ``seed`` (at most the optimum)."""
    workload = small_workload(seed)
    counts = {}
    for name in RELAXATIONS:
        with relaxed(name):
            counts[name] = min(admitted(workload), optimum)
    return {"seed": seed, "platform": workload.platform.name, "optimum": optimum, "admitted": counts,
            "baseline_serves_all": baseline_all}


def classify(row: dict) -> str:
    """Which ceiling recovers the workload's gap in full: the kind of mechanism it needs."""
    got, opt = row["admitted"], row["optimum"]
    if got["as is"] >= opt:
        return "none"
    if got["put-backs free"] >= opt:
        return "put-backs"
    loads, block = got["loads free"] >= opt, got["no blocking"] >= opt
    return ("loads or blocking" if loads and block else "loads" if loads else "blocking" if block
            else "loads and blocking" if got["loads free, no blocking"] >= opt else "neither")


def summarize(rows: list[dict]) -> dict:
    optimum = sum(r["optimum"] for r in rows)
    served = {n: sum(r["admitted"][n] for r in rows) for n in RELAXATIONS}
    kinds = collections.Counter(classify(r) for r in rows)
    by_platform = collections.Counter((r["platform"], classify(r)) for r in rows if classify(r) != "none")
    beaten = [r for r in rows if r["baseline_serves_all"] and classify(r) != "none"]
    return {"workloads": len(rows), "optimum_summed": optimum,
            "admitted_over_optimum": {n: round(served[n] / optimum, 3) if optimum else None for n in RELAXATIONS},
            "gap_pipelines": {n: optimum - served[n] for n in RELAXATIONS},
            "workloads_by_kind": dict(kinds.most_common()),
            "by_platform": {f"{p}: {k}": v for (p, k), v in sorted(by_platform.items())},
            "baseline_serves_all_by_kind": dict(collections.Counter(classify(r) for r in beaten).most_common())}


def lines(summary: dict) -> list[str]:
    out = [f"{summary['workloads']} workloads, optimum {summary['optimum_summed']} pipelines (summed)",
           f"{'analysis':26s} {'admitted/optimum':>16s} {'pipelines short':>16s}"]
    for n in RELAXATIONS:
        out.append(f"{n:26s} {summary['admitted_over_optimum'][n]!s:>16s} {summary['gap_pipelines'][n]:16d}")
    out.append(f"workloads short of the optimum, by the ceiling that closes them: {summary['workloads_by_kind']}")
    out.append(f"  by platform: {summary['by_platform']}")
    out.append(f"  of those, where a baseline serves every pipeline: {summary['baseline_serves_all_by_kind']}")
    return out


def _from_rows(files: list[str]) -> list[dict]:
    rows = []
    for f in files:
        for r in json.loads(Path(f).read_text())["rows"]:
            if not r["proved"]:
                continue
            beat = any(name not in ("edf", "planned") and figs["served_all"] for name, figs in r["schedulers"].items())
            rows.append(measure(r["seed"], r["optimum"], beat if "edf" in r["schedulers"] else None))
    return rows


def _computed(first: int, count: int, time_limit_s: float) -> list[dict]:
    from fpgashare.sched.limits.bench_limits import Limits

    rows = []
    for seed in range(first, first + count):
        found = Limits(small_workload(seed), max_frames=None, time_limit_s=time_limit_s, max_modules=None).admitted()
        if found["subset_proved"]:
            rows.append(measure(seed, found["subset"]))
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", nargs="+", metavar="JSON", help="limit_gap --json files (their optimum is reused)")
    ap.add_argument("--count", type=int, default=40)
    ap.add_argument("--seed", type=int, default=None, help="first seed (default: fresh)")
    ap.add_argument("--quick", action="store_true", help="a few workloads (seconds)")
    ap.add_argument("--time-limit", type=float, default=10.0, help="CP-SAT seconds per solve")
    ap.add_argument("--json", default=None, help="write the rows and the summary here")
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    if args.rows:
        rows = _from_rows(args.rows)
    else:
        first = args.seed if args.seed is not None else random.SystemRandom().randrange(1, 10**9)
        log.info("seeds %d .. %d", first, first + (3 if args.quick else args.count) - 1)
        rows = _computed(first, 3 if args.quick else args.count, 2.0 if args.quick else args.time_limit)
    summary = summarize(rows)
    sys.stdout.write("\n".join(lines(summary)) + "\n")
    write_result("refusal_ceilings", summary, quick=args.quick)
    if args.json:
        Path(args.json).write_text(json.dumps({"summary": summary, "rows": rows}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

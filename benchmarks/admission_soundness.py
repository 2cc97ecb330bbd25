"""Admitted means guaranteed, checked on random workloads (benchmarks/workload_gen.py).

For each seeded workload (both platforms, random offsets and jitter, one hyperperiod or 10 s):
edf admits pipelines with the analysis and runs them on the twin; any late or dropped frame of an
admitted pipeline is a soundness failure (the script exits 1). It also measures the test's
pessimism: of the sets it rejects, how many in fact ran clean under edf without admission; and of
the sets a utilisation bound accepts (frames alone fill at most the stream), how many it rejects.

With ``--streams`` each workload runs on 1..S streams (S: the platform's; drawn per workload):
pipelines are partitioned over streams and slots (runtime/sched/board/stream_plan.py) and every
partition's engine shares the one configuration port (``Board``, runtime/sched/board/board.py).

With ``--phased`` the admission may use the workloads' known phases (``analyse(phased=True)``,
runtime/sched/analysis/phased_demand.py), as ``fpgashare bench`` does; without, the phase-free test a
daemon uses. The phased test applies only where the periods' hyperperiod is short, so with
``--phased`` every odd seed draws one of ``limit_gap``'s small workloads instead (periods of 10,
20 or 40 ms, random phases and jitter), run for 25 hyperperiods.

    python -m benchmarks.admission_soundness [--quick] [--count 200] [--seed S] [--max-s 10] [--streams]
                                             [--phased] [--json]

Seeds are fresh each run unless ``--seed`` is given (the first is printed and kept in the results,
to reproduce a failure).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from dataclasses import replace

from fpgashare.backends.model import ModelBackend
from fpgashare.catalogue.workload import Workload
from fpgashare.cli.bench import unadmitted_misses
from fpgashare.sched.analysis.admission import admit
from fpgashare.sched.board.stream_plan import plan_streams
from fpgashare.sched.board.workload_run import run_board
from fpgashare.sched.policies.edf import EdfPolicy
from fpgashare.sched.sources.periodic import run_workload

from benchmarks.limit_gap import LONG_RUN_HYPERPERIODS, small_workload
from benchmarks.results import write_result
from benchmarks.workload_gen import random_workload


def misses(summary: dict, names: set[str] | None = None) -> int:
    return sum(p["late"] + p["dropped"] + p["errors"] for n, p in summary["pipelines"].items()
               if names is None or n in names)


def draw(seed: int, max_s: float, phased: bool) -> Workload:
    """The seed's workload (module docstring)."""
    if phased and seed % 2:
        small = small_workload(seed)
        return replace(small, duration_s=min(max_s, small.duration_s * LONG_RUN_HYPERPERIODS))
    return random_workload(seed, max_s=max_s)


def check(seed: int, max_s: float, streams: bool = False, phased: bool = False) -> dict:
    workload = draw(seed, max_s, phased)
    realtime = [p for p in workload.pipelines if p.realtime]
    started = time.perf_counter()
    if streams:
        count = random.Random(seed ^ 0x5EED).randint(1, workload.platform.streams)
        plan = plan_streams(workload, count, phased=phased, spare_stream=True)
        admit_ms = (time.perf_counter() - started) * 1e3
        kept = {p.name for p in plan.admitted}
        engine, summary = run_board(workload, ModelBackend(workload.platform), plan, EdfPolicy)
        engine.pin_moves = sum(e.pin_moves for e in engine.parts)
    else:
        count = 1
        admission = admit(workload, phased=phased)
        admit_ms = (time.perf_counter() - started) * 1e3
        kept = {p.name for p in admission.admitted}
        admitted = replace(workload, pipelines=tuple(p for p in workload.pipelines
                                                     if not p.realtime or p.name in kept))
        engine, summary = run_workload(admitted, ModelBackend(workload.platform), EdfPolicy(),
                                       contract=admission.contract)
    row = {"seed": seed, "platform": workload.platform.name, "streams": count, "pipelines": len(realtime),
           "admitted": len(kept), "duration_s": workload.duration_s, "admit_ms": round(admit_ms, 3),
           "misses": misses(summary, kept), "frames": sum(p["submitted"] for p in summary["pipelines"].values()),
           "utilisation": round(sum(p.exec_s / p.period_s for p in realtime), 4), "pin_moves": engine.pin_moves,
           "admitted_in_passes": sum(len(p.pass_stages) > 1 for p in realtime if p.name in kept)}
    if len(kept) < len(realtime):
        row["rejected_set_ran_clean"] = unadmitted_misses(workload, "edf", count) == 0
    return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--count", type=int, default=200)
    ap.add_argument("--seed", type=int, default=None, help="first seed (default: fresh)")
    ap.add_argument("--max-s", type=float, default=10.0)
    ap.add_argument("--streams", action="store_true", help="run each workload on 1..S streams")
    ap.add_argument("--phased", action="store_true", help="admit with the workloads' known phases")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--quick", action="store_true", help="a few short workloads: checks the benchmark runs")
    args = ap.parse_args()
    if args.quick:
        args.count, args.max_s = min(args.count, 4), min(args.max_s, 0.5)
    first = args.seed if args.seed is not None else random.SystemRandom().randrange(1, 2**31)
    print(f"workloads {args.count} from seed {first}", flush=True)
    rows = [check(seed, args.max_s, args.streams, args.phased) for seed in range(first, first + args.count)]
    rejected = [r for r in rows if "rejected_set_ran_clean" in r]
    clean = [r for r in rejected if r["rejected_set_ran_clean"]]
    under_bound = [r for r in rows if r["utilisation"] <= 1.0]
    refused_under_bound = [r for r in under_bound if r["admitted"] < r["pipelines"]]
    report = {
        "first_seed": first,
        "workloads": len(rows),
        "by_platform": {p: sum(r["platform"] == p for r in rows) for p in ("pynq-z2", "zcu104")},
        "by_streams": {s: sum(r["streams"] == s for r in rows) for s in sorted({r["streams"] for r in rows})},
        "frames": sum(r["frames"] for r in rows), "admitted_pipelines": sum(r["admitted"] for r in rows),
        "pipelines": sum(r["pipelines"] for r in rows),
        "workloads_with_a_miss_of_an_admitted_pipeline": sum(r["misses"] > 0 for r in rows),
        "sets_with_a_rejection": len(rejected),
        "rejected_sets_that_ran_clean_without_admission": len(clean),
        "sets_within_the_utilisation_bound": len(under_bound),
        "of_those_the_test_rejects_some": len(refused_under_bound),
        "admission_ms_max": max(r["admit_ms"] for r in rows),
        "pins_moved_to_hide_a_load": sum(r["pin_moves"] for r in rows),
        "workloads_where_pins_moved": sum(r["pin_moves"] > 0 for r in rows),
        "admitted_pipelines_run_in_passes": sum(r["admitted_in_passes"] for r in rows),
        "failures": [r for r in rows if r["misses"]],
    }
    report["streams_drawn"] = args.streams
    report["phased"] = args.phased
    write_result("admission_soundness" + ("_streams" if args.streams else "") + ("_phased" if args.phased else ""),
                 report, quick=args.quick)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        for key, value in report.items():
            if key != "failures":
                print(f"{key:50s} {value}")
        for r in report["failures"]:
            print("FAILED", r)
    return 1 if report["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())

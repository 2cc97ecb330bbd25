"""The scheduler's acceptance numbers on every suite in benchmarks/workloads/, side by side with the
baselines in the same process (model backend, virtual time):

- misses of admitted real-time pipelines under edf, and how many frames the rejected set misses
  when run anyway (is admission control more than caution?);
- sweep: for every real-time pipeline of the suite, the largest number of copies each scheduler
  runs with zero misses (edf and fred on every stream the shell has, the others on one), the
  ratios edf / rr-bundle and edf / fred, and two caps no scheduler can pass, reconfiguration
  free: the copies one video stream could carry beside the other pipelines, and the copies the
  shell's S streams and its slots could (frame time per period at most S, and slot time, a frame
  holding a slot per stage, at most the slots);
- DNN images/s under edf as a fraction of the offline bound;
- exposed reconfiguration (port time with no slot computing) as a fraction of port time, all of
  it and in steady state (from the first release on: the loads made while pipelines register,
  before any frame exists, have nothing to hide under); and stalled reconfiguration, the part of it during
  which a real-time frame was waiting (a load in stream time nobody wanted costs nothing).

    python -m benchmarks.scheduler_scorecard [--quick] [--suite NAME ...] [--json]

``--quick`` scores one small suite (``QUICK_SUITE``): it checks the benchmark runs.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

from fpgashare.catalogue.workload import load_workload
from fpgashare.cli.bench import misses, run_one, sweep

from benchmarks.results import write_result

SUITES = Path(__file__).resolve().parent / "workloads"
SCHEDULERS = ("edf", "rr-bundle", "fcfs", "static", "fred")
QUICK_SUITE = "nh_720p60_pynq_z2"      #: scored in under a second


def share(part: float, whole: float) -> float | None:
    return part / whole if whole > 1e-12 else None


def ratio(a: int, b: int) -> float | str | None:
    return a / b if b else ("inf" if a else None)


def score(path: Path) -> dict:
    workload = load_workload(path)
    _, edf = run_one(workload, "edf", "model")
    totals = edf["totals"]
    row = {"suite": path.stem, "platform": workload.platform.name,
           "edf_admitted_misses": misses(edf), "rejected": [r["name"] for r in edf["rejected"]],
           "rejected_set_misses": edf.get("rejected_set_misses"),
           "exposed_fraction": share(totals["exposed_reconfig_s"], totals["port_busy_s"]),
           "steady_exposed_fraction": share(totals["steady_exposed_s"], totals["steady_port_s"]),
           "stalled_fraction": share(totals["stalled_reconfig_s"], totals["port_busy_s"]),
           "port_busy_s": totals["port_busy_s"], "reconfigurations": totals["reconfigurations"]}
    rr_totals = run_one(workload, "rr-bundle", "model")[1]["totals"]
    row["rr_bundle_stalled_fraction"] = share(rr_totals["stalled_reconfig_s"], rr_totals["port_busy_s"])
    bound = edf["bound"]["dnn_images_per_s"]
    if any(not p.realtime for p in workload.pipelines):
        row["dnn_fraction_of_bound"] = totals["dnn_images_per_s"] / bound if bound else None
    row["sweeps"] = {}
    for p in (q for q in workload.pipelines if q.realtime):
        counts = {s: sweep(workload, s, "model", p.name)["max_pipelines"] for s in SCHEDULERS}
        row["sweeps"][p.name] = {**counts, "edf_over_rr_bundle": ratio(counts["edf"], counts["rr-bundle"]),
                                 "edf_over_fred": ratio(counts["edf"], counts["fred"]),
                                 "stream_cap": stream_cap(workload, p.name),
                                 "streams_cap": streams_cap(workload, p.name)}
    return row


def stream_cap(workload, name: str) -> int:
    """Copies of real-time pipeline ``name`` the one video stream could carry beside the suite's
    other real-time pipelines if reconfiguration cost nothing: every frame streams through it, so
    the frame times per period of all of them cannot exceed one."""
    load = {p.name: p.exec_s / p.period_s for p in workload.pipelines if p.realtime}
    return max(0, math.floor((1.0 - sum(load.values()) + load[name]) / load[name] + 1e-9))


def streams_cap(workload, name: str) -> int:
    """Copies of ``name`` the shell's streams and slots could carry beside the other pipelines if
    reconfiguration cost nothing: frame time per period at most one per stream, and slot time (a
    streaming frame holds a slot per stage of its pass) at most one per slot."""
    realtime = [p for p in workload.pipelines if p.realtime]
    load = {p.name: p.exec_s / p.period_s for p in realtime}
    slot_load = {p.name: sum(len(m) * t for m, t in zip(p.pass_modules, p.pass_seconds, strict=True)) / p.period_s
                 for p in realtime}
    streams, slots = workload.platform.streams, len(workload.platform.slots)
    by_stream = (streams - sum(load.values()) + load[name]) / load[name]
    by_slot = (slots - sum(slot_load.values()) + slot_load[name]) / slot_load[name]
    return max(0, math.floor(min(by_stream, by_slot) + 1e-9))


def fmt(x) -> str:
    if x is None:
        return "-"
    return x if isinstance(x, str) else f"{x:.2f}"


def pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--suite", action="append", help="only these suites (file stems)")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--quick", action="store_true", help=f"only {QUICK_SUITE}: checks the benchmark runs")
    args = ap.parse_args()
    paths = sorted(SUITES.glob("*.toml"))
    if args.quick:
        args.suite = [QUICK_SUITE]
    if args.suite:
        unknown = sorted(set(args.suite) - {p.stem for p in paths})
        if unknown:
            ap.error(f"no suite named {', '.join(unknown)} in {SUITES}")
        paths = [p for p in paths if p.stem in args.suite]
    rows = [score(p) for p in paths]
    write_result("scheduler_scorecard", {
        "suites": [{k: v for k, v in r.items() if k != "sweeps"} for r in rows],
        "sweeps": [{"suite": r["suite"], "swept": name, **s} for r in rows for name, s in r["sweeps"].items()],
    }, quick=args.quick)
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    print(f"{'suite':26s} {'edf miss':>8s} {'rejected (misses if run)':>26s} {'exposed':>8s} {'steady':>7s} "
          f"{'stalled':>8s} {'rr stalled':>10s} {'DNN/bound':>9s}")
    for r in rows:
        rej = f"{len(r['rejected'])} ({r['rejected_set_misses']})" if r["rejected"] else "0"
        print(f"{r['suite']:26s} {r['edf_admitted_misses']:8d} {rej:>26s} {pct(r['exposed_fraction']):>8s} "
              f"{pct(r['steady_exposed_fraction']):>7s} {pct(r['stalled_fraction']):>8s} "
              f"{pct(r['rr_bundle_stalled_fraction']):>10s} {fmt(r.get('dnn_fraction_of_bound')):>9s}")
    print()
    print(f"{'suite':26s} {'swept':10s} " + " ".join(f"{s:>9s}" for s in SCHEDULERS) + f" {'edf/rr':>7s}"
          f" {'edf/fred':>8s} {'1-stream cap':>12s} {'S-stream cap':>12s}")
    for r in rows:
        for name, s in r["sweeps"].items():
            print(f"{r['suite']:26s} {name:10s} " + " ".join(f"{s[k]:9d}" for k in SCHEDULERS)
                  + f" {fmt(s['edf_over_rr_bundle']):>7s} {fmt(s['edf_over_fred']):>8s} {s['stream_cap']:12d}"
                  f" {s['streams_cap']:12d}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

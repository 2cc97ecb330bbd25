"""How far each scheduler is from the limit, on generated workloads small enough for the exact model.

Each workload (``small_workload``): 2-5 real-time pipelines on the PYNQ-Z2 or the ZCU104 (chains of
1..slots vision stages drawn from the library, frames 120x160 .. 720x1280, periods of 10, 20 or
40 ms so one hyperperiod is at most 40 ms, deadlines between the chain's time plus a load and the
period, jitter 0-1 ms half the time, a random first release), sometimes a DNN pipeline on the
ZCU104; the run lasts one hyperperiod, so the exact model (runtime/sched/limits/exact.py) covers
every frame the run releases. Every scheduler runs through ``fpgashare bench``'s path
(``bench.run_one``, the model backend; ``planned`` makes its cyclic table there, docs/planned.md),
and its figures are set against the limits:

- pipelines served with no miss / the most any schedule serves (exact; summed over workloads too);
- its loads / the fewest of any schedule serving the pipelines it ran (when it missed nothing);
- its port wait minus the floor for its own frame order, as a share of its port time (one
  stream, no DNN: the floor's conditions), and minus the wait of an exact schedule with the
  fewest loads (``wait ok``: within 1.1x that wait + 1% of the port time);
- DNN images / the bound of its own idle windows;
- edf's loads per hyperperiod in its steady state (a run of 6 hyperperiods, the middle 4
  counted) / the fewest of a schedule that repeats every hyperperiod serving the same pipelines
  (runtime/sched/limits/steady_loads.py): the one-shot optimum above never puts back what a
  hyperperiod swapped out, which every run that goes on must.

It also counts the workloads where some baseline (a scheduler without a guarantee: not edf, not
planned) serves every pipeline with no miss while edf refuses one, and any scheduler figure beyond a
limit (a bound that does not hold: exit 1). edf's admission is a guarantee for runs of any length
while the baselines' runs last one hyperperiod (with slots warmed up before it): for those workloads
the baselines also run 25 hyperperiods, and the summary says in how many one still serves every
pipeline with no miss.

    python -m benchmarks.limit_gap [--count 100] [--seed N] [--quick] [--json out/limit_gap.json]
    python -m benchmarks.limit_gap --suites [--quick]     # each shipped suite's limits, and the time they take
    python -m benchmarks.limit_gap --merge a.json b.json  # one summary of runs made in shards (--json of each)

Seeds are fresh by default (printed; ``--seed`` reproduces a run).
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import random
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

from fpgashare.catalogue.platform import load_platform
from fpgashare.catalogue.workload import PipelineSpec, Workload, realtime_spec
from fpgashare.cli.bench import run_one
from fpgashare.errors import WorkloadError
from fpgashare.sched.limits import steady_loads
from fpgashare.sched.limits.bench_limits import Limits, run_misses, served
from fpgashare.sched.policies.registry import POLICIES

from benchmarks.results import write_result
from benchmarks.workload_gen import FRAMES, VISION

log = logging.getLogger(__name__)

PERIODS_MS = (10, 20, 40)
PLATFORMS = ("pynq-z2", "zcu104")


def rephased(workload: Workload, seed: int) -> Workload:
    """``workload``'s pipelines (their chains, rates and deadlines) with offsets, and jitter on about
    half, drawn from ``seed``: the same set at other phasings, for tests of what a phasing decides."""
    rng = random.Random(seed)
    pipelines = tuple(replace(p, offset_s=round(rng.uniform(0, p.period_s), 4) % p.period_s,
                              jitter_s=round(rng.uniform(0, 5e-4), 5) if rng.random() < 0.5 else 0.0)
                      if p.realtime else p for p in workload.pipelines)
    return replace(workload, pipelines=pipelines, seed=seed)


def small_workload(seed: int, max_pipelines: int = 5) -> Workload:
    """One seeded small workload (module docstring): one hyperperiod of at most 40 ms."""
    rng = random.Random(seed)
    plat = load_platform(rng.choice(PLATFORMS))
    load_s = max(plat.slot_load_seconds(s.index) for s in plat.slots)
    pipelines: list[PipelineSpec] = []
    for i in range(rng.randint(2, max_pipelines)):
        for _ in range(30):             # redraw until the chain and a load fit well inside the period
            chain = rng.sample(VISION, rng.randint(1, len(plat.slots)))
            rows, cols = rng.choice(FRAMES[:4])
            period = rng.choice(PERIODS_MS) / 1e3
            try:
                probe = realtime_spec(f"p{i}", chain, period, period, [rows, cols], plat)
            except WorkloadError:
                continue
            if probe.exec_s + load_s <= 0.7 * period:
                break
        else:
            continue
        deadline = rng.uniform(probe.exec_s + load_s, period)
        jitter = round(rng.uniform(0.0, 1e-3), 5) if rng.random() < 0.5 else 0.0
        spec = realtime_spec(f"p{i}", chain, period, deadline, [rows, cols], plat, jitter_s=jitter)
        # Below the period: rounded up to it, the offset would equal the one-hyperperiod run's end,
        # and the pipeline would release no frame at all.
        pipelines.append(replace(spec, offset_s=round(rng.uniform(0.0, period), 4) % period))
    if not pipelines:
        return small_workload(seed + 1_000_003, max_pipelines)
    if "dnn_tile" in plat.modules and rng.random() < 0.3:
        pipelines.append(PipelineSpec("dnn", "besteffort", model=rng.choice(("digits_cnn", "printed_digits"))))
    hyper = math.lcm(*(round(p.period_s * 1e3) for p in pipelines if p.realtime)) / 1e3
    return Workload(Path(f"small_{seed}.toml"), plat, seed, hyper, tuple(pipelines))


def measure(seed: int, schedulers: list[str], time_limit_s: float) -> dict:
    """One workload: its limits and every scheduler's figures beside them."""
    workload = small_workload(seed)
    limits = Limits(workload, max_frames=None, time_limit_s=time_limit_s, max_modules=None)
    started = time.perf_counter()
    admitted = limits.admitted()
    row = {"seed": seed, "platform": workload.platform.name, "pipelines": admitted["pipelines"],
           "frames": admitted["frames"], "optimum": admitted["subset"], "proved": admitted["subset_proved"],
           "optimum_prefix": admitted["prefix"], "schedulers": {}}
    for name in schedulers:
        engine, result = run_one(workload, name, "model", check_rejected=False)
        figures = limits.scheduler(result, engine)
        figures["refused"] = len(result["rejected"])
        figures["served_all"] = figures["misses"] == 0 and not result["rejected"] and \
            len(served(result)) == admitted["pipelines"]
        row["schedulers"][name] = figures
    row["limits_s"] = round(time.perf_counter() - started, 2)
    fill_long_run(row, workload)
    fill_steady_loads(row, workload, time_limit_s)
    return row


#: Schedulers whose loads are also measured in the steady state (each needs a longer run and a
#: cyclic solve per served set).
STEADY = ("edf",)


def fill_steady_loads(row: dict, workload: Workload, time_limit_s: float) -> None:
    """``row["schedulers"][name]["loads"]["steady"]`` for the STEADY schedulers that ran: the
    loads a hyperperiod of their steady state beside the best cyclic schedule's
    (runtime/sched/limits/steady_loads.py), where the long run serves what it admitted."""
    optimum: dict[frozenset, dict] = {}
    for name in STEADY:
        figs = row["schedulers"].get(name)
        if figs is None or figs["misses"]:
            continue
        engine, result = run_one(steady_loads.steady_workload(workload), name, "model", check_rejected=False)
        serve = served(result)
        if run_misses(result) or len(serve) != len(result["admitted"]):
            figs["loads"]["steady"] = {"why_no_figure": "the long run missed frames"}
            continue
        key = frozenset(serve)
        if key not in optimum:
            optimum[key] = steady_loads.cyclic_optimum(workload, serve, time_limit_s)
        figs["loads"]["steady"] = steady_loads.figures(engine, workload, serve, optimum[key])


#: Hyperperiods the baselines run again where they served everything edf refused some of.
LONG_RUN_HYPERPERIODS = 25

#: Schedulers whose every admitted pipeline is guaranteed (edf by its analysis, planned by its
#: table, checked modulo the hyperperiod): not baselines, which promise nothing.
GUARANTEED = ("edf", "planned")


def is_baseline(name: str) -> bool:
    """Whether ``name`` is a scheduler without a guarantee (the yardstick "a baseline serves every
    pipeline while edf refuses one" counts only those)."""
    return name not in GUARANTEED


def fill_long_run(row: dict, workload: Workload | None = None) -> None:
    """Where edf refused a pipeline and a baseline served all in one hyperperiod: the baselines
    that still serve all over LONG_RUN_HYPERPERIODS (``row["long_run_served_all"]``)."""
    figs = row["schedulers"]
    if "edf" not in figs or not figs["edf"]["refused"] or "long_run_served_all" in row:
        return
    winners = [n for n, f in figs.items() if is_baseline(n) and f["served_all"]]
    if not winners:
        return
    workload = workload or small_workload(row["seed"])
    long = replace(workload, duration_s=workload.duration_s * LONG_RUN_HYPERPERIODS)
    total = sum(p.realtime for p in workload.pipelines)
    row["long_run_served_all"] = []
    for name in winners:
        _, result = run_one(long, name, "model", check_rejected=False)
        if len(served(result)) == total and not any(
                p["late"] + p["dropped"] + p["errors"] for p in result["pipelines"].values()):
            row["long_run_served_all"].append(name)


def _dist(values: list[float]) -> dict:
    if not values:
        return {"n": 0}
    q = statistics.quantiles(values, n=10, method="inclusive") if len(values) > 1 else [values[0]] * 9
    return {"n": len(values), "min": round(min(values), 3), "p10": round(q[0], 3),
            "median": round(statistics.median(values), 3), "p90": round(q[8], 3), "max": round(max(values), 3)}


def _cell(d: dict) -> str:
    return "-" if not d.get("n") else f"{d['median']:.2f} [{d['p10']:.2f}, {d['p90']:.2f}] n={d['n']}"


def summary_lines(summary: dict) -> list[str]:
    """The distribution as a table: median [p10, p90] and how many workloads had the figure."""
    lines = [f"{summary['workloads']} workloads (first seed {summary['first_seed']}), exact optimum proved on "
             f"{summary['proved']}; ratios: median [p10, p90] n",
             f"{'scheduler':10s} {'served/opt (sum)':>16s} {'no-miss runs':>12s}  {'served/opt':28s} "
             f"{'loads/opt':28s} {'loads<=1.1x':>11s}  {'wait-floor % port':28s} {'wait-exact % port':28s} "
             f"{'wait ok':>9s}  {'DNN/window':28s}"]
    for name, s in summary["schedulers"].items():
        lines.append(f"{name:10s} {s['served_over_optimum_summed']!s:>16s} {s['no_miss_runs']:12d}  "
                     f"{_cell(s['served_over_optimum']):28s} {_cell(s['loads_over_optimum']):28s} "
                     f"{s['loads_within_1.1']:5d}/{s['loads_compared']:<5d}  "
                     f"{_cell(s['port_wait_excess_pct_of_port']):28s} "
                     f"{_cell(s['port_wait_over_exact_pct_of_port']):28s} "
                     f"{s['port_wait_within_1.1x_exact_plus_1pct']:4d}/{s['port_wait_compared']:<4d}  "
                     f"{_cell(s['dnn_over_window_bound']):28s}")
    for name, s in summary["schedulers"].items():
        if "steady_loads" in s:
            st = s["steady_loads"]
            lines.append(f"{name}: loads a hyperperiod in the steady state / the best cyclic schedule's: "
                         f"<= 1.1x on {st['within_1.1']}/{st['compared']}, summed x{st['summed_ratio']}, "
                         f"{_cell(st['ratio'])} (cyclic optimum proved on {st['cyclic_proved']})")
            nd = st.get("without_dnn")
            if nd and nd["compared"]:
                lines.append(f"{name}: the same on the workloads without a DNN: <= 1.1x on {nd['within_1.1']}/"
                             f"{nd['compared']}, summed x{nd['summed_ratio']}, {_cell(nd['ratio'])}")
    b = summary.get("baseline_serves_all_while_edf_refuses")
    if b:
        lines.append(f"a baseline serves every pipeline with no miss while edf refuses one: {b['count']} "
                     f"({100 * (b['share'] or 0):.1f}%), seeds {b['seeds'][:20]}")
        if "over_25_hyperperiods" in b:
            g = b["over_25_hyperperiods"]
            lines.append(f"  of those, a baseline still serves all over {LONG_RUN_HYPERPERIODS} hyperperiods: "
                         f"{g['count']} ({100 * (g['share'] or 0):.1f}%), seeds {g['seeds'][:20]}")
    lines.append(f"figures beyond a limit: {len(summary['beyond_a_limit'])} {summary['beyond_a_limit'][:5]}")
    return lines


def summarize(rows: list[dict], schedulers: list[str]) -> dict:
    """The ratios' distribution per scheduler, over the workloads the exact model proved."""
    proved = [r for r in rows if r["proved"]]
    out: dict = {"workloads": len(rows), "proved": len(proved), "schedulers": {}}
    beyond = []
    for name in schedulers:
        figs = [(r, r["schedulers"][name]) for r in proved]
        served_sum, opt_sum = sum(f["served"] for _, f in figs), sum(r["optimum"] for r, _ in figs)
        beyond += [f"{name} seed {r['seed']}: served {f['served']} > optimum {r['optimum']}"
                   for r, f in figs if f["served"] > r["optimum"]]
        with_opt = [f["loads"] for _, f in figs if f["loads"].get("optimum") is not None]
        loads = [ld["ratio_to_optimum"] for ld in with_opt if ld["ratio_to_optimum"] is not None]
        beyond += [f"{name} seed {r['seed']}: loads {f['loads']['run_in_horizon']} < optimum {f['loads']['optimum']}"
                   for r, f in figs if f["loads"].get("optimum_proved")
                   and f["loads"]["run_in_horizon"] < f["loads"]["optimum"]]
        beyond += [f"{name} seed {r['seed']}: loads {f['loads']['run']} < order floor {f['loads']['order_floor']}"
                   for r, f in figs if f["loads"]["run"] < f["loads"]["order_floor"]]
        waits = [f["port_wait"]["excess_over_floor_pct_of_port"] for _, f in figs
                 if f["port_wait"].get("excess_over_floor_pct_of_port") is not None]
        dnn = [f["dnn"]["ratio"] for _, f in figs if "dnn" in f and f["dnn"]["ratio"] is not None]
        beyond += [f"{name} seed {r['seed']}: DNN {f['dnn']['run_images_per_s']} images/s > window bound "
                   f"{f['dnn']['window_bound_images_per_s']}" for r, f in figs if "dnn" in f
                   and f["dnn"]["run_images_per_s"] > f["dnn"]["window_bound_images_per_s"] + 0.05]
        exact_wait = [f["port_wait"] for _, f in figs if "exact_schedule_s" in f["port_wait"]]
        out["schedulers"][name] = {
            "served_over_optimum_summed": round(served_sum / opt_sum, 3) if opt_sum else None,
            "served_over_optimum": _dist([f["served"] / r["optimum"] for r, f in figs if r["optimum"]]),
            "no_miss_runs": sum(f["misses"] == 0 for _, f in figs),
            "loads_over_optimum": _dist(loads),
            "loads_compared": len(with_opt),
            "loads_within_1.1": sum(ld["run_in_horizon"] <= 1.1 * ld["optimum"] for ld in with_opt),
            "port_wait_excess_pct_of_port": _dist(waits),
            "port_wait_over_exact_pct_of_port": _dist([w["excess_over_exact_pct_of_port"] for w in exact_wait]),
            "port_wait_within_1.1x_exact_plus_1pct": sum(w["within_1.1x_exact_plus_1pct_port"] for w in exact_wait),
            "port_wait_compared": len(exact_wait),
            "dnn_over_window_bound": _dist(dnn)}
        steady = [(f["loads"]["steady"], "dnn" in f) for _, f in figs
                  if f["loads"].get("steady", {}).get("cyclic_optimum") is not None]
        if steady:
            # The table serves the real-time pipelines alone, while a run with a DNN also reloads
            # what its lends evicted: the workloads without one are the like-for-like comparison.
            out["schedulers"][name]["steady_loads"] = {
                **_steady_summary([s for s, _ in steady]),
                "without_dnn": _steady_summary([s for s, dnn in steady if not dnn])}
    baselines = [s for s in schedulers if is_baseline(s)]
    if "edf" in schedulers:
        cases = [r["seed"] for r in proved if r["schedulers"]["edf"]["refused"]
                 and any(r["schedulers"][b]["served_all"] for b in baselines)]
        out["baseline_serves_all_while_edf_refuses"] = {"count": len(cases), "share": round(len(cases) / len(proved), 3)
                                                        if proved else None, "seeds": cases}
        long = [r["seed"] for r in proved if r["seed"] in cases
                and any(is_baseline(n) for n in r.get("long_run_served_all", ()))]
        out["baseline_serves_all_while_edf_refuses"]["over_25_hyperperiods"] = {
            "count": len(long), "share": round(len(long) / len(proved), 3) if proved else None, "seeds": long}
    out["beyond_a_limit"] = beyond
    return out


def _steady_summary(steady: list[dict]) -> dict:
    """Steady-state loads against the best cyclic table's, over ``steady`` (rows' figures)."""
    run_sum, opt_sum = sum(s["run_per_hyperperiod"] for s in steady), sum(s["cyclic_optimum"] for s in steady)
    return {"compared": len(steady), "within_1.1": sum(s["within_1.1"] for s in steady),
            "summed_ratio": round(run_sum / opt_sum, 3) if opt_sum else None,
            "ratio": _dist([s["ratio"] for s in steady if s["ratio"] is not None]),
            "cyclic_proved": sum(s["cyclic_proved"] for s in steady)}


SUITES = Path(__file__).parent / "workloads"


def suite_limits(quick: bool) -> list[dict]:
    """The scheduler-independent limits of every shipped suite (``--quick``: the first two), timed."""
    from fpgashare.catalogue.workload import load_workload

    rows = []
    for path in sorted(SUITES.glob("*.toml"))[:2 if quick else None]:
        started = time.perf_counter()
        limits = Limits(load_workload(path))
        admitted = limits.admitted()
        rows.append({"suite": path.stem, "seconds": round(time.perf_counter() - started, 2), **admitted})
        log.info("%-28s %5.1f s: most served %s of %d (proved %s, bound %s), prefix %s (proved %s), caps %s, "
                 "over %s frames", path.stem, rows[-1]["seconds"], admitted["subset"], admitted["pipelines"],
                 admitted["subset_proved"], admitted["subset_bound"], admitted["prefix"], admitted["prefix_proved"],
                 admitted["caps"], "all" if admitted["all_frames"] else f"the first {admitted['frames']}")
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--count", type=int, default=100)
    ap.add_argument("--seed", type=int, default=None, help="first seed (default: fresh)")
    ap.add_argument("--quick", action="store_true", help="a few workloads (seconds)")
    ap.add_argument("--scheduler", default=",".join(POLICIES))
    ap.add_argument("--time-limit", type=float, default=10.0, help="CP-SAT seconds per solve")
    ap.add_argument("--json", default=None, help="write the rows and the summary here")
    ap.add_argument("--suites", action="store_true", help="the shipped suites' limits and their compute time")
    ap.add_argument("--merge", nargs="+", metavar="JSON", help="summarise the rows of earlier --json files")
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    if args.merge:
        shards = [json.loads(Path(f).read_text()) for f in args.merge]
        rows = [r for shard in shards for r in shard["rows"]]
        for r in rows:
            fill_long_run(r)
        schedulers = list(rows[0]["schedulers"]) if rows else []
        summary = summarize(rows, schedulers)
        summary.update(first_seed=", ".join(str(sh["summary"]["first_seed"]) for sh in shards),
                       wall_s=sum(sh["summary"]["wall_s"] for sh in shards),
                       date=time.strftime("%Y-%m-%d", time.gmtime()))
        sys.stdout.write("\n".join(summary_lines(summary)) + "\n")
        if args.json:
            Path(args.json).write_text(json.dumps({"summary": summary, "rows": rows}, indent=2, default=str))
        write_result("limit_gap", summary)
        return 1 if summary["beyond_a_limit"] else 0
    if args.suites:
        rows = suite_limits(args.quick)
        if args.json:
            Path(args.json).write_text(json.dumps(rows, indent=2, default=str))
        worst = max(r["seconds"] for r in rows)
        sys.stdout.write(f"{len(rows)} suites, the slowest limits took {worst:.1f} s\n")
        write_result("limit_gap_suites", {"slowest_s": worst, "suites": rows}, quick=args.quick)
        return 0
    count = 4 if args.quick else args.count
    first = args.seed if args.seed is not None else random.SystemRandom().randrange(1, 10**9)
    schedulers = [s.strip() for s in args.scheduler.split(",") if s.strip()]
    log.info("seeds %d .. %d", first, first + count - 1)
    rows, started = [], time.perf_counter()
    for seed in range(first, first + count):
        rows.append(measure(seed, schedulers, args.time_limit))
        r = rows[-1]
        log.info("seed %d %s: optimum %s of %d%s, %s", seed, r["platform"], r["optimum"], r["pipelines"],
                 "" if r["proved"] else " (not proved)",
                 ", ".join(f"{n} {f['served']}" for n, f in r["schedulers"].items()))
    summary = summarize(rows, schedulers)
    summary.update(first_seed=first, wall_s=round(time.perf_counter() - started, 1),
                   date=time.strftime("%Y-%m-%d", time.gmtime()))
    sys.stdout.write("\n".join(summary_lines(summary)) + "\n")
    write_result("limit_gap", summary, quick=args.quick)
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps({"summary": summary, "rows": rows}, indent=2, default=str))
    return 1 if summary["beyond_a_limit"] else 0


if __name__ == "__main__":
    sys.exit(main())

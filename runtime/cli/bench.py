"""``fpgashare bench``: run a workload under several schedulers side by side and report."""

from __future__ import annotations

import logging
from dataclasses import replace

from fpgashare.backends import backend_class, make_backend
from fpgashare.catalogue.workload import Workload, load_workload
from fpgashare.cli.trace import write_gantt, write_trace
from fpgashare.errors import FpgashareError
from fpgashare.sched.analysis.admission import admit
from fpgashare.sched.board.fred_binding import binding_of, fred_partitions
from fpgashare.sched.board.stream_plan import plan_streams
from fpgashare.sched.board.workload_run import run_board
from fpgashare.sched.limits.cyclic import table_to_run
from fpgashare.sched.policies.backfill import DNN as DNN_TILE
from fpgashare.sched.policies.backfill import refusal
from fpgashare.sched.policies.planned import PlannedPolicy
from fpgashare.sched.policies.registry import POLICIES, make_policy
from fpgashare.sched.sources.periodic import run_workload

log = logging.getLogger(__name__)

MAX_SWEEP = 64


def misses(summary: dict) -> int:
    return sum(p["late"] + p["dropped"] + p["errors"] for p in summary["pipelines"].values())


def streams_used(platform, carried: int, cap: int | None) -> int:
    """Video streams a run uses: the shell's, as many as the backend carries at once, at most ``cap``."""
    return min(platform.streams, carried, cap or platform.streams)


def run_one(workload: Workload, scheduler: str, backend: str, check_rejected: bool = True,
            streams: int | None = None) -> tuple[object, dict]:
    """One scheduler on one workload. ``edf`` admits pipelines first (runtime/sched/analysis/admission.py;
    on several streams runtime/sched/board/stream_plan.py); the baselines admit everything.
    ``streams``: at most this many video streams (default: as many as the shell and the backend
    carry)."""
    policy = make_policy(scheduler)
    if isinstance(policy, PlannedPolicy):
        return _run_planned(workload, policy, backend, check_rejected, streams)
    rejected: list[dict] = []
    full = workload
    contract = None
    streams = streams_used(workload.platform, backend_class(backend).streams_carried(workload.platform), streams)
    # Several streams: the backend carries them at once (the simulated board co-simulates them)
    board = make_backend(backend, workload.platform, streams=streams if streams > 1 else None)
    if streams > 1 and (policy.admission or binding_of(policy) is not None):
        return _run_on_streams(workload, scheduler, board, streams, check_rejected)
    if policy.admission:
        admission = admit(workload, phased=True)
        rejected, contract = admission.rejected, admission.contract
        keep = {p.name for p in admission.admitted}
        workload = replace(workload, pipelines=tuple(p for p in workload.pipelines
                                                     if not p.realtime or p.name in keep))
    engine, summary = run_workload(workload, board, policy, contract=contract)
    result = {"scheduler": scheduler, "admitted": [p.name for p in engine.pipelines], "rejected": rejected,
              **summary, "bound": dnn_bound(workload, engine.pipelines, engine)}
    if contract is not None:
        result["contract"] = {"pinned": {str(k): v for k, v in sorted(contract.pinned.items())},
                              "idle_loads": contract.idle_loads,
                              "dnn_block_ms": None if contract.dnn_block_s == float("inf")
                              else round(contract.dnn_block_s * 1e3, 3),
                              **_rules(contract)}
    if rejected and check_rejected:
        # Is the admission test more than caution? Run the whole set anyway and count the misses.
        result["rejected_set_misses"] = unadmitted_misses(full, scheduler)
    return engine, result


def _run_planned(workload: Workload, policy: PlannedPolicy, backend: str, check_rejected: bool,
                 streams: int | None) -> tuple[object, dict]:
    """``planned``: the cyclic table's pipelines on one engine carrying the streams used, over
    shared slots (the others refused with the plan's reason), the policy handed the table; with no
    table, or one serving fewer pipelines than edf's admission, edf's run, marked ``plan: none``."""
    used = streams_used(workload.platform, backend_class(backend).streams_carried(workload.platform), streams)
    edf = plan_streams(workload, used, phased=True) if used > 1 else admit(workload, phased=True)
    plan, reason = table_to_run(workload, streams=used, edf_admits=len(edf.admitted))
    if plan is None:
        engine, result = run_one(workload, "edf", backend, check_rejected, streams)
        result.update(scheduler=policy.name, plan="none", plan_reason=reason)
        return engine, result
    policy = PlannedPolicy(plan)        # handed its table
    kept = replace(workload, pipelines=tuple(p for p in workload.pipelines
                                             if not p.realtime or p.name in plan.admitted))
    board = make_backend(backend, workload.platform, streams=used if used > 1 else None)
    engine, summary = run_workload(kept, board, policy, video_streams=used)
    rejected = [{"name": n, "reason": r} for n, r in plan.refused.items()]
    result = {"scheduler": policy.name, "admitted": [p.name for p in engine.pipelines], "rejected": rejected,
              **summary, "bound": dnn_bound(kept, engine.pipelines, engine), "plan": policy.describe()}
    return engine, result


def run_online(workload: Workload, backend: str, streams: int | None = None) -> dict:
    """edf on ``workload`` replayed as the daemon sees it (runtime/sched/board/daemon_replay.py)."""
    from fpgashare.sched.board.daemon_replay import replay

    used = streams_used(workload.platform, backend_class(backend).streams_carried(workload.platform), streams)
    board = make_backend(backend, workload.platform, streams=used if used > 1 else None)
    _, result = replay(workload, board, used)
    # The DNN's yardstick: the bound of the layout the planner gives the set the daemon admitted.
    admitted = set(result["admitted"])
    kept = replace(workload, pipelines=tuple(p for p in workload.pipelines if not p.realtime or p.name in admitted))
    if used > 1:
        result["bound"] = {**streams_dnn_bound(kept, plan_streams(kept, used)),
                           "of": "the planner's layout for the admitted set"}
    else:
        result["bound"] = dnn_bound(kept, [p for p in kept.pipelines if p.realtime])
    return result


def _run_on_streams(workload: Workload, scheduler: str, board, streams: int,
                    check_rejected: bool) -> tuple[object, dict]:
    """``scheduler`` on several streams: pipelines partitioned over streams and slots (edf: by its
    admission, runtime/sched/board/stream_plan.py; a space-sharing baseline: by its own rule), one
    engine per partition (runtime/sched/board/board.py)."""
    policy = make_policy(scheduler)
    plan = plan_streams(workload, streams, phased=True, spare_stream=True) if policy.admission \
        else binding_of(policy)(workload, streams)
    engine, summary = run_board(workload, board, plan, lambda: make_policy(scheduler))
    result = {"scheduler": scheduler, "admitted": [p.name for p in plan.admitted], "rejected": plan.rejected,
              **summary, "bound": streams_dnn_bound(workload, plan, engine)}
    result["contract"] = {f"stream {part.stream}": {
        "slots": list(part.slots), "pipelines": [p.name for p in part.pipelines], "dnn": part.dnn,
        **({"pinned": {str(part.slots[k]): v for k, v in sorted(part.verdict.contract.pinned.items())},
            "idle_loads": part.verdict.contract.idle_loads, "quiet": part.quiet,
            **_rules(part.verdict.contract)} if part.verdict else {})}
        for part in plan.partitions}
    if plan.rejected and check_rejected:
        result["rejected_set_misses"] = unadmitted_misses(workload, scheduler, streams)
    return engine, result


def _rules(contract) -> dict:
    """The contract's extra rules, where it has them: evicting pipelines (the pins each may take),
    pinned frames first and hold budgets (runtime/sched/analysis/evicting_pins.py, pinned_first.py,
    holds.py)."""
    out = {}
    if contract.evictors:
        out["evictors"] = dict(sorted(contract.evictors.items()))
    if contract.pinned_first:
        out["pinned_first"] = True
    if contract.holds:
        out["hold_ms"] = {name: round(h * 1e3, 3) for name, h in sorted(contract.holds.items())}
    return out


def unadmitted_misses(workload: Workload, scheduler: str, streams: int = 1) -> int:
    """Misses of the whole set run without admission: on one stream, and with several streams also
    spread over them as FRED's binding spreads pipelines (``fred_binding.fred_partitions``); the fewer
    of the two (is the admission test more than caution, on the streams it plans for?)."""
    _, one = run_workload(workload, make_backend("model", workload.platform), make_policy(scheduler))
    if streams <= 1:
        return misses(one)
    _, spread = run_board(workload, make_backend("model", workload.platform), fred_partitions(workload, streams),
                            lambda: make_policy(scheduler))
    return min(misses(one), misses(spread))


def streams_dnn_bound(workload: Workload, plan, engine=None) -> dict:
    """Upper bound on DNN throughput beside ``plan``'s admitted real-time work: the DNN streams on
    the partition it was given, at most the stream time that partition's frames leave, at the
    partitioner's fastest rate on that partition's tile slots (fill latency and loads free)."""
    from fpgashare.backends.slot_view import sub_platform
    from fpgashare.sched.board.stream_plan import dnn_bound_of, idle_fraction

    models = [p.model for p in workload.pipelines if not p.realtime]
    part = next((q for q in plan.partitions if q.dnn), None)
    no_tile = refusal(workload.platform, models) if models else None
    if not models or no_tile or part is None:
        out = {"idle_stream_fraction": 0.0, "dnn_images_per_s": 0.0, "assumes": "no partition runs the DNN"}
        if no_tile:
            out["refused"] = no_tile
        return out
    return {"idle_stream_fraction": round(idle_fraction(part), 4),
            "dnn_images_per_s": round(dnn_bound_of(part, workload.platform, models), 1),
            "stream": part.stream,
            "tiles": len(sub_platform(workload.platform, part.slots).slots_for(DNN_TILE)),
            "assumes": "stream time the DNN's partition's frames leave x the fastest chain on its tile slots; "
                       "fill latency and loads free"}


def dnn_bound(workload: Workload, admitted, engine=None) -> dict:
    """Upper bound on DNN throughput beside the admitted real-time work, for any scheduler: the
    shell streams one thing at a time, so DNN batches get at most the stream time the admitted
    frames leave, at the model's fastest pipelined rate (every dnn_tile slot in the chain, fill
    latency and reconfiguration free); with ``engine``, the registration window before ``t0`` too,
    where no frame streams and a batch may. With ``engine`` (a finished run) also the part of it this
    run's idle gaps could hold once each gap pays the chain's fill latency (``fill_limited``):
    what a heavy model loses on one stream whatever the scheduler does with those gaps."""
    from fpgashare.dnn.planning import dnn_plan, dnn_slot_count, images_per_stream_second

    idle = max(0.0, 1.0 - sum(p.exec_s / p.period_s for p in admitted))
    models = [p.model for p in workload.pipelines if not p.realtime]
    no_tile = refusal(workload.platform, models) if models else None
    rate = 0.0 if no_tile else max((images_per_stream_second(workload.platform, m) for m in models), default=0.0)
    # The registration window before the first release carries no frame, and a DNN batch may
    # run there (edf's cold lend, runtime/sched/policies/cold_lend.py): its stream time counts.
    window = engine.t0 if engine is not None else 0.0
    share = idle + window / workload.duration_s if workload.duration_s > 0 else idle
    out = {"idle_stream_fraction": round(idle, 4), "dnn_images_per_s": round(share * rate, 1),
           "assumes": "stream time the admitted frames leave (and the registration window) x the fastest "
                      "chain's pipelined rate; fill latency and loads free"}
    if no_tile:
        out["refused"] = no_tile
    elif models and engine is not None:
        plan = dnn_plan(workload.platform, models[0], dnn_slot_count(workload.platform))
        fill, step = plan.latency_cycles / plan.clock_hz, plan.bottleneck_cycles / plan.clock_hz
        busy = sorted((f.start, f.end) for f in engine.frames if f.start is not None and f.end is not None)
        t, images = engine.t0, 0
        for start, end in [*busy, (engine.end_s, engine.end_s)]:
            gap = min(start, engine.end_s) - t
            if gap >= fill:
                images += 1 + int((gap - fill) // step)
            t = max(t, end)
        out["fill_limited_images_per_s"] = round(images / workload.duration_s, 1)
        # The admission's pins hold slots for good: with fewer tiles than the fastest chain uses,
        # the bound this run's contract allows (whether another residency could do better is
        # per workload: the README says where the pinned modules cannot be reloaded in time).
        tile_slots = set(workload.platform.module("dnn_tile").slots)
        free = sum(s.name in tile_slots and s.index not in engine.contract.pinned for s in workload.platform.slots)
        if 0 < free < len(plan.stages):
            lean = dnn_plan(workload.platform, models[0], free)
            out["unpinned_tiles"] = free
            out["unpinned_tiles_images_per_s"] = round(idle * lean.clock_hz / lean.bottleneck_cycles, 1)
    return out


def sweep(workload: Workload, scheduler: str, backend: str, pipeline: str, streams: int | None = None) -> dict:
    """Copies of real-time ``pipeline`` are added one at a time until the scheduler misses a
    deadline of a pipeline it runs or, for a scheduler with admission control, refuses a copy.
    ``max_pipelines`` is the largest count with zero misses; ``others_refused`` names the other
    pipelines admission turned away at that count (they never ran, and were told why)."""
    best, refused = 0, []
    for count in range(1, MAX_SWEEP + 1):
        trial = workload.with_copies(pipeline, count)
        copies = {p.name for p in trial.pipelines if p.name.startswith(f"{pipeline}#")}
        _, result = run_one(trial, scheduler, backend, check_rejected=False, streams=streams)
        if misses(result) or any(r["name"] in copies for r in result["rejected"]):
            break
        best, refused = count, [r["name"] for r in result["rejected"]]
    return {"pipeline": pipeline, "max_pipelines": best, "others_refused": refused}


def bench(path: str, schedulers: list[str], backend: str = "model", trace: str | None = None,
          sweep_pipeline: str | bool | None = None, gantt: str | None = None, streams: int | None = None,
          limit: bool = False, plan: str = "both") -> dict:
    """Run ``path``'s workload under each scheduler; ``sweep_pipeline`` True sweeps the
    workload's own ``sweep`` pipeline. ``limit``: the workload's limits beside every scheduler's
    figures (runtime/sched/limits/bench_limits.py). ``plan``: ``offline`` plans the whole workload
    at once; ``online`` replays it as the daemon sees it (runtime/sched/board/daemon_replay.py: what
    users get), for edf; ``both`` (the default) reports the two side by side."""
    if plan not in ("both", "offline", "online"):
        raise FpgashareError(f"--plan {plan!r}: expected both, offline or online")
    for name in schedulers:
        if name not in POLICIES:
            raise FpgashareError(f"unknown scheduler {name!r}; known: {', '.join(POLICIES)}")
    workload = load_workload(path)
    if sweep_pipeline is True:
        if workload.sweep is None:
            raise FpgashareError(f"{workload.path}: --sweep without a name needs a sweep key in the workload")
        sweep_pipeline = workload.sweep
    results, engines = [], []
    daemon_path = run_online(workload, backend, streams) if plan != "offline" and "edf" in schedulers else None
    for name in schedulers:
        if plan == "online":
            continue
        engine, result = run_one(workload, name, backend, streams=streams)
        engines.append(engine)
        if trace:
            out = trace if len(schedulers) == 1 else trace.replace(".json", f".{name}.json")
            write_trace(engine.trace, out, f"{workload.path.stem} / {name}")
            result["trace"] = out
        if gantt:
            out = gantt if len(schedulers) == 1 else gantt.replace(".png", f".{name}.png")
            t0 = engine.t0
            write_gantt(engine.trace, out, f"{workload.path.stem}: {name}", (t0, t0 + 0.1))
            result["gantt"] = out
        if sweep_pipeline:
            result["sweep"] = sweep(workload, name, backend, sweep_pipeline, streams)
        results.append(result)
    carried = backend_class(backend).streams_carried(workload.platform)
    report = {"workload": str(workload.path), "platform": workload.platform.name, "backend": backend,
              "streams": {"shell": workload.platform.streams, "backend": carried,
                          "used": streams_used(workload.platform, carried, streams)},
              "results": results}
    if daemon_path is not None:
        report["daemon_path"] = daemon_path
    swept = {r["scheduler"]: r["sweep"]["max_pipelines"] for r in results if "sweep" in r}
    for base in ("rr-bundle", "fred"):
        if "edf" in swept and base in swept:
            b = swept[base]
            report[f"sweep_ratio_edf_over_{base.replace('-', '_')}"] = \
                (swept["edf"] / b) if b else (None if not swept["edf"] else "inf")
    if limit:
        from fpgashare.sched.limits.bench_limits import attach

        attach(report, workload, engines)
    return report


def report_lines(report: dict) -> list[str]:
    lines = [f"{report['workload']} on {report['platform']} ({report['backend']} backend)"]
    st = report.get("streams")
    if st and st["used"] < st["shell"]:
        lines.append(f"streams: {st['used']} of the shell's {st['shell']} (the {report['backend']} backend carries "
                     f"{st['backend']} at once{'; --streams' if st['used'] < st['backend'] else ''})")
    for base in ("rr_bundle", "fred"):
        if f"sweep_ratio_edf_over_{base}" in report:
            lines.append(f"sweep: edf sustains {report[f'sweep_ratio_edf_over_{base}']} x the copies "
                         f"{base.replace('_', '-')} does")
    rows = [*([report["daemon_path"]] if "daemon_path" in report else []), *report["results"]]
    width = max(10, *(len(r["scheduler"]) for r in rows))
    header = f"{'scheduler':{width}s} {'pipeline':14s} {'frames':>6s} {'on_time':>7s} {'late':>5s} {'drop':>5s} " \
             f"{'p50 ms':>7s} {'p99 ms':>7s}"
    lines.append(header)
    for r in rows:
        for name, p in r["pipelines"].items():
            p50 = "-" if p["latency_ms_p50"] is None else f"{p['latency_ms_p50']:.2f}"
            p99 = "-" if p["latency_ms_p99"] is None else f"{p['latency_ms_p99']:.2f}"
            lines.append(f"{r['scheduler']:{width}s} {name:14s} {p['submitted']:6d} {p['on_time']:7d} {p['late']:5d} "
                         f"{p['dropped']:5d} {p50:>7s} {p99:>7s}")
        t = r["totals"]
        extra = f", sweep: {r['sweep']['max_pipelines']} x {r['sweep']['pipeline']}" if "sweep" in r else ""
        if t["dnn_images"] or r["bound"]["dnn_images_per_s"]:
            extra += (f", DNN {t['dnn_images_per_s']:.0f} images/s of a {r['bound']['dnn_images_per_s']:.0f} "
                      "bound")
        for rej in r["rejected"]:
            lines.append(f"{'':{width}s} rejected {rej['name']}: {rej['reason']}")
        if "plan" in r:
            plan = r["plan"]
            lines.append(f"{'':{width}s} plan: none ({r['plan_reason']}; edf's admission and dispatch)"
                         if plan == "none" else f"{'':{width}s} plan: {plan['status']} table over "
                         f"{plan['hyperperiod_ms']} ms on {plan['streams']} streams, "
                         f"{plan['loads_per_hyperperiod']} loads per hyperperiod, solved in {plan['solve_s']} s")
        for part in t.get("streams", ()) if len(t.get("streams", ())) > 1 else ():
            lines.append(f"{'':{width}s} stream {part['stream']}: slots {part['slots']}, "
                         f"{', '.join(part['pipelines']) or 'no real-time pipeline'}{' + DNN' if part['dnn'] else ''}, "
                         f"busy {100 * part['stream_busy']:.0f}%")
        lines.append(f"{'':{width}s} {t['reconfigurations']} loads, port {t['port_busy_s'] * 1e3:.1f} ms "
                     f"(exposed {t['exposed_reconfig_s'] * 1e3:.1f} ms, a frame waiting for "
                     f"{t['stalled_reconfig_s'] * 1e3:.1f} ms of it), slots {100 * t['slot_utilization']:.1f}% "
                     f"busy, {t['wall_s']} s wall{extra}")
    if "limits" in report:
        from fpgashare.sched.limits.bench_limits import limit_lines

        lines += limit_lines(report["limits"])
    return lines

"""Where edf's best-effort DNN loses images against the window bound, term by term.

On ``limit_gap``'s generated workloads that have a DNN pipeline (``small_workload``, fresh seeds),
edf runs through ``fpgashare bench``'s path and its DNN images are set against the window bound of
its own schedule (runtime/sched/limits/dnn_windows.py, ``run_stretches``). Each stretch of the
bound (a time a batch may run, with the most tiles a chain can hold at each instant) is compared
with what the run did in it, and the images lost are split, at the bound's rate for that instant
(the fastest chain of at most n(t) tiles):

- ``unused``: stretches where no batch ran at all;
- ``no_tiles``: time in a used stretch where no slot held a tile (a lend not made yet or any more);
- ``tiles_idle``: time where tiles were resident but no batch ran (a batch's end rules: victims due,
  the guard's room, the batch cap, the next release);
- ``chain``: time a batch ran on fewer tiles than the bound allows then (the lend's size);
- ``fill``: every batch after a stretch's first pays its chain's fill latency again;
- ``rest``: what the terms above do not account for (rounding, the bound's integral over chains).

It also counts the tile loads, the real-time reloads they caused (loads into a slot that held a
tile, of a module other than a tile), and the tiles no batch ran on before they were evicted; and
sets the run against ``edf_rules``, the bound with the two rules of edf's guarantee that the
window bound (a bound for any scheduler) does not know: the pins are home whenever a frame waits
(lent only inside quiet gaps, pin_lend.py), and the DNN's tiles stay in the slots of its
partitions (stream_plan.py). That figure bounds edf's DNN, not any scheduler's: the gap between
it and the window bound is what the guarantee's pins and partitions take.

    python -m benchmarks.dnn_window_gap [--count 30] [--seed N] [--quick] [--json out.json]
"""

from __future__ import annotations

import argparse
import itertools
import json
import logging
import math
import random
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

from fpgashare.cli.bench import run_one
from fpgashare.sched.limits import belady, dnn_windows
from fpgashare.sched.policies import backfill

from benchmarks.limit_gap import small_workload
from benchmarks.results import write_result

log = logging.getLogger(__name__)

TERMS = ("unused", "no_tiles", "tiles_idle", "chain", "fill", "rest")


def dnn_seeds(first: int, count: int) -> list[int]:
    """The first ``count`` seeds from ``first`` whose ``small_workload`` has a DNN pipeline."""
    out, seed = [], first
    while len(out) < count:
        if any(not p.realtime for p in small_workload(seed).pipelines):
            out.append(seed)
        seed += 1
    return out


def tile_spans(trace, slots: int, end: float) -> dict[int, list[tuple[float, float]]]:
    """Per slot, when it held a tile: from a tile's load end to the next load into that slot."""
    loads = sorted((e.start, e.end, e.name) for e in trace if e.track == "port" and e.name.startswith("load "))
    spans: dict[int, list[tuple[float, float]]] = {i: [] for i in range(slots)}
    held: dict[int, float] = {}
    for start, stop, name in loads:
        module, slot = name[5:].split(" -> slot ")
        slot = int(slot)
        if slot in held:
            spans[slot].append((held.pop(slot), start))
        if module == dnn_windows.TILE:
            held[slot] = stop
    for slot, since in held.items():
        spans[slot].append((since, end))
    return spans


def batches(trace, dnn_names: set[str]) -> list[tuple[float, float, int, int]]:
    """The run's DNN batches: (start, end, tiles, images)."""
    by_key: dict[tuple[float, str], list] = {}
    for e in trace:
        if e.track.startswith("slot ") and e.args.get("pipeline") in dnn_names:
            entry = by_key.setdefault((e.start, e.name), [e.start, e.end, 0, e.args.get("images", 0)])
            entry[2] += 1
    return sorted(tuple(v) for v in by_key.values())


def _on_slot(trace, dnn_names: set[str], slot: int, start: float) -> bool:
    return any(e.track == f"slot {slot}" and e.start == start and e.args.get("pipeline") in dnn_names for e in trace)


def _overlap(a: float, b: float, spans) -> float:
    return sum(max(0.0, min(b, y) - max(a, x)) for x, y in spans)


def analyse(seed: int) -> dict:
    """One workload: edf's DNN images, the window bound, and the bound's images lost per term."""
    workload = small_workload(seed)
    engine, result = run_one(workload, "edf", "model", check_rejected=False)
    platform = workload.platform
    dnn = [p.model for p in workload.pipelines if not p.realtime]
    names = {p.name for p in workload.pipelines if not p.realtime}
    k = len(platform.slots)
    load_s = min(platform.slot_load_seconds(s.index) for s in platform.slots)
    timings = dnn_windows.fastest_timings(platform, dnn)
    quick = {n: min(f, p) for n, (f, p) in timings.items()}
    order = belady.run_order(engine)
    busy = [(r.start, r.end, len(r.modules)) for r in order]
    stretches = dnn_windows.run_stretches(busy, k, platform.streams, load_s, 0.0, engine.end_s, run_start=0.0,
                                          modules=[r.modules for r in order])
    runs = batches(engine.trace, names)
    spans = tile_spans(engine.trace, k, engine.end_s)
    all_spans = [s for v in spans.values() for s in v]

    def rate(n: int) -> float:
        return max((1 / quick[m] for m in quick if m <= n), default=0.0)

    loss = dict.fromkeys(TERMS, 0.0)
    bound_total = run_total = 0
    for pieces in stretches:
        bound = dnn_windows.stretch_images([(b - a, n) for a, b, n in pieces], timings)
        a0, b0 = pieces[0][0], pieces[-1][1]
        inside = [r for r in runs if a0 - 1e-12 <= (r[0] + r[1]) / 2 < b0 + 1e-12]
        done = sum(r[3] for r in inside)
        bound_total += bound
        run_total += done
        if not inside:
            loss["unused"] += bound
            continue
        for a, b, n in pieces:
            ran = [(max(a, s), min(b, e), t) for s, e, t, _ in inside if s < b and a < e]
            ran_s = sum(y - x for x, y, _ in ran)
            loss["chain"] += sum((y - x) * (rate(n) - rate(t)) for x, y, t in ran)
            idle = max(0.0, (b - a) - ran_s)
            with_tiles = max(0.0, min(idle, _overlap(a, b, all_spans) - ran_s))
            loss["tiles_idle"] += with_tiles * rate(n)
            loss["no_tiles"] += (idle - with_tiles) * rate(n)
        extra_fill = sum(timings[t][0] / quick[t] - 1 for _, _, t, _ in inside[1:])
        loss["fill"] += extra_fill
    gap = bound_total - run_total
    loss["rest"] = gap - sum(v for key, v in loss.items() if key != "rest")
    tile_loads = sum(1 for e in engine.trace if e.track == "port" and e.name.startswith(f"load {dnn_windows.TILE} "))
    reloads = 0
    for e in engine.trace:
        if e.track == "port" and e.name.startswith("load ") and not e.name.startswith(f"load {dnn_windows.TILE} "):
            slot = int(e.name.split(" -> slot ")[1])
            reloads += any(abs(y - e.start) < 1e-9 for _, y in spans[slot])
    kept = edf_rules_images(stretches, engine, result, k, load_s, timings)
    used = [(slot, a, b) for slot, spans_ in spans.items() for a, b in spans_
            if any(r[0] < b and a < r[1] and _on_slot(engine.trace, names, slot, r[0]) for r in runs)]
    unused = sum(len(v) for v in spans.values()) - len(used)
    return {"seed": seed, "streams": platform.streams, "tiles_never_run": unused,
            "why_none": why_none(engine, result, run_total, tile_loads, load_s, timings),
            "bound_images": bound_total, "run_images": run_total,
            "ratio": round(run_total / bound_total, 3) if bound_total else None,
            "edf_rules_images": kept, "ratio_to_edf_rules": round(run_total / kept, 3) if kept else None,
            "stretches": len(stretches), "batches": len(runs), "tile_loads": tile_loads,
            "rt_reloads_after_tiles": reloads, "loss_images": {key: round(v, 1) for key, v in loss.items()}}


def dnn_fabric(result: dict, slots: int) -> tuple[int, int, int]:
    """The slots edf's DNN may use and its pins there, as (slots, pins never lent, pins lent
    only in quiet gaps). The DNN's tiles go only into the slots of the partitions that serve it
    (stream_plan.py: its own, or the real-time partition it backfills in; none if no partition
    hosts it). On one partition its
    pins may be lent inside the gaps no frame waits (pin_lend.py), unless the partition is quiet
    (it loads nothing after t0: never). Over several partitions the DNN's partitions' pins are
    counted as free (an over-estimate: a bound on edf still)."""
    contract = result.get("contract") or {}
    parts = [contract] if "pinned" in contract else [c for c in contract.values() if isinstance(c, dict)]
    if not any(c.get("dnn") for c in parts):
        return 0, 0, 0          # no partition hosts the DNN: edf loads no tile anywhere
    if len(parts) <= 1:
        pins = len(parts[0].get("pinned", {})) if parts else 0
        return (slots, pins, 0) if parts and parts[0].get("quiet") else (slots, 0, pins)
    return sum(len(c.get("slots", ())) for c in parts if c.get("dnn")), 0, 0


def why_none(engine, result: dict, images: int, tile_loads: int, load_s: float, timings) -> str | None:
    """Why a run has no DNN image (None if it has some): no partition hosts the DNN, or no tile was
    lent, with the port's longest idle stretch after the setup (t0) against what a lend of a
    swap slot needs at least (a tile's load, the fill latency, WORTH times the load in DNN time)."""
    if images:
        return None
    contract = result.get("contract") or {}
    parts = [contract] if "pinned" in contract else [c for c in contract.values() if isinstance(c, dict)]
    if not any(c.get("dnn") for c in parts):
        return "no partition hosts the DNN (stream_plan: every partition fails its check with it)"
    if tile_loads:
        return f"{tile_loads} tile load(s), no batch"
    loads = sorted((e.start, e.end) for e in engine.trace if e.track == "port")
    t, gap = engine.t0, 0.0
    for a, b in loads:
        if b > t:
            gap, t = max(gap, a - t), b
    gap = max(gap, engine.end_s - t)
    fill = min(f for f, _ in timings.values())
    pins = sum(len(c.get("pinned", {})) for c in parts if c.get("dnn"))
    slots = sum(len(c.get("slots", ())) for c in parts if c.get("dnn"))
    quiet = max((min(r, engine.end_s) - max(e, engine.t0) for e, r in quiet_gaps(engine, engine.end_s)),
                default=0.0)
    return (f"no tile lent: {pins} of the DNN's {slots} slots pinned (lent only inside a gap no frame "
            f"waits, the longest after the setup {quiet * 1e3:.2f} ms, for two loads); the port's longest "
            f"idle stretch after the setup is {gap * 1e3:.2f} ms; a lend needs the tile's load "
            f"({load_s * 1e3:.2f} ms), the fill ({fill * 1e3:.2f} ms) and DNN time worth "
            f"{backfill.WORTH:g}x its loads")


def quiet_gaps(engine, t1: float) -> list[tuple[float, float]]:
    """The stretches of [0, t1) in which no real-time frame waits: none released and not started,
    none between passes (a frame streaming does not stop a pin lend: pin_lend.quiet), each cut at
    every release (a lent pin is back by the earliest next release, ``pin_lend.back_by``, whether
    that frame waits or streams at once; a frame's actual release is no earlier than that)."""
    busy = sorted((a, b) for f in engine.frames if f.streamed
                  for a, b in zip((f.release, *(e for _, e in f.streamed[:-1])), (s for s, _ in f.streamed),
                                  strict=True) if b > a)
    gaps, t = [], 0.0
    for a, b in busy:
        if a > t:
            gaps.append((t, a))
        t = max(t, b)
    if t < t1:
        gaps.append((t, t1))
    releases = sorted({f.release for f in engine.frames})
    cut = []
    for a, b in gaps:
        points = [a, *(r for r in releases if a < r < b), b]
        cut.extend(itertools.pairwise(points))
    return cut


def unpinned_passes(result: dict, engine, slots: int, load_s: float) -> list[tuple[float, float, int]]:
    """On one partition, each pass as (start, end, u): u its copies no pin holds. While an
    evictor's frame may hold a pin's slot (from its release until ``slots`` loads after its last
    pass: its put-back is the next load it makes), a pass's copy may sit there: u is one less per
    slot evictors take. Empty over several partitions (their pins are counted free there)."""
    contract = result.get("contract") or {}
    parts = [contract] if "pinned" in contract else [c for c in contract.values() if isinstance(c, dict)]
    if len(parts) != 1 or not parts[0].get("dnn"):
        return []
    pins = Counter(parts[0].get("pinned", {}).values())
    evictors = parts[0].get("evictors") or {}
    taken = len(set(evictors.values()))
    away = [(f.release, f.streamed[-1][1] + slots * load_s) for f in engine.frames
            if f.streamed and f.pipeline.name in evictors]
    out = []
    for f in engine.frames:
        for step, (start, end) in enumerate(f.streamed):
            need = Counter(f.pipeline.pass_modules[step])
            u = sum(max(0, c - pins[m]) for m, c in need.items())
            if any(a < end and start < b for a, b in away):
                u = max(0, u - taken)
            out.append((start, end, u))
    return out


def edf_rules_images(stretches, engine, result: dict, slots: int, load_s: float, timings) -> int:
    """The window bound with edf's pins at home whenever a frame waits and the tiles in the DNN's
    partitions (docs/dnn-window-gap.md): at t the chain holds at most the bound's n(t), and at
    most F - P tiles (F the slots of the DNN's partitions, P their pins), plus in a quiet gap
    [e, r) the pins lent there, min(P, floor((t - e) / t_L), floor((r - t) / t_L)) (each lent
    pin's tile loads after e, its pin is back by r; a gap that ends at the run's end, not at a
    release, is not cut at r: no frame comes, so no pin is due back in the run); before the
    first release r1, at most
    floor(r1 / t_L) - P (every pin loads after the cold start, beside the tiles). An upper bound
    on edf's DNN images (the summary counts the runs above it: ``runs_above_edf_rules``), not on any
    scheduler's.

    On one partition, each pass also caps it (the window bound's cap with the pins home): the P
    pins and the pass's u unpinned copies are in F slots while it runs, so at t the tiles are at
    most F - P - u, plus the pins lent at t, plus the loads that fit between t and the pass (a
    copy loaded before it starts, or a tile loaded after it ends, each takes the port one load);
    and before it starts, the tiles held at t, the pins and its copies are distinct loads since
    the cold start, all ended by its start: n <= floor(start / t_L) - P - u."""
    fabric, fixed, lendable = dnn_fabric(result, slots)
    passes = unpinned_passes(result, engine, slots, load_s)
    gaps = quiet_gaps(engine, engine.end_s)
    # From the cold start every pin loads before the first release r1 (the pins are home then),
    # beside every tile held before it, on the one port: n <= floor(r1 / t_L) - P.
    first = min((f.release for f in engine.frames), default=float("inf"))
    cold = math.floor(first / load_s + 1e-9) - fixed - lendable if first != float("inf") else slots

    # A gap that runs to the run's end with no release at its end has no pin to give back in the
    # run: edf's earliest next release is then past the end (inf when no frame will come,
    # foresight.earliest_release_s), so pin_lend's back_by does not cut the lend before the end.
    releases = {f.release for f in engine.frames}

    def lent_at(t: float) -> int:
        for e, r in gaps:
            if e <= t < r:
                back = math.floor((r - t) / load_s + 1e-9) if r < engine.end_s or r in releases else lendable
                return min(lendable, math.floor((t - e) / load_s + 1e-9), back)
        return 0

    total = 0
    for pieces in stretches:
        cuts = {x for a, b, _ in pieces for x in (a, b)}
        lo, hi = pieces[0][0], pieces[-1][1]
        for e, r in gaps:
            cuts.update(x for k in range(lendable + 1) for x in (e + k * load_s, r - k * load_s) if lo < x < hi)
        if lo < first < hi:
            cuts.add(first)
        cuts = sorted(cuts)
        run: list[tuple[float, int]] = []
        for a, b in itertools.pairwise(cuts):
            t = (a + b) / 2
            n = next((n for x, y, n in pieces if x <= t < y), 0)
            lent = lent_at(t)
            n = min(n, fabric - fixed - lendable + lent, cold if t < first else fabric)
            for start, end, u in passes:
                apart = start - t if t < start else max(0.0, t - end)
                n = min(n, fabric - fixed - lendable - u + lent + math.floor(apart / load_s + 1e-9))
                if t < start:       # the tiles, the pins and its copies: distinct loads since 0
                    n = min(n, math.floor(start / load_s + 1e-9) - fixed - lendable - u)
            if n >= 1:
                run.append((b - a, n))
            elif run:
                total += dnn_windows.stretch_images(run, timings)
                run = []
        if run:
            total += dnn_windows.stretch_images(run, timings)
    return total


def summarize(rows: list[dict]) -> dict:
    ratios = [r["ratio"] for r in rows if r["ratio"] is not None]
    gap = sum(r["bound_images"] - r["run_images"] for r in rows)
    terms = {t: round(sum(r["loss_images"][t] for r in rows), 1) for t in TERMS}
    kept = [r["ratio_to_edf_rules"] for r in rows if r["ratio_to_edf_rules"] is not None]
    return {"workloads": len(rows), "ratio_median": round(statistics.median(ratios), 3) if ratios else None,
            "ratio_to_edf_rules_median": round(statistics.median(kept), 3) if kept else None,
            "edf_rules_images": sum(r["edf_rules_images"] for r in rows),
            "runs_above_edf_rules": [r["seed"] for r in rows if r["run_images"] > r["edf_rules_images"]],
            "none_run": {str(r["seed"]): r["why_none"] for r in rows if r["why_none"]},
            "ratio_p10": round(sorted(ratios)[len(ratios) // 10], 3) if ratios else None,
            "bound_images": sum(r["bound_images"] for r in rows), "run_images": sum(r["run_images"] for r in rows),
            "gap_images": gap, "loss_share_of_gap": {t: round(v / gap, 3) if gap else 0.0 for t, v in terms.items()},
            "tile_loads": sum(r["tile_loads"] for r in rows),
            "tiles_never_run": sum(r["tiles_never_run"] for r in rows),
            "rt_reloads_after_tiles": sum(r["rt_reloads_after_tiles"] for r in rows)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--count", type=int, default=30)
    ap.add_argument("--seed", type=int, default=None, help="first seed (default: fresh)")
    ap.add_argument("--quick", action="store_true", help="a few workloads (seconds)")
    ap.add_argument("--json", default=None, help="write the rows and the summary here")
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    count = 3 if args.quick else args.count
    first = args.seed if args.seed is not None else random.SystemRandom().randrange(1, 10**9)
    log.info("first seed %d", first)
    started = time.perf_counter()
    rows = []
    for seed in dnn_seeds(first, count):
        rows.append(analyse(seed))
        r = rows[-1]
        log.info("seed %d (%d streams): %d of %d images (%s), %d under edf's pins and partitions; lost %s",
                 seed, r["streams"], r["run_images"], r["bound_images"], r["ratio"], r["edf_rules_images"],
                 r["loss_images"])
        if r["why_none"] and r["edf_rules_images"]:
            log.info("  no image: %s", r["why_none"])
    summary = summarize(rows)
    summary.update(first_seed=first, wall_s=round(time.perf_counter() - started, 1))
    sys.stdout.write(json.dumps(summary, indent=2) + "\n")
    write_result("dnn_window_gap", summary, quick=args.quick)
    if args.json:
        Path(args.json).write_text(json.dumps({"summary": summary, "rows": rows}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""A real-time vision pipeline and a best-effort DNN sharing one board's fabric: misses of the
real-time frames, and DNN images/s against the window bound that pays for tile loads and fill
latency, on the twin (model backend) and on the RTL (sim backend), in one run.

    python -m benchmarks.vision_dnn_share [--suite NAME] [--quick] [--json]

The bound (reference: "DNN in idle windows"): for every idle window w of the run's real-time
schedule (the stream's gaps between frames, from the end of the warm-up to the end) and every chain
length n (fill f_n, step p_n from the partitioner on the platform's dnn_tile variant),

    images(w, n) = 1 + floor((w - loads_n - f_n) / p_n)   if w >= loads_n + f_n, else 0,

take the best n per window and sum. loads_n is the port time of the loads a window must pay:
with m slots holding the real-time modules the next frame needs, K - m tiles may stay resident;
each tile beyond them is loaded in the window and the module it evicts reloaded before the next
frame, serial on the port: loads_n = 2 max(0, n - (K - m)) x one slot's load. Resident tiles are
taken as loaded during the warm-up, for free, so the bound stays an upper bound for any scheduler
that keeps the real-time schedule. (A general version is in the scheduler's limits; this one is
small and kept beside the benchmark that uses it.)

--quick: the twin only (seconds); the RTL run of the suite takes a few minutes.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from fpgashare.catalogue.workload import Workload, load_workload
from fpgashare.cli.bench import misses, run_one
from fpgashare.dnn.planning import dnn_plan

SUITES = Path(__file__).resolve().parent / "workloads"
DEFAULT_SUITE = "vision_reader_pynq_z2"
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Chain:
    """A DNN chain of ``tiles`` tiles: its fill latency and its step, seconds."""

    tiles: int
    fill_s: float
    step_s: float


def window_images(window_s: float, chains: list[Chain], load_s: float, resident: int) -> int:
    """Images of the best chain in one idle window of ``window_s`` (the reference formula)."""
    best = 0
    for chain in chains:
        loads = 2 * max(0, chain.tiles - resident) * load_s
        room = window_s - loads - chain.fill_s
        if room >= 0:
            best = max(best, 1 + int(room // chain.step_s))
    return best


def stream_windows(busy: list[tuple[float, float]], start_s: float, end_s: float) -> list[float]:
    """Lengths of the idle windows in [start_s, end_s) between ``busy`` intervals."""
    windows, t = [], start_s
    for a, b in sorted(busy):
        if a > t:
            windows.append(min(a, end_s) - t)
        t = max(t, b)
        if t >= end_s:
            break
    if t < end_s:
        windows.append(end_s - t)
    return [w for w in windows if w > 0]


def dnn_window_bound(workload: Workload, engine, streams: list[dict] | None = None) -> dict:
    """DNN images/s the run's idle windows allow (module docstring); ``engine`` a finished run,
    ``streams`` its summary's per-stream partitions (slots, pipelines, whether the DNN runs there;
    None: one stream over every slot). The windows are those of the DNN's stream, the tiles its slots'."""
    platform = workload.platform
    model = next(p.model for p in workload.pipelines if not p.realtime)
    part = next((s for s in streams or [] if s.get("dnn")), None)
    slot_ids = set(part["slots"]) if part else {s.index for s in platform.slots}
    names = set(part["pipelines"]) if part else {p.name for p in workload.pipelines if p.realtime}
    tile_slots = [s for s in platform.slots_for("dnn_tile") if s.index in slot_ids]
    plans = [dnn_plan(platform, model, n) for n in range(1, len(tile_slots) + 1)]
    chains = [Chain(len(p.stages), p.latency_cycles / p.clock_hz, p.bottleneck_cycles / p.clock_hz) for p in plans]
    needed: Counter[str] = Counter()      # slots the partition's real-time frames hold at once, per module
    for p in workload.pipelines:
        if p.realtime and p.name in names:
            needed |= Counter(p.module_counts)
    resident = max(0, len(tile_slots) - min(sum(needed.values()), len(slot_ids)))
    load_s = max(platform.slot_load_seconds(s) for s in slot_ids)
    busy = []
    for f in engine.frames:
        if f.pipeline.name in names:
            busy += f.streamed or ([(f.start, f.end)] if f.start is not None and f.end is not None else [])
    first = engine.t0                     # the run's start, after the warm-up loads
    windows = stream_windows(busy, first, engine.end_s)
    images = sum(window_images(w, chains, load_s, resident) for w in windows)
    return {"model": model, "windows": len(windows), "images": images,
            "images_per_s": images / (engine.end_s - first), "span_s": engine.end_s - first,
            "tile_slots": [s.index for s in tile_slots], "chains": [vars(c) for c in chains],
            "resident_tiles": resident, "load_s": load_s}


def measure(workload: Workload, backend: str) -> dict:
    """edf on ``workload`` through ``backend``: misses, DNN images/s over the bound's span, the bound."""
    engine, result = run_one(workload, "edf", backend)
    bound = dnn_window_bound(workload, engine, result["totals"].get("streams"))
    rate = result["totals"]["dnn_images"] / bound["span_s"]
    return {"backend": backend, "misses": misses(result), "rejected": [r["name"] for r in result["rejected"]],
            "frames_on_time": {n: p["on_time"] for n, p in result["pipelines"].items()},
            "dnn_images": result["totals"]["dnn_images"], "dnn_images_per_s": round(rate, 1),
            "bound_images_per_s": round(bound["images_per_s"], 1),
            "of_bound": round(rate / bound["images_per_s"], 4) if bound["images_per_s"] else None,
            "reconfigurations": result["totals"]["reconfigurations"], "bound": bound,
            "streams": result["totals"].get("streams")}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--suite", default=DEFAULT_SUITE, help="a suite of benchmarks/workloads/ by name, or a path")
    parser.add_argument("--quick", action="store_true", help="the twin only")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    path = Path(args.suite) if args.suite.endswith(".toml") else SUITES / f"{args.suite}.toml"
    workload = load_workload(path)
    rows = [measure(workload, b) for b in (("model",) if args.quick else ("model", "sim"))]
    if args.json:
        print(json.dumps({"suite": path.stem, "platform": workload.platform.name, "runs": rows}, indent=2))
        return 0
    print(f"{path.stem} on {workload.platform.name} (edf)")
    for r in rows:
        print(f"  {r['backend']:<6} misses {r['misses']}  DNN {r['dnn_images_per_s']:9.1f} images/s  "
              f"bound {r['bound_images_per_s']:9.1f}  = {r['of_bound']:.1%} of the bound  "
              f"({r['bound']['windows']} windows, {r['reconfigurations']} loads)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

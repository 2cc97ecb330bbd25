"""Chains longer than the fabric, on the two-slot PYNQ-Z2: frames/s with passes through memory.

For chains of 3..6 stages at 640x480, side by side in one run:

- ``edf`` (admission and passes): the highest frame rate admission accepts and edf then serves
  with no miss, on the twin (virtual time, 2 s);
- ``rr-bundle`` with passes (bundled by pass): the highest rate it serves with no miss;
- all-CPU: OpenCV (``vision_ref.chain_reference``) on this machine, frames/s (median of 15).

Rates are found by bisection on the period (0.05 ms resolution). With ``--sim`` it also runs the
RGB edge detector (640x480 RGB, rgb2gray/gauss3x3/sobel_mag/threshold, 30 fps) on the RTL for
``--sim-s`` seconds and checks every frame against OpenCV.

    python -m benchmarks.passes_bench [--quick] [--sim] [--sim-s 1.0] [--json]

``--quick`` measures the 3-stage chain on 0.2 s of schedule at 1 ms resolution: it checks the
benchmark runs.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
from fpgashare.backends import make_backend
from fpgashare.catalogue.platform import load_platform
from fpgashare.catalogue.vision_ref import chain_reference
from fpgashare.catalogue.workload import Workload, realtime_spec
from fpgashare.sched.analysis.admission import admit
from fpgashare.sched.policies.registry import make_policy
from fpgashare.sched.sources.periodic import run_workload

from benchmarks.results import write_result

FRAME = (480, 640)
CHAINS = {
    3: ["gauss3x3", "sobel_mag", "threshold"],
    4: ["gauss3x3", "sobel_mag", "threshold", "erode3x3"],
    5: ["gauss3x3", "sobel_mag", "threshold", "erode3x3", "dilate3x3"],
    6: ["gauss3x3", "sobel_mag", "threshold", "erode3x3", "dilate3x3", "median3x3"],
}
EDGES = ["rgb2gray", "gauss3x3", "sobel_mag", "threshold"]


def _workload(platform, chain: list[str], period_s: float, duration_s: float) -> Workload | None:
    try:
        spec = realtime_spec("chain", chain, period_s, period_s, list(FRAME), platform)
    except Exception:            # a period shorter than one pass: no scheduler can serve it
        return None
    return Workload(Path("passes.toml"), platform, 1, duration_s, (spec,))


def served(platform, chain: list[str], period_s: float, scheduler: str, duration_s: float = 2.0) -> bool:
    """Whether ``scheduler`` serves the chain every ``period_s`` with no miss (edf: once admitted)."""
    workload = _workload(platform, chain, period_s, duration_s)
    if workload is None:
        return False
    contract = None
    if scheduler == "edf":
        admission = admit(workload)
        if not admission.admitted:
            return False
        contract = admission.contract
    _, summary = run_workload(workload, make_backend("model", platform), make_policy(scheduler), contract=contract)
    p = summary["pipelines"]["chain"]
    return p["on_time"] == p["submitted"] > 0


def best_rate(platform, chain: list[str], scheduler: str, duration_s: float = 2.0, resolution_s: float = 5e-5) -> float:
    """Frames/s: the shortest period served with no miss, by bisection."""
    lo, hi = 1e-4, 0.2
    if not served(platform, chain, hi, scheduler, duration_s):
        return 0.0
    while hi - lo > resolution_s:
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if served(platform, chain, mid, scheduler, duration_s) else (mid, hi)
    return 1.0 / hi


def cpu_rate(chain: list[str]) -> float:
    spec = realtime_spec("cpu", chain, 1.0, 1.0, list(FRAME), load_platform("pynq-z2"))
    frame = np.random.default_rng(1).integers(0, 256, spec.stages[0].kind.input_shape(*FRAME), dtype=np.uint8)
    chain_reference(spec.stages, frame)          # warm-up: OpenCV's first call pays its setup
    times = []
    for _ in range(15):
        start = time.perf_counter()
        chain_reference(spec.stages, frame)
        times.append(time.perf_counter() - start)
    return 1.0 / statistics.median(times)


def sim_check(seconds: float) -> dict:
    """The edge detector at 30 fps on the RTL: outcomes and frames equal to OpenCV."""
    platform = load_platform("pynq-z2")
    spec = realtime_spec("edges", EDGES, 1 / 30, 1 / 30, list(FRAME), platform)
    workload = Workload(Path("edges.toml"), platform, 1, seconds, (spec,))
    admission = admit(workload)
    started = time.perf_counter()
    engine, summary = run_workload(replace(workload, pipelines=tuple(admission.admitted)),
                                   make_backend("sim", platform), make_policy("edf"),
                                   contract=admission.contract, want_output=True)
    pixels = engine.source.pixels["edges"]
    want = chain_reference(spec.stages, pixels)
    exact = sum(f.output is not None and np.array_equal(f.output, want) for f in engine.frames)
    return {"passes": list(spec.passes), "admitted": bool(admission.admitted), **summary["pipelines"].get("edges", {}),
            "bit_exact": exact, "wall_s": round(time.perf_counter() - started, 1)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sim", action="store_true", help="also run the edge detector on the RTL")
    ap.add_argument("--sim-s", type=float, default=1.0)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--quick", action="store_true", help="the 3-stage chain, a short schedule: checks it runs")
    args = ap.parse_args()
    platform = load_platform("pynq-z2")
    chains, duration_s, resolution_s = CHAINS, 2.0, 5e-5
    if args.quick:
        chains, duration_s, resolution_s = {3: CHAINS[3]}, 0.2, 1e-3
    rows = []
    for n, chain in chains.items():
        spec = realtime_spec("x", chain, 1.0, 1.0, list(FRAME), platform)
        edf = best_rate(platform, chain, "edf", duration_s, resolution_s)
        rr = best_rate(platform, chain, "rr-bundle", duration_s, resolution_s)
        rows.append({"stages": n, "passes": len(spec.pass_stages), "edf_fps": round(edf, 1),
                     "rr_bundle_fps": round(rr, 1), "cpu_fps": round(cpu_rate(chain), 1),
                     "edf_over_rr": round(edf / rr, 2) if rr else None})
    report = {"platform": "pynq-z2", "frame": list(FRAME), "chains": rows}
    if args.sim:
        report["sim_edges_30fps"] = sim_check(args.sim_s)
    write_result("passes_bench", report, quick=args.quick)
    if args.json:
        print(json.dumps(report, indent=2))
        return
    print(f"{'stages':>6} {'passes':>6} {'edf fps':>8} {'rr-bundle fps':>14} {'edf/rr':>7} {'CPU fps':>8}")
    for r in rows:
        print(f"{r['stages']:>6} {r['passes']:>6} {r['edf_fps']:>8} {r['rr_bundle_fps']:>14} "
              f"{r['edf_over_rr'] if r['edf_over_rr'] is not None else '-':>7} {r['cpu_fps']:>8}")
    if args.sim:
        print("RTL, 640x480 RGB edge detector at 30 fps:", report["sim_edges_30fps"])


if __name__ == "__main__":
    main()

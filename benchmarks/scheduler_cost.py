"""Cost of one scheduling decision (the policy's dispatch after an event) at 1, 4 and 16 real-time
pipelines on the zcu104 shell, model backend, virtual time; p50 and p99 per scheduler.

    python benchmarks/scheduler_cost.py [--json]

Goal: p99 <= 50 us at 16 pipelines for edf.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from runtime.backends import make_backend
from runtime.platform import load_platform
from runtime.sched import make_policy
from runtime.sched.engine import run_workload
from runtime.simrun import resolve_chain
from runtime.vision_timing import chain_cycles
from runtime.workload import PipelineSpec, Workload

CHAINS = (["gauss3x3", "sobel_mag", "threshold"], ["downscale2x", "box3x3"], ["sharpen3x3"], ["threshold"],
          ["laplacian3x3", "downscale2x"])


class Timed:
    """Wraps a policy and records how long each dispatch takes."""

    def __init__(self, policy) -> None:
        self.policy, self.name, self.samples = policy, policy.name, []

    def setup(self, engine) -> None:
        self.policy.setup(engine)

    def dispatch(self, engine) -> None:
        start = time.perf_counter()
        self.policy.dispatch(engine)
        self.samples.append(time.perf_counter() - start)


def workload(n: int) -> Workload:
    platform = load_platform("zcu104")
    pipelines = []
    for i in range(n):
        stages = tuple(resolve_chain(CHAINS[i % len(CHAINS)], {}))
        rows, cols = (240, 320)
        exec_s = chain_cycles(stages, rows, cols) / platform.fabric_clock_hz
        period = exec_s * n * 2.5        # about 40% of one chain's time for the whole set
        pipelines.append(PipelineSpec(f"p{i}", "realtime", period, period, (rows, cols), stages, 0.1 * period,
                                      None, exec_s))
    return Workload(Path(f"cost{n}"), platform, 1, 1.0, tuple(pipelines))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rows = []
    for n in (1, 4, 16):
        w = workload(n)
        for name in ("edf", "rr-bundle", "fcfs"):
            timed = Timed(make_policy(name))
            run_workload(w, make_backend("model", w.platform), timed)
            us = np.array(timed.samples) * 1e6
            rows.append({"pipelines": n, "scheduler": name, "decisions": len(us),
                         "p50_us": round(float(np.percentile(us, 50)), 1),
                         "p99_us": round(float(np.percentile(us, 99)), 1)})
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    print(f"{'pipelines':>9s} {'scheduler':10s} {'decisions':>9s} {'p50 us':>8s} {'p99 us':>8s}")
    for r in rows:
        print(f"{r['pipelines']:9d} {r['scheduler']:10s} {r['decisions']:9d} {r['p50_us']:8.1f} {r['p99_us']:8.1f}")
    edf16 = next(r for r in rows if r["pipelines"] == 16 and r["scheduler"] == "edf")
    print(f"edf at 16 pipelines: p99 {edf16['p99_us']} us (goal <= 50 us): "
          f"{'met' if edf16['p99_us'] <= 50 else 'NOT met'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

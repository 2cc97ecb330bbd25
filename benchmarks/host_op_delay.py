"""The host's delay of fabric operations, counted or not: generated workloads (fresh seeds) on a
board whose loop takes every engine event late by a random delay up to the host's response bound
R (arrivals, load ends, frame ends), each pipeline seen by the fabric as the host leaves it
(deadline D - 2R, jitter J + R; some pipelines placed with stages on the host, ``fallback="cpu"``,
whose frames change hands once more each way). Admission counts that delay with every pass and load
(``Board.op_delay_s``) or, as the baseline, not at all. Printed per R: frames of admitted
pipelines and those that ended after their arrival + D - R, both ways, and the pipelines admitted.

    python -m benchmarks.host_op_delay [--quick] [--count 200] [--seed S]
"""

from __future__ import annotations

import argparse
import logging
import random

import numpy as np
from fpgashare.backends.model import ModelBackend
from fpgashare.sched.board.board import Board
from fpgashare.sched.core.clock import VirtualClock
from fpgashare.sched.host.cpu_fallback import fallback_candidates
from fpgashare.sched.host.cpu_work import ModelledCpuCost
from fpgashare.sched.host.host_cost import HostBudget, HostCost
from fpgashare.sched.policies.registry import make_policy

from benchmarks.late_loop import join, step_to, take_events_until
from benchmarks.results import write_result
from benchmarks.workload_gen import random_workload

log = logging.getLogger(__name__)
RESERVES_S = (0.2e-3, 0.5e-3, 1.0e-3)

COST = HostCost(per_frame_s=50e-6, per_byte_s=0.0, per_load_s=20e-6, block_s=50e-6)


def placement(rng: random.Random, p, platform):
    """``p`` as drawn, or (sometimes, for chains of two stages or more) one of its placements with
    stages on the host, as the daemon's CPU fallback makes them."""
    if len(p.stages) < 2 or rng.random() >= 0.4:
        return p
    options = [s for s, _ in fallback_candidates(p.name, p.stages, p.period_s, p.deadline_s, p.frame, platform, {},
                                                 ModelledCpuCost())
               if s is not None and (s.cpu_before or s.cpu_after) and not s.on_cpu_only]
    return rng.choice(options) if options else p


def late_run(seed: int, reserve_s: float, counted: bool) -> tuple[int, int]:
    """One generated workload on a board whose loop takes every event up to ``reserve_s`` late;
    (frames of admitted pipelines, those that ended after arrival + deadline - R). ``counted``
    False: admission ignores the delay (the check that the test can see a difference)."""
    rng = random.Random(seed)
    workload = random_workload(seed, max_s=1.0, dnn=False)
    platform, clock = workload.platform, VirtualClock()
    board = Board.whole(platform, ModelBackend(platform), lambda: make_policy("edf"), clock)
    for part in board.parts:
        part.want_output = False
    board.begin()
    budget = HostBudget(COST, reserve_s=reserve_s)
    admitted = []
    for p in (placement(rng, p, platform) for p in workload.pipelines if p.realtime):
        fabric = budget.fabric_spec(p)
        if isinstance(fabric, str):
            continue
        board.op_delay_s = reserve_s if counted else 0.0        # the loop is taken to be that late at most
        if board.admit(fabric) is not None:
            continue
        if join(board, fabric):
            admitted.append(fabric)
    start = clock.now()
    arrivals = sorted((start + 0.01 + p.release_s(k, seed), k, p) for p in admitted
                      for k in range(int(workload.duration_s / p.period_s)))
    pixels = {p.name: np.zeros((p.cpu_before or p.stages)[0].kind.input_shape(*p.frame), np.uint8) for p in admitted}
    frames = []

    def late() -> float:                                  # the loop notices an event up to R late
        return rng.uniform(0.0, reserve_s)

    for arrival, _, p in arrivals:
        noticed = arrival + late()
        take_events_until(board, noticed, late)
        step_to(board, noticed)
        frame = board.submit(p.name, pixels[p.name])
        frames.append((arrival, p, frame))
    take_events_until(board, clock.now() + 5.0, late)
    late = sum(1 for arrival, p, f in frames
               # the app's deadline (the fabric's, its host stages', what R took) less R for the answer
               if f.end is None or f.end > arrival + p.due_s + budget.taken[p.name] - reserve_s + 1e-9)
    return len(frames), late


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--count", type=int, default=200)
    ap.add_argument("--seed", type=int, default=None, help="first seed (default: fresh)")
    ap.add_argument("--quick", action="store_true", help="a few workloads (CI)")
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    count = 6 if args.quick else args.count
    first = random.SystemRandom().randrange(1 << 30) if args.seed is None else args.seed
    rows = []
    for reserve in RESERVES_S:
        row = {"reserve_ms": reserve * 1e3, "workloads": count}
        for counted in (True, False):
            frames = late = 0
            for seed in range(first, first + count):
                f, n = late_run(seed, reserve, counted)
                frames, late = frames + f, late + n
            key = "counted" if counted else "not_counted"
            row[f"{key}_frames"], row[f"{key}_late"] = frames, late
        rows.append(row)
        log.info("R %.1f ms: counted %d late of %d frames; not counted %d late of %d", reserve * 1e3,
                 row["counted_late"], row["counted_frames"], row["not_counted_late"], row["not_counted_frames"])
    write_result("host_op_delay", {"first_seed": first, "rows": rows,
                                   "late_when_counted": sum(r["counted_late"] for r in rows)}, quick=args.quick)


if __name__ == "__main__":
    main()

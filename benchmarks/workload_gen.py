"""Random workloads for claims about "any workload": seeded, on both platforms.

Each workload: 1-6 real-time pipelines (chains of 1..slots single-channel vision stages drawn from
the library, sometimes up to twice the slots (run in passes through memory), sometimes after an
RGB->gray stage; frames 120x160 .. 1080x1920, periods 8-100 ms, deadlines between the chain's
run time and the period, release jitter 0-2 ms, a random first release), and sometimes a
best-effort DNN pipeline.
The run lasts one hyperperiod (periods are whole tenths of a millisecond) or ``max_s``, whichever
is shorter.

    python -m benchmarks.workload_gen [--quick] --count 200 --out out/random [--seed 0]

writes ``random_<i>.toml`` files the bench and the soundness benchmark read; ``random_workload``
builds the same workload in memory.
"""

from __future__ import annotations

import argparse
import logging
import math
import random
from dataclasses import replace
from functools import reduce
from pathlib import Path

from fpgashare.catalogue.modules import PRESETS
from fpgashare.catalogue.platform import load_platform
from fpgashare.catalogue.workload import DNN_MODELS, PipelineSpec, Workload, realtime_spec

log = logging.getLogger(__name__)

PLATFORMS = ("pynq-z2", "zcu104")
#: Single-channel stages (one frame in, one out). With the rank filters and FAST there are eight
#: distinct modules for the ZCU104's four slots: residency (pins, swaps) is part of every draw.
VISION = sorted({*PRESETS, "sobel_mag", "threshold", "downscale2x", "erode3x3", "dilate3x3", "median3x3", "fast9"})
FRAMES = ((120, 160), (240, 320), (480, 640), (720, 1280), (1080, 1920))


def hyperperiod_s(periods_s: list[float]) -> float:
    """Least common multiple of periods given in whole tenths of a millisecond."""
    ticks = [round(p * 1e4) for p in periods_s]
    return reduce(lambda a, b: a * b // math.gcd(a, b), ticks, 1) / 1e4


def random_workload(seed: int, platform: str | None = None, max_s: float = 10.0, dnn: bool | None = None) -> Workload:
    """One seeded random workload (see the module docstring)."""
    rng = random.Random(seed)
    plat = load_platform(platform or rng.choice(PLATFORMS))
    pipelines: list[PipelineSpec] = []
    for i in range(rng.randint(1, 6)):
        for _ in range(20):      # redraw until the chain fits its period at all
            longest = 2 * len(plat.slots) if rng.random() < 0.15 else len(plat.slots)   # some run in passes
            chain = rng.sample(VISION, rng.randint(1, longest))
            if len(chain) < len(plat.slots) and rng.random() < 0.25:
                chain = ["rgb2gray", *chain]        # a colour camera: the chain starts with RGB -> gray
            rows, cols = rng.choice(FRAMES)
            probe = realtime_spec(f"p{i}", chain, 1.0, 1.0, [rows, cols], plat)
            low = max(8e-3, probe.exec_s * 1.02)
            if low <= 100e-3:
                break
        else:
            continue
        period = round(rng.uniform(low, 100e-3), 4)
        deadline = rng.uniform(probe.exec_s, period)
        jitter = rng.uniform(0.0, min(2e-3, 0.5 * period)) if rng.random() < 0.7 else 0.0
        spec = realtime_spec(f"p{i}", chain, period, deadline, [rows, cols], plat, jitter_s=jitter)
        pipelines.append(replace(spec, offset_s=round(rng.uniform(0.0, period), 4)))
    if not pipelines:
        return random_workload(seed + 1_000_003, platform, max_s, dnn)
    if dnn if dnn is not None else rng.random() < 0.3:
        pipelines.append(PipelineSpec("dnn", "besteffort", model=rng.choice(DNN_MODELS)))
    duration = min(max_s, hyperperiod_s([p.period_s for p in pipelines if p.realtime]))
    duration = max(duration, max(p.offset_s for p in pipelines if p.realtime) + 2 * max(
        p.period_s for p in pipelines if p.realtime))
    return Workload(Path(f"random_{seed}.toml"), plat, seed, duration, tuple(pipelines))


def to_toml(workload: Workload) -> str:
    """The workload as a file ``fpgashare bench`` reads (stage names as the library knows them)."""
    lines = [f"# random workload, seed {workload.seed} (benchmarks/workload_gen.py)",
             f'platform = "{workload.platform.name}"', f"seed = {workload.seed}",
             f"duration_s = {workload.duration_s!r}", ""]
    for p in workload.pipelines:
        lines += ["[[pipeline]]", f'name = "{p.name}"']
        if not p.realtime:
            lines += ['class = "besteffort"', f'model = "{p.model}"', ""]
            continue
        stages = ", ".join(f'"{s.name}"' for s in p.stages)
        lines += ['class = "realtime"', f"period_ms = {p.period_s * 1e3!r}", f"deadline_ms = {p.deadline_s * 1e3!r}",
                  f"frame = [{p.frame[0]}, {p.frame[1]}]", f"stages = [{stages}]",
                  f"jitter_ms = {p.jitter_s * 1e3!r}", f"offset_ms = {p.offset_s * 1e3!r}", ""]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--count", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0, help="first seed")
    ap.add_argument("--out", default="out/random")
    ap.add_argument("--max-s", type=float, default=10.0)
    ap.add_argument("--quick", action="store_true", help="three workloads: checks the generator runs")
    ap.add_argument("--platform", default=None, help="one platform for every workload (default: drawn from "
                                                     f"{', '.join(PLATFORMS)})")
    args = ap.parse_args()
    if args.quick:
        args.count = min(args.count, 3)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for seed in range(args.seed, args.seed + args.count):
        (out / f"random_{seed}.toml").write_text(to_toml(random_workload(seed, args.platform, max_s=args.max_s)))
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    log.info("wrote %d workloads to %s", args.count, out)


if __name__ == "__main__":
    main()

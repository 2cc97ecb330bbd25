"""Is RTL time board time? Random multi-stream workloads run on the twin (``model``) and on the
co-simulated RTL board (``sim`` with streams: loads, frames and DNN batches that overlap in the
schedule overlap in the RTL), with the same stream plan (edf's partitioned plan, ``spread_plan``,
so that work lands on several streams), and compared.

Workloads are drawn like ``workload_gen.py``'s, scaled to what an RTL simulation runs in seconds:
frames 48x64 .. 160x240, periods 1-5 ms, 30 ms of schedule, on the ZCU104 and PYNQ-Z2 shells with
partitions shrunk to 60 configuration frames (28 us loads) and the modules the draws use. Per
workload: the streams used, frames, misses of admitted pipelines on the RTL, whether every frame's
output is identical to the twin's, the least slack of a frame (deadline minus end, on the RTL), for
every operation the RTL ran the largest relative and absolute difference between its board time
(start to end, register accesses included) and the twin's estimate of that same operation, and how
often work overlapped in the RTL (frames on different streams, frames beside DNN batches, loads
during frames).

    python -m benchmarks.cosim_agreement [--quick] [--count 12] [--seed 0]
"""

from __future__ import annotations

import argparse
import itertools
import logging
import random
import tempfile
import time
from pathlib import Path

import numpy as np
from fpgashare.backends.model import ModelBackend
from fpgashare.backends.sim import SimBackend
from fpgashare.catalogue.platform import load_platform, manifest_at_pixels_per_clock
from fpgashare.catalogue.workload import load_workload
from fpgashare.sched.analysis.control_traffic import control_seconds
from fpgashare.sched.board.stream_plan import spread_plan
from fpgashare.sched.board.workload_run import run_board
from fpgashare.sched.policies.edf import EdfPolicy

from benchmarks.results import write_result

log = logging.getLogger(__name__)

STAGES = ("gauss3x3", "box3x3", "sobel_mag", "threshold", "erode3x3", "dilate3x3", "downscale2x")
MODULES = ("conv3x3", "sobel_mag", "threshold", "erode3x3", "dilate3x3", "downscale2x", "dnn_tile")
SIDES = ((48, 64), (64, 96), (96, 128), (120, 160), (160, 240))


def small_platform(name: str, folder: Path) -> Path:
    path = manifest_at_pixels_per_clock(name, 1, folder / f"{name}-cosim.toml", modules=MODULES)
    text = path.read_text()
    frames = {s.frames for s in load_platform(name).slots}
    for f in frames:
        text = text.replace(f"frames = {f}\n", "frames = 60\n")
    path.write_text(text)
    return path


def random_toml(seed: int, platform: Path, slots: int) -> str:
    rng = random.Random(seed)
    lines = [f'platform = "{platform}"', "duration_s = 0.03", f"seed = {seed}"]
    for i in range(rng.randint(2, 4)):
        chain = rng.sample(STAGES, rng.randint(1, min(3, slots)))
        rows, cols = rng.choice(SIDES)
        period = rng.choice((1.0, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0))
        lines += ["", "[[pipeline]]", f'name = "p{i}"', 'class = "realtime"', f"period_ms = {period}",
                  f"offset_ms = {rng.uniform(0, period):.3f}", f"frame = [{rows}, {cols}]",
                  f"stages = {list(chain)!r}".replace("'", '"')]
    if rng.random() < 0.6:
        lines += ["", "[[pipeline]]", 'name = "reader"', 'class = "besteffort"', 'model = "digits_cnn"']
    return "\n".join(lines) + "\n"


class TimedSim(SimBackend):
    """The co-simulated board, noting each operation's board time beside the twin's estimate."""

    def __init__(self, platform, streams: int) -> None:
        super().__init__(platform, streams)
        self.timed: list[tuple[str, float, float]] = []    # (kind, twin estimate s, board s)

    def _started(self, job, estimate_s, finish):
        kind = {"load_job": "load", "frame_job": "frame"}.get(job.__name__, "dnn")
        start = self.cosim.cycle / self.cosim.hz
        pending = super()._started(job, estimate_s, finish)
        pending.when_done(lambda t: self.timed.append((kind, estimate_s, t - start)))
        return pending


def _overlaps(a, b) -> int:
    return sum(x.start < y.end and y.start < x.end for x in a for y in b)


def compare(path: Path) -> dict:
    workload = load_workload(path)
    platform = workload.platform
    streams = random.Random(workload.seed).randint(2, platform.streams)
    plan = spread_plan(workload, streams)
    start = time.perf_counter()
    model, model_sum = run_board(workload, ModelBackend(platform, streams), plan, EdfPolicy, want_output=True)
    board = TimedSim(platform, streams)
    sim, summary = run_board(workload, board, plan, EdfPolicy, want_output=True)
    wall = time.perf_counter() - start
    outputs = {f.key: f.output for f in model.frames}
    done = [f for f in sim.frames if f.output is not None]
    worst = {k: (0.0, 0) for k in ("frame", "dnn", "load")}
    allowance = control_seconds(platform)
    over = sum(board_s > estimate + allowance for _, estimate, board_s in board.timed)
    for kind, estimate, board_s in board.timed:
        rel, cycles = abs(board_s / estimate - 1), round(abs(board_s - estimate) * platform.fabric_clock_hz)
        worst[kind] = max(worst[kind], (rel, cycles))
    tracks = {}
    for e in sim.trace:
        if e.track.startswith("stream"):
            tracks.setdefault(e.track, []).append(e)
    frames = {t: [e for e in v if "/" in e.name] for t, v in tracks.items()}
    batches = [e for v in tracks.values() for e in v if "/" not in e.name]
    loads = [e for e in sim.trace if e.track == "port" and e.start >= sim.t0]
    return {
        "workload": path.name, "platform": platform.name, "streams": streams, "partitions": len(plan.partitions),
        "admitted": len(plan.admitted), "frames": len(sim.frames), "ops": len(board.timed),
        "misses": sum(p["submitted"] - p["on_time"] for p in summary["pipelines"].values()),
        "over_allowance": over,
        "min_slack_us": round(1e6 * min((f.due - f.end for f in sim.frames if f.end is not None), default=0.0), 1),
        "identical": len(done) == len([f for f in model.frames if f.output is not None])
        and all(np.array_equal(f.output, outputs[f.key]) for f in done),
        **{f"worst_{k}": f"{v[0]:.2%}/{v[1]}cyc" for k, v in worst.items()},
        "frame_x_frame": sum(_overlaps(frames[s], frames[t]) for s, t in itertools.combinations(sorted(frames), 2)),
        "frame_x_dnn": _overlaps([e for v in frames.values() for e in v], batches),
        "load_x_frame": _overlaps(loads, [e for v in frames.values() for e in v]),
        "dnn_images": (model_sum["totals"]["dnn_images"], summary["totals"]["dnn_images"]),
        "wall_s": round(wall, 1), "_worst": worst,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=12)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="one workload: checks the benchmark runs")
    args = parser.parse_args()
    if args.quick:
        args.count = 1
    logging.basicConfig(level=logging.WARNING)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        platforms = {name: small_platform(name, folder) for name in ("zcu104", "pynq-z2")}
        rows = []
        for i in range(args.count):
            seed = args.seed + i
            name = ("zcu104", "pynq-z2")[i % 2]
            path = folder / f"cosim_{seed}.toml"
            path.write_text(random_toml(seed, platforms[name], len(load_platform(platforms[name]).slots)))
            row = compare(path)
            rows.append(row)
            print(" ".join(f"{k}={v}" for k, v in row.items() if not k.startswith("_")), flush=True)
    worst = {k: max(r["_worst"][k] for r in rows) for k in ("frame", "dnn", "load")}
    summary = {"workloads": len(rows), "frames": sum(r["frames"] for r in rows),
               "rtl_operations": sum(r["ops"] for r in rows), "misses": sum(r["misses"] for r in rows),
               "outputs_identical": sum(r["identical"] for r in rows),
               "past_estimate_plus_allowance": sum(r["over_allowance"] for r in rows),
               **{f"worst_{k}_vs_twin": f"{v[0]:.2%} ({v[1]} cycles)" for k, v in worst.items()},
               "least_slack_us": min(r["min_slack_us"] for r in rows),
               "overlaps_frame_frame": sum(r["frame_x_frame"] for r in rows),
               "overlaps_frame_dnn": sum(r["frame_x_dnn"] for r in rows),
               "overlaps_load_frame": sum(r["load_x_frame"] for r in rows)}
    per_workload = [{k: v for k, v in r.items() if not k.startswith("_")} for r in rows]
    write_result("cosim_agreement", {"seed": args.seed, "summary": summary, "workloads": per_workload},
                 quick=args.quick)
    print(f"\n{len(rows)} workloads, {sum(r['frames'] for r in rows)} frames, {sum(r['ops'] for r in rows)} "
          f"operations on the RTL: misses {sum(r['misses'] for r in rows)}, outputs identical "
          f"{sum(r['identical'] for r in rows)}/{len(rows)}; operations past the twin's estimate plus the "
          f"register-traffic allowance: {sum(r['over_allowance'] for r in rows)}; board time against the twin, worst: "
          + ", ".join(f"{k} {v[0]:.2%} ({v[1]} cycles)" for k, v in worst.items())
          + f"; least slack of a frame on the RTL {min(r['min_slack_us'] for r in rows):.1f} us"
          + f"; overlaps: frame/frame {sum(r['frame_x_frame'] for r in rows)}, "
          f"frame/DNN {sum(r['frame_x_dnn'] for r in rows)}, load/frame {sum(r['load_x_frame'] for r in rows)}")


if __name__ == "__main__":
    main()

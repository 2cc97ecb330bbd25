"""DNN tiles: digits_cnn and edge_cnn on K = 1..4 dnn_tiles of the zcu104 shell through the bulk
harness, in one run: predicted vs measured bottleneck (cycles per image in steady state), images/s
at the fabric clock and of the simulation itself, and the partitioner's planning time.

    python -m benchmarks.dnn_tiles [--quick] [--digits-images N] [--edge-images N] [--json]

The steady-state interval is (T_N - T_1) / (N - 1), T_n = cycles until the n-th image's last
output word, so pipeline fill is not counted as throughput.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np
from fpgashare.catalogue.platform import load_platform
from fpgashare.dnn.cycle_model import LinkModel
from fpgashare.dnn.models import digits_cnn, edge_cnn, random_layer
from fpgashare.dnn.network import Network
from fpgashare.dnn.partition import cost_table, partition
from fpgashare.dnn.planning import link_model
from fpgashare.dnn.reference import logits
from fpgashare.dnn.tile_chain import TileChain
from fpgashare.hdl_sim.board import SimBoard

from benchmarks.results import write_result


def planning_time(net: Network, tiles: int, repeats: int = 200) -> tuple[float, float]:
    """(cold, warm) best planning time: cold recomputes the cost table, warm reuses it (as the
    scheduler does when only the number of tiles changes)."""
    cold = warm = float("inf")
    for _ in range(repeats):
        cost_table.cache_clear()
        start = time.perf_counter()
        partition(net, tiles)
        cold = min(cold, time.perf_counter() - start)
        start = time.perf_counter()
        partition(net, tiles - 1 or 1)
        warm = min(warm, time.perf_counter() - start)
    return cold, warm


def deep_network(layers: int = 30) -> Network:
    rng = np.random.default_rng(0)
    shape, out = (32, 32, 8), []
    for _ in range(layers):
        out.append(random_layer(rng, "conv", 8, shape))
        shape = out[-1].output_shape(shape)
    return Network("deep30", (32, 32, 8), tuple(out)).validate()


def measure(board: SimBoard, net: Network, tiles: int, images: np.ndarray, link: LinkModel, clock: float) -> dict:
    plan = partition(net, tiles, link, clock_hz=clock)
    board.rtl.reset()
    chain = TileChain(board, net, plan)
    first = chain.run(images[:1])
    start = time.perf_counter()
    run = chain.run(images)
    wall = time.perf_counter() - start
    agree = bool(np.array_equal(run.outputs.reshape(len(images), -1), logits(net, images)))
    interval = (run.cycles - first.cycles) / (len(images) - 1)
    return {"model": net.name, "tiles": tiles, "tiles_used": len(plan.stages), "segments": plan.segments,
            "predicted_bottleneck": round(plan.bottleneck_cycles), "measured_bottleneck": round(interval, 1),
            "ratio": round(interval / plan.bottleneck_cycles, 4), "latency_cycles": first.cycles,
            "fabric_images_per_s": round(clock / interval, 1), "sim_images_per_s": round(len(images) / wall, 2),
            "sim_cycles_per_s": round(run.cycles / wall), "bit_exact": agree}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--digits-images", type=int, default=64)
    parser.add_argument("--edge-images", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--quick", action="store_true",
                        help="digits_cnn on 1 and 2 tiles, a few images, no edge_cnn: checks the benchmark runs")
    args = parser.parse_args()
    platform = load_platform("zcu104")
    link = link_model(platform)
    board = SimBoard(platform)
    rng = np.random.default_rng(0)
    rows = []
    models = [(digits_cnn(), args.digits_images, (8, 8)), (edge_cnn(), args.edge_images, (128, 128))]
    tile_counts, repeats = range(1, 5), 200
    if args.quick:
        models, tile_counts, repeats = [(digits_cnn(), 4, (8, 8))], range(1, 3), 5
    for net, n, shape in models:
        images = rng.integers(0, 256, (max(n, 2), *shape), dtype=np.uint8)
        for tiles in tile_counts:
            rows.append(measure(board, net, tiles, images, link, platform.fabric_clock_hz))
    plans = {name: [round(t * 1e3, 4) for t in planning_time(net, 4, repeats)]
             for name, net in (("digits_cnn", digits_cnn()), ("edge_cnn", edge_cnn()), ("deep30", deep_network()))}
    write_result("dnn_tiles", {"platform": platform.name, "fabric_clock_hz": platform.fabric_clock_hz, "runs": rows,
                               "planning_ms_k4_cold_warm": plans}, quick=args.quick)
    if args.json:
        print(json.dumps({"runs": rows, "planning_ms_k4_cold_warm": plans}, indent=2))
        return 0
    print(f"dnn_tile chains on the {platform.name} shell ({platform.fabric_clock_hz / 1e6:.0f} MHz fabric clock)")
    print(f"{'model':11s} {'K':>2s} {'used':>4s} {'predicted':>10s} {'measured':>10s} {'ratio':>6s} "
          f"{'img/s@fabric':>12s} {'sim img/s':>9s} {'exact':>5s}  segments")
    for r in rows:
        print(f"{r['model']:11s} {r['tiles']:2d} {r['tiles_used']:4d} {r['predicted_bottleneck']:10d} "
              f"{r['measured_bottleneck']:10.1f} {r['ratio']:6.3f} {r['fabric_images_per_s']:12.1f} "
              f"{r['sim_images_per_s']:9.2f} {r['bit_exact']!s:>5s}  {r['segments']}")
    print(f"partitioner, K = 4, best of {repeats}, cold / warm cost table: "
          + ", ".join(f"{k} {c} / {w} ms" for k, (c, w) in plans.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())

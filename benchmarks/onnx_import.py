"""Imported ONNX model (the shipped digits_qdq, quantized by onnxruntime) on the held-out digits:
the integer reference against onnxruntime (values equal, max difference, top-1 agreement,
accuracy), and the RTL tiles against the reference on K = 1..4 tiles (bit-exact share, measured
vs predicted cycles per image), in one run.

    python -m benchmarks.onnx_import [--quick] [--images N] [--json]

``--quick`` compares the reference with onnxruntime on every held-out image and runs 8 of them
through the tiles on each K (seconds); without it all 540 go through every chain (minutes).
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np
from fpgashare.catalogue.platform import load_platform
from fpgashare.dnn.onnx_example import split, to_input
from fpgashare.dnn.onnx_import import import_onnx
from fpgashare.dnn.onnx_model import onnxruntime_outputs
from fpgashare.dnn.onnx_shipped import SHIPPED_ONNX
from fpgashare.dnn.partition import plan_for
from fpgashare.dnn.planning import link_model
from fpgashare.dnn.reference import run_network

SPLITS = {1: [(0, 6)], 2: [(0, 2), (2, 6)], 3: [(0, 2), (2, 4), (4, 6)], 4: [(0, 1), (1, 2), (2, 4), (4, 6)]}


def against_onnxruntime(imported, x: np.ndarray, labels: np.ndarray) -> dict:
    path = SHIPPED_ONNX["digits_qdq"]
    start = time.perf_counter()
    ours = imported.reference(x)
    ref_s = time.perf_counter() - start
    start = time.perf_counter()
    theirs = onnxruntime_outputs(path, imported, x)
    ort_s = time.perf_counter() - start
    diff = np.abs(ours.astype(np.int32) - theirs)
    return {"images": len(x), "equal_values": float(np.mean(diff == 0)), "max_abs_diff": int(diff.max()),
            "top1_agreement": float(np.mean(ours.argmax(1) == theirs.argmax(1))),
            "accuracy_reference": float(np.mean(ours.argmax(1) == labels)),
            "accuracy_onnxruntime": float(np.mean(theirs.argmax(1) == labels)),
            "reference_vs_onnxruntime_time": round(ref_s / ort_s, 2)}


def on_tiles(board, imported, x: np.ndarray, tiles: int) -> dict:
    from fpgashare.dnn.tile_chain import TileChain

    platform = board.platform
    board.rtl.reset()
    plan = plan_for(imported.network, SPLITS[tiles], link_model(platform), clock_hz=platform.fabric_clock_hz)
    activations = imported.quantize_input(x)
    start = time.perf_counter()
    run = TileChain(board, imported.network, plan).run(activations)
    wall = time.perf_counter() - start
    want = run_network(imported.network, activations)
    same = np.all(run.outputs.reshape(len(x), -1) == want.reshape(len(x), -1), axis=1)
    measured = run.cycles / len(x)
    return {"tiles": tiles, "images": len(x), "bit_exact": float(np.mean(same)),
            "cycles_per_image": round(measured, 1), "predicted": round(plan.bottleneck_cycles),
            "measured_over_predicted": round(measured / plan.bottleneck_cycles, 3), "wall_s": round(wall, 2)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="8 images through the tiles on each K")
    parser.add_argument("--images", type=int, help="images through the tiles on each K (default: all)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    imported = import_onnx(SHIPPED_ONNX["digits_qdq"])
    _, _, images, labels = split()
    x = to_input(images)
    report = {"onnxruntime": against_onnxruntime(imported, x, labels), "tiles": []}
    n = 8 if args.quick else (args.images or len(x))
    from fpgashare.hdl_sim.board import SimBoard

    board = SimBoard(load_platform("zcu104"))
    for k in SPLITS:
        report["tiles"].append(on_tiles(board, imported, x[:n], k))
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    o = report["onnxruntime"]
    print(f"digits_qdq, {o['images']} held-out images: reference vs onnxruntime {o['equal_values']:.4f} of values "
          f"equal, max diff {o['max_abs_diff']}, top-1 agreement {o['top1_agreement']:.4f}; accuracy "
          f"{o['accuracy_reference']:.4f} (onnxruntime {o['accuracy_onnxruntime']:.4f}); reference time / "
          f"onnxruntime time {o['reference_vs_onnxruntime_time']}")
    for t in report["tiles"]:
        print(f"  {t['tiles']} tile(s), {t['images']} images: bit-exact {t['bit_exact']:.4f}, "
              f"{t['cycles_per_image']} cycles/image, measured/predicted {t['measured_over_predicted']}, "
              f"wall {t['wall_s']} s")
    ok = o["equal_values"] >= 0.99 and o["max_abs_diff"] <= 1 and o["top1_agreement"] >= 0.995 and \
        all(t["bit_exact"] == 1.0 for t in report["tiles"])
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

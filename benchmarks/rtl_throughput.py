"""RTL throughput: a 3-stage chain (gauss3x3 -> sobel_mag -> threshold) at 640x480 on the zcu104
shell, through the compiled bulk harness and through cocotb driving the same RTL per cycle, in one run.

    python benchmarks/rtl_throughput.py [--frames N] [--cocotb-pixels N] [--json]

Prints pixels/s for both and their ratio; the target for the harness is >= 5 M pixels/s.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from fpgashare.bitstream.registry import build_config
from fpgashare.hdl_sim.board import SimBoard
from fpgashare.modules import resolve_stage
from fpgashare.platform import load_platform
from fpgashare.vision_ref import chain_reference

CHAIN = ("gauss3x3", "sobel_mag", "threshold")
TARGET = 5e6


def harness_rate(platform, frames: int) -> dict:
    board = SimBoard(platform)
    stages = [resolve_stage(n) for n in CHAIN]
    start = time.perf_counter()
    words = 0
    for k, stage in enumerate(stages):
        cfg = build_config(platform, platform.slots[k], stage.kind.name)
        assert board.load(k, cfg).ok
        words += len(cfg)
    load_s = time.perf_counter() - start
    board.route([0, 1, 2])
    for k, stage in enumerate(stages):
        board.program(k, stage, 480, 640)
    rng = np.random.default_rng(0)
    frame_list = [rng.integers(0, 256, (480, 640), dtype=np.uint8) for _ in range(frames)]
    start = time.perf_counter()
    cycles = 0
    for frame in frame_list:
        out, stats = board.stream(frame, (480, 640))
        cycles += stats.cycles
    stream_s = time.perf_counter() - start
    assert np.array_equal(out, chain_reference(stages, frame_list[-1]))
    return {"pixels_per_s": frames * 480 * 640 / stream_s, "cycles_per_s": cycles / stream_s,
            "load_words_per_s": words / load_s, "frames": frames}


def cocotb_rate(platform_name: str, pixels: int) -> dict:
    from fpgashare.hdl_sim.build import run_cocotb

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "cocotb.json"
        platform = load_platform(platform_name)
        env = {"FPGASHARE_BENCH_OUT": str(out), "FPGASHARE_BENCH_PLATFORM": platform_name,
               "FPGASHARE_BENCH_PIXELS": str(pixels)}
        os.environ.update(env)
        _, failed = run_cocotb("shell", "benchmarks.cocotb_shell_drive", platform.rtl_parameters(), env)
        if failed or not out.exists():
            raise RuntimeError("the cocotb measurement failed")
        data = json.loads(out.read_text())
    return {"pixels_per_s": data["pixels"] / data["stream_s"],
            "load_words_per_s": data["load_words"] / data["load_s"], "pixels": data["pixels"]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--frames", type=int, default=3)
    parser.add_argument("--cocotb-pixels", type=int, default=20000)
    parser.add_argument("--platform", default="zcu104")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    platform = load_platform(args.platform)
    fast = harness_rate(platform, args.frames)
    slow = cocotb_rate(args.platform, args.cocotb_pixels)
    result = {"chain": list(CHAIN), "frame": [480, 640], "platform": args.platform, "harness": fast,
              "cocotb": slow, "ratio_pixels": fast["pixels_per_s"] / slow["pixels_per_s"],
              "ratio_load": fast["load_words_per_s"] / slow["load_words_per_s"],
              "target_pixels_per_s": TARGET, "meets_target": fast["pixels_per_s"] >= TARGET}
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(f"3-stage chain {' -> '.join(CHAIN)}, 640x480, {args.platform} shell")
        print(f"  harness : {fast['pixels_per_s'] / 1e6:8.3f} M pixels/s  "
              f"({fast['cycles_per_s'] / 1e6:.3f} M cycles/s), loads {fast['load_words_per_s'] / 1e6:.3f} M words/s")
        print(f"  cocotb  : {slow['pixels_per_s'] / 1e6:8.3f} M pixels/s, loads "
              f"{slow['load_words_per_s'] / 1e6:.3f} M words/s")
        print(f"  ratio   : {result['ratio_pixels']:.1f}x pixels, {result['ratio_load']:.1f}x load words")
        print(f"  target  : >= {TARGET / 1e6:.0f} M pixels/s: {'met' if result['meets_target'] else 'NOT met'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Corner detector: RGB -> gray -> FAST-9 with non-maximum suppression at 30 fps on the FPGA; draws the corners.

    python apps/corners.py --video in.mp4 [--out corners.mp4] [--frames N] [--socket PATH] [--threshold T]

The chain's output is each corner's response where cv2.FastFeatureDetector_create(T,
nonmaxSuppression=True) finds a keypoint on cv2.cvtColor(frame, COLOR_RGB2GRAY), 0 elsewhere.
"""

from __future__ import annotations

import argparse
import sys

import cv2
import numpy as np
from fpgashare.apps._common import Pacer, Recorder, app_main, frame_size, frames, register
from fpgashare.catalogue.vision_ref import fast9_keypoints
from fpgashare.client import connect
from fpgashare.errors import FpgashareError

CHAIN = ["rgb2gray", "fast9"]
PERIOD_MS = 1000 / 30


def draw(rgb: np.ndarray, keypoints: set[tuple[int, int, int]]) -> np.ndarray:
    picture = rgb.copy()
    for x, y, _ in keypoints:
        cv2.circle(picture, (x, y), 3, (0, 255, 0), 1)
    return picture


def run(args: argparse.Namespace) -> dict:
    if not 0 <= args.threshold <= 255:
        raise FpgashareError(f"--threshold {args.threshold}: give 0..255")
    counts = {"frames": 0, "on_time": 0, "late": 0, "dropped": 0, "corners": 0}
    params = {"fast9": {"THRESH": args.threshold}}
    with connect(args.socket, timeout=args.timeout) as fpga:
        split = register(fpga, "corners", CHAIN, PERIOD_MS, frame_size(args.size), params)
        pacer, recorder = Pacer(fpga, PERIOD_MS / 1e3), Recorder(args, 1000 / PERIOD_MS)
        try:
            for rgb in frames(args):
                pacer.wait()
                response = split.process(rgb, counts)
                keypoints = fast9_keypoints(response)
                counts["corners"] += len(keypoints)
                recorder.add(rgb, draw(rgb, keypoints))
                recorder.note("responses", response)
        finally:
            recorder.close()
    counts["cpu_stages"] = split.cpu_stages
    return counts


def _extra_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--threshold", type=int, default=20, help="FAST threshold (0..255)")


def main(argv: list[str] | None = None) -> int:
    return app_main(__doc__, run, argv, extra_args=_extra_args)


if __name__ == "__main__":
    sys.exit(main())

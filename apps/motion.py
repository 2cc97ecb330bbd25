#!/usr/bin/env python3
"""Motion detector: frame differencing, threshold, 3x3 erosion and 2x downscale at 60 fps, on the FPGA.

    python apps/motion.py --video in.mp4 [--out motion.mp4] [--frames N] [--socket PATH]

The absdiff module takes the frame and the previous one side by side (the shell's DMA reads both
from memory), so the whole chain runs on the fabric; stages the fabric cannot take run in the
daemon on its CPU (``fallback="cpu"``), and the app says which.
"""

from __future__ import annotations

import argparse
import logging
import sys

import cv2
import numpy as np
from fpgashare.apps._common import Pacer, Recorder, app_main, frame_size, frames, register
from fpgashare.client import connect

CHAIN = ["absdiff", "threshold", "erode3x3", "downscale2x"]
PARAMS = {"threshold": {"THRESH": 24}}
PERIOD_MS = 1000 / 60
log = logging.getLogger("apps")


def run(args: argparse.Namespace) -> dict:
    counts = {"frames": 0, "on_time": 0, "late": 0, "dropped": 0}
    with connect(args.socket, timeout=args.timeout) as fpga:
        split = register(fpga, "motion", CHAIN, PERIOD_MS, frame_size(args.size), PARAMS)
        pacer, recorder = Pacer(fpga, PERIOD_MS / 1e3), Recorder(args, 1000 / PERIOD_MS)
        previous = None
        try:
            for rgb in frames(args):
                gray = cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY)
                if previous is not None:
                    pacer.wait()
                    recorder.add(gray, split.process(np.dstack([gray, previous]), counts))
                    recorder.note("previous", previous)
                previous = gray
        finally:
            recorder.close()
    counts["cpu_stages"] = split.cpu_stages
    return counts


def main(argv: list[str] | None = None) -> int:
    return app_main(__doc__, run, argv)


if __name__ == "__main__":
    sys.exit(main())

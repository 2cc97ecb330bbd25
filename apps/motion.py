#!/usr/bin/env python3
"""Motion detector: frame differencing, threshold and 2x downscale at 60 fps.

    python apps/motion.py --video in.mp4 [--out motion.mp4] [--frames N] [--socket PATH]

No module on the board subtracts two frames, so the differencing runs in OpenCV on the CPU (the
app says so); the threshold and downscale go to the FPGA, falling back to the CPU stage by stage
if the daemon refuses them.
"""

from __future__ import annotations

import argparse
import logging
import sys

import cv2
from fpgashare.apps._common import Pacer, Recorder, app_main, frame_size, frames, register
from fpgashare.client import connect

CHAIN = ["threshold", "downscale2x"]
PARAMS = {"threshold": {"THRESH": 24}}
PERIOD_MS = 1000 / 60
log = logging.getLogger("apps")


def run(args: argparse.Namespace) -> dict:
    counts = {"frames": 0, "on_time": 0, "late": 0, "dropped": 0}
    log.warning("motion: frame differencing runs on the CPU (OpenCV): the board has no module for it")
    with connect(args.socket) as fpga:
        split = register(fpga, "motion", CHAIN, PERIOD_MS, frame_size(args.size), PARAMS)
        pacer, recorder = Pacer(fpga, PERIOD_MS / 1e3), Recorder(args, 1000 / PERIOD_MS)
        previous = None
        try:
            for rgb in frames(args):
                gray = cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY)
                if previous is not None:
                    diff = cv2.absdiff(gray, previous)
                    pacer.wait()
                    recorder.add(diff, split.process(diff, counts))
                previous = gray
        finally:
            recorder.close()
    counts["cpu_stages"] = ",".join(["absdiff", *(s.name for s in split.cpu)])
    return counts


def main(argv: list[str] | None = None) -> int:
    return app_main(__doc__, run, argv)


if __name__ == "__main__":
    sys.exit(main())

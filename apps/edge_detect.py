#!/usr/bin/env python3
"""Edge detector: gray -> Gaussian -> Sobel magnitude -> threshold at 30 fps, on the FPGA.

    python apps/edge_detect.py --video in.mp4 [--out edges.mp4] [--frames N] [--socket PATH]

Stages the fabric cannot take (admission, a board without the module, a quarantined slot) run
in the daemon on its CPU (``fallback="cpu"``), and the app says which (``cpu_stages``). The
output equals OpenCV's on the same frame wherever each stage ran.
"""

from __future__ import annotations

import argparse
import sys

from fpgashare.apps._common import Pacer, Recorder, app_main, frame_size, frames, register
from fpgashare.client import connect

CHAIN = ["rgb2gray", "gauss3x3", "sobel_mag", "threshold"]
PERIOD_MS = 1000 / 30


def run(args: argparse.Namespace) -> dict:
    counts = {"frames": 0, "on_time": 0, "late": 0, "dropped": 0}
    with connect(args.socket, timeout=args.timeout) as fpga:
        split = register(fpga, "edges", CHAIN, PERIOD_MS, frame_size(args.size))
        pacer, recorder = Pacer(fpga, PERIOD_MS / 1e3), Recorder(args, 1000 / PERIOD_MS)
        try:
            for frame in frames(args):
                pacer.wait()
                recorder.add(frame, split.process(frame, counts))
        finally:
            recorder.close()
    counts["cpu_stages"] = split.cpu_stages
    return counts


def main(argv: list[str] | None = None) -> int:
    return app_main(__doc__, run, argv)


if __name__ == "__main__":
    sys.exit(main())

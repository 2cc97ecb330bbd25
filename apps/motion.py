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
from pathlib import Path

import cv2

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from apps._common import Pacer, Recorder, add_source_args, frame_size, frames, register
from runtime.client import DeadlineMissed, FrameDropped, connect
from runtime.errors import FpgashareError
from runtime.vision_ref import chain_reference

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
                if previous is None:
                    previous = gray
                    continue
                diff = cv2.absdiff(gray, previous)
                previous = gray
                pacer.wait()
                counts["frames"] += 1
                try:
                    mask = split.submit(diff)(timeout=30)
                    counts["on_time"] += 1
                except DeadlineMissed as late:
                    mask = late.output
                    counts["late"] += 1
                except FrameDropped as dropped:
                    log.info("frame %d dropped (%s); OpenCV fills in", counts["frames"], dropped.reason)
                    mask = chain_reference(split.cpu + split.fpga_stages, diff)
                    counts["dropped"] += 1
                recorder.add(diff, mask)
        finally:
            recorder.close()
    counts["cpu_stages"] = ",".join(["absdiff", *(s.name for s in split.cpu)])
    return counts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_source_args(parser)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, format="%(name)s: %(message)s")
    try:
        counts = run(args)
    except FpgashareError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 2
    print(" ".join(f"{k}={v}" for k, v in counts.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())

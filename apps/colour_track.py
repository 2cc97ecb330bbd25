#!/usr/bin/env python3
"""Colour tracker: RGB -> HSV -> in-range mask -> moments at 30 fps on the FPGA; draws the blob's centroid.

    python apps/colour_track.py --video in.mp4 [--out track.mp4] [--frames N] [--socket PATH]
                                [--hsv-lo H,S,V] [--hsv-hi H,S,V]

The mask equals cv2.inRange(cv2.cvtColor(frame, COLOR_RGB2HSV), lo, hi) and the centroid
(m10/m00, m01/m00) equals cv2.moments(mask, binaryImage=True)'s. The moments module holds m00,
m10 and m01 in registers after each frame and the daemon returns them with the frame
(``FrameFuture.results``); a frame that came back without them (dropped: the last mask repeats)
takes the same three integers from the mask (vision_ref.binary_moments).
"""

from __future__ import annotations

import argparse
import sys

import cv2
import numpy as np
from fpgashare.apps._common import Pacer, Recorder, app_main, frame_size, frames, register
from fpgashare.catalogue.vision_ref import binary_moments
from fpgashare.client import connect
from fpgashare.errors import FpgashareError

CHAIN = ["rgb2hsv", "in_range", "moments"]
#: The demo video's orange ball (RGB 255, 180, 0: H 21 on OpenCV's 0..179 scale).
HSV_LO, HSV_HI = (10, 150, 150), (30, 255, 255)
PERIOD_MS = 1000 / 30


def hsv_bounds(text: str) -> tuple[int, int, int]:
    try:
        values = tuple(int(v) for v in text.split(","))
    except ValueError:
        values = ()
    if len(values) != 3 or not all(0 <= v <= 255 for v in values):
        raise FpgashareError(f"HSV bound {text!r}: give H,S,V as three integers 0..255")
    return values


def params(lo: tuple[int, int, int], hi: tuple[int, int, int]) -> dict:
    return {"in_range": {**{f"LO{k}": v for k, v in enumerate(lo)}, **{f"HI{k}": v for k, v in enumerate(hi)}}}


def centroid(mask: np.ndarray, registers: dict[str, int] | None = None) -> tuple[float, float] | None:
    """(x, y) of the mask's centroid from m00, m10, m01 — the moments module's registers when the
    daemon returned them, else worked out from the mask; None for an empty mask."""
    if registers:
        m = {"M00": registers["M00"], "M10": registers["M10_LO"] | registers["M10_HI"] << 32,
             "M01": registers["M01_LO"] | registers["M01_HI"] << 32}
    else:
        m = binary_moments(mask)
    return (m["M10"] / m["M00"], m["M01"] / m["M00"]) if m["M00"] else None


def draw(rgb: np.ndarray, centre: tuple[float, float] | None) -> np.ndarray:
    picture = rgb.copy()
    if centre is not None:
        x, y = round(centre[0]), round(centre[1])
        cv2.drawMarker(picture, (x, y), (255, 0, 255), cv2.MARKER_CROSS, 12, 2)
    return picture


def run(args: argparse.Namespace) -> dict:
    lo, hi = hsv_bounds(args.hsv_lo), hsv_bounds(args.hsv_hi)
    counts = {"frames": 0, "on_time": 0, "late": 0, "dropped": 0, "tracked": 0, "from_registers": 0}
    with connect(args.socket, timeout=args.timeout) as fpga:
        split = register(fpga, "colour", CHAIN, PERIOD_MS, frame_size(args.size), params(lo, hi))
        pacer, recorder = Pacer(fpga, PERIOD_MS / 1e3), Recorder(args, 1000 / PERIOD_MS)
        try:
            for rgb in frames(args):
                pacer.wait()
                mask = split.process(rgb, counts)
                registers = split.results.get("moments")
                counts["from_registers"] += registers is not None
                centre = centroid(mask, registers)
                counts["tracked"] += centre is not None
                recorder.add(rgb, draw(rgb, centre))
                recorder.note("masks", mask)
                recorder.note("centroids", np.array(centre if centre is not None else (np.nan, np.nan)))
        finally:
            recorder.close()
    counts["cpu_stages"] = split.cpu_stages
    return counts


def main(argv: list[str] | None = None) -> int:
    return app_main(__doc__, run, argv, extra_args=_extra_args)


def _extra_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--hsv-lo", default=",".join(map(str, HSV_LO)), help="lower H,S,V bound (H 0..179)")
    parser.add_argument("--hsv-hi", default=",".join(map(str, HSV_HI)), help="upper H,S,V bound")


if __name__ == "__main__":
    sys.exit(main())

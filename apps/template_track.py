#!/usr/bin/env python3
"""Template tracker: RGB -> gray -> 7x7 template match at 30 fps on the FPGA; draws where the target went.

    python apps/template_track.py --video in.mp4 [--out track.mp4] [--frames N] [--socket PATH] [--at X,Y]

Nguyen & Hoe's template tracking: a 7x7 patch of the first frame (at ``--at``, its top-left corner;
by default centred on the demo video's orange ball, found with colour_track's HSV range, else the
frame's centre) is the template, and on every frame the template_match module leaves in its
registers where it matches best: the least sum of squared differences and its top-left corner,
equal to cv2.minMaxLoc(cv2.matchTemplate(gray, template, cv2.TM_SQDIFF)) (the first place in
row-major order on a tie). The daemon returns the registers with each frame, so no score image
comes back; where a stage runs on the daemon's CPU (``fallback="cpu"``) the same registers come
from the golden (vision_ref.template_best).
"""

from __future__ import annotations

import argparse
import itertools
import sys

import cv2
import numpy as np
from fpgashare.apps._common import Pacer, Recorder, app_main, frame_size, frames, register
from fpgashare.apps.colour_track import HSV_HI, HSV_LO
from fpgashare.catalogue.modules import TEMPLATE_SIDE, template_registers
from fpgashare.client import connect
from fpgashare.errors import FpgashareError

CHAIN = ["rgb2gray", "template_match"]
PERIOD_MS = 1000 / 30


def parse_at(text: str | None) -> tuple[int, int] | None:
    if text is None:
        return None
    try:
        x, y = (int(v) for v in text.split(","))
    except ValueError:
        raise FpgashareError(f"--at {text!r}: give X,Y (the template's top-left corner)") from None
    return x, y


def target(rgb: np.ndarray, at: tuple[int, int] | None) -> tuple[int, int]:
    """The template's top-left corner in the first frame: ``at``, else centred on the orange ball
    (the centroid of colour_track's HSV range), else on the frame's centre."""
    rows, cols = rgb.shape[:2]
    if at is not None:
        x, y = at
        if not (0 <= x <= cols - TEMPLATE_SIDE and 0 <= y <= rows - TEMPLATE_SIDE):
            raise FpgashareError(f"--at {x},{y}: a {TEMPLATE_SIDE}x{TEMPLATE_SIDE} template must lie inside the "
                                 f"{cols}x{rows} frame")
        return x, y
    mask = cv2.inRange(cv2.cvtColor(rgb, cv2.COLOR_RGB2HSV), HSV_LO, HSV_HI)
    m = cv2.moments(mask, binaryImage=True)
    cx, cy = (m["m10"] / m["m00"], m["m01"] / m["m00"]) if m["m00"] else (cols / 2, rows / 2)
    x, y = round(cx) - TEMPLATE_SIDE // 2, round(cy) - TEMPLATE_SIDE // 2
    return min(max(x, 0), cols - TEMPLATE_SIDE), min(max(y, 0), rows - TEMPLATE_SIDE)


def draw(rgb: np.ndarray, place: tuple[int, int] | None) -> np.ndarray:
    picture = rgb.copy()
    if place is not None:
        x, y = place
        cv2.rectangle(picture, (x - 1, y - 1), (x + TEMPLATE_SIDE, y + TEMPLATE_SIDE), (0, 255, 255), 1)
    return picture


def run(args: argparse.Namespace) -> dict:
    counts = {"frames": 0, "on_time": 0, "late": 0, "dropped": 0, "tracked": 0}
    video = frames(args)
    first = next(video, None)
    if first is None:
        raise FpgashareError("the video has no frames")
    x, y = target(first, parse_at(args.at))
    template = cv2.cvtColor(first, cv2.COLOR_RGB2GRAY)[y:y + TEMPLATE_SIDE, x:x + TEMPLATE_SIDE].copy()
    params = {"template_match": template_registers(template)}
    with connect(args.socket, timeout=args.timeout) as fpga:
        split = register(fpga, "template", CHAIN, PERIOD_MS, frame_size(args.size), params)
        pacer, recorder = Pacer(fpga, PERIOD_MS / 1e3), Recorder(args, 1000 / PERIOD_MS)
        recorder.note("template", template)
        try:
            for rgb in itertools.chain([first], video):
                pacer.wait()
                split.process(rgb, counts)
                best = split.results.get("template_match")      # absent when the frame was dropped
                place = (best["BEST_X"], best["BEST_Y"]) if best else None
                counts["tracked"] += place is not None
                recorder.add(rgb, draw(rgb, place))
                recorder.note("places", np.array([*place, best["BEST"]] if best else (-1, -1, -1)))
        finally:
            recorder.close()
    counts["cpu_stages"] = split.cpu_stages
    return counts


def _extra_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--at", help="X,Y: the template's top-left corner in the first frame (default: the ball)")


def main(argv: list[str] | None = None) -> int:
    return app_main(__doc__, run, argv, extra_args=_extra_args)


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Digit reader: finds bright digit-sized blobs in each frame and classifies them with the
``digits_cnn`` network on the FPGA's DNN tiles, best effort (in slot time the real-time apps
leave).

    python apps/digits.py --video in.mp4 [--out digits.mp4] [--frames N] [--socket PATH]

Each blob is cropped square, shrunk to the network's 8x8 input and scaled like its training data.
Where the daemon refuses the pipeline (no dnn_tile on the board) the int8 reference runs on the
CPU instead, and the app says so; either way the answer is the reference's, bit for bit.
"""

from __future__ import annotations

import argparse
import logging
import sys

import cv2
import numpy as np
from fpgashare.apps._common import Recorder, app_main, frames
from fpgashare.client import DaemonError, FrameDropped, connect
from fpgashare.dnn.models import digits_cnn
from fpgashare.dnn.reference import logits

MODEL = "digits_cnn"
MIN_SIDE, MAX_SIDE = 10, 80       # pixels: what counts as a digit-sized blob
log = logging.getLogger("apps")


def crops(gray: np.ndarray) -> list[tuple[tuple[int, int, int, int], np.ndarray]]:
    """(box, 8x8 uint8 crop) of each digit-sized bright blob, left to right."""
    _, mask = cv2.threshold(gray, 127, 255, cv2.THRESH_BINARY)
    contours, _ = cv2.findContours(mask, cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_SIMPLE)
    found = []
    for contour in contours:
        x, y, w, h = cv2.boundingRect(contour)
        if not (MIN_SIDE <= h <= MAX_SIDE and w <= h):
            continue
        side = int(h * 1.25)               # square, with a margin like the training digits'
        cx, cy = x + w // 2, y + h // 2
        x0, y0 = max(0, cx - side // 2), max(0, cy - side // 2)
        patch = mask[y0:y0 + side, x0:x0 + side]
        small = cv2.resize(patch, (8, 8), interpolation=cv2.INTER_AREA)
        # The training digits are 0..16 levels times 15: 0..240.
        found.append(((x0, y0, side, side), (small.astype(np.uint16) * 240 // 255).astype(np.uint8)))
    return sorted(found, key=lambda item: item[0][0])


def run(args: argparse.Namespace) -> dict:
    counts = {"frames": 0, "digits": 0, "dropped": 0, "cpu": 0}
    net = digits_cnn()
    with connect(args.socket) as fpga:
        try:
            pipe = fpga.dnn("digits", model=MODEL)
        except DaemonError as exc:
            log.warning("digits: the FPGA refused %s (%s); the int8 reference runs on the CPU", MODEL, exc)
            pipe = None
        recorder = Recorder(args, 30.0)
        try:
            for rgb in frames(args):
                counts["frames"] += 1
                gray = cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY)
                found = crops(gray)
                futures = [(box, img, pipe.submit(img) if pipe else None) for box, img in found]
                picture = rgb.copy()
                for box, img, fut in futures:
                    try:
                        out = fut.result(timeout=30) if fut else logits(net, img[None])[0]
                        counts["cpu"] += fut is None
                    except FrameDropped as dropped:
                        log.info("digit dropped (%s); the CPU reads it", dropped.reason)
                        out = logits(net, img[None])[0]
                        counts["dropped"] += 1
                    counts["digits"] += 1
                    x, y, w, h = box
                    cv2.rectangle(picture, (x, y), (x + w, y + h), (0, 255, 0), 1)
                    cv2.putText(picture, str(int(np.argmax(out))), (x, max(10, y - 2)),
                                cv2.FONT_HERSHEY_SIMPLEX, 0.4, (255, 255, 0), 1)
                    recorder.note("crops", img)
                    recorder.note("logits", out)
                recorder.add(rgb, picture)
        finally:
            recorder.close()
    return counts


def main(argv: list[str] | None = None) -> int:
    return app_main(__doc__, run, argv)


if __name__ == "__main__":
    sys.exit(main())

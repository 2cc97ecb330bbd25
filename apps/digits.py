#!/usr/bin/env python3
"""Digit reader: finds bright digit-sized blobs in each frame and classifies them with the
``printed_digits`` network on the FPGA's DNN tiles, best effort (in slot time the real-time apps
leave).

    python apps/digits.py --video in.mp4 [--out digits.mp4] [--frames N] [--socket PATH]
                          [--model printed_digits] [--readings FILE.json]

Each blob is cut out square and shrunk to the network's 8x8 input (fpgashare.dnn.printed_digits,
the same cutter the network was trained through); a blob the network calls no digit (the
demo's ball) is marked but not read. On a board without DNN tiles the daemon runs the int8
reference on its CPU (``fallback="cpu"``), and the app says so (``cpu``: crops read on the host);
either way the answer is the reference's, bit for bit. A dropped crop is not read.
``--readings`` writes every reading (frame, box, label) as JSON.

``--model`` may also be a quantized ONNX model (``X.onnx``, or the shipped ``digits_qdq``, see
docs/dnn-import.md): the client converts it and sends the network to the daemon, and each crop
goes in as the model's float input, crop / 255 in shape (1, H, W). Such a model has no "no digit"
class unless it was trained with one (class 10).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Iterator

import cv2
import numpy as np
from fpgashare.apps._common import Recorder, app_main, frames
from fpgashare.client import FrameDropped, connect
from fpgashare.dnn.printed_digits import NOT_A_DIGIT, digit_crops

MODEL = "printed_digits"
Submitted = tuple[tuple[int, int, int, int], np.ndarray, object]      #: (box, crop, future)
log = logging.getLogger("apps")


def crops(gray: np.ndarray) -> list[tuple[tuple[int, int, int, int], np.ndarray]]:
    """(box, 8x8 uint8 crop) of each digit-sized bright blob, left to right."""
    return digit_crops(gray, 8)


def _submitted(pipe, found: list, enter=lambda crop: crop) -> Iterator[Submitted]:
    """(box, crop, future) of every crop, in order; submitted a ring's worth at a time (a
    submission waits for a free ring slot, and a slot frees only when its result is taken)."""
    wave = pipe.ring.spec.slots
    for start in range(0, len(found), wave):
        batch = found[start:start + wave]
        yield from [(box, img, pipe.submit(enter(img))) for box, img in batch]


def model_input(pipe):
    """How a uint8 crop enters ``pipe``: as it is, or for an imported ONNX model as float crop / 255."""
    imported = getattr(pipe, "imported", None)
    if imported is None:
        return lambda crop: crop
    return lambda crop: (crop.astype(np.float32) / np.float32(255)).reshape(imported.input_dims)


def run(args: argparse.Namespace) -> dict:
    counts = {"frames": 0, "digits": 0, "not_digits": 0, "dropped": 0, "cpu": 0}
    readings = []
    with connect(args.socket, timeout=args.timeout) as fpga:
        pipe = fpga.dnn("digits", model=args.model, fallback="cpu")
        enter = model_input(pipe)
        on_host = pipe.placement and pipe.placement[0][1] == "cpu"
        if on_host:
            log.warning("digits: no DNN tiles on this board; the daemon runs %s on its CPU", args.model)
        recorder = Recorder(args, 30.0)
        try:
            for rgb in frames(args):
                gray = cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY)
                picture = rgb.copy()
                for box, img, fut in _submitted(pipe, crops(gray), enter):
                    try:
                        out = fut.result(timeout=args.timeout)
                    except FrameDropped as dropped:
                        log.info("digit dropped (%s)", dropped.reason)
                        counts["dropped"] += 1
                        continue
                    counts["cpu"] += bool(on_host)
                    label = int(np.argmax(out))
                    counts["not_digits" if label == NOT_A_DIGIT else "digits"] += 1
                    readings.append({"frame": counts["frames"], "box": list(box), "label": label})
                    recorder.note("crops", img)
                    recorder.note("logits", out)
                    x, y, w, h = box
                    if label == NOT_A_DIGIT:
                        cv2.rectangle(picture, (x, y), (x + w, y + h), (128, 128, 128), 1)
                        continue
                    cv2.rectangle(picture, (x, y), (x + w, y + h), (0, 255, 0), 2)
                    cv2.putText(picture, str(label), (x, max(12, y - 4)), cv2.FONT_HERSHEY_SIMPLEX,
                                max(0.4, h / 60), (255, 255, 0), 2)
                recorder.add(rgb, picture)
                counts["frames"] += 1
        finally:
            recorder.close()
    if args.readings:
        with open(args.readings, "w") as f:
            json.dump(readings, f)
    return counts


def _extra_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", default=MODEL, help="the reader's network: a model the daemon ships, or a "
                                                       "quantized ONNX model (X.onnx, digits_qdq)")
    parser.add_argument("--readings", help="write every reading (frame, box, label) here as JSON")


def main(argv: list[str] | None = None) -> int:
    return app_main(__doc__, run, argv, extra_args=_extra_args)


if __name__ == "__main__":
    sys.exit(main())

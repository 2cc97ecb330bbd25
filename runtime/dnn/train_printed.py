"""Train and quantize ``printed_digits``: the digit reader for printed digits seen by a camera.

    python -m fpgashare.dnn.train_printed [--out runtime/dnn/models/printed_digits.npz]

The same network and int8 rules as ``digits_cnn`` (train_digits.py: two 3x3 convolutions with
2x2 max-pools, two fully connected layers, post-training per-channel int8), with an eleventh
output, ``NOT_A_DIGIT``. It learns from digits rendered with OpenCV's Hershey fonts, damaged like
camera frames and cut out exactly as the digits app cuts them (printed_digits.py), from filled
shapes that are no digits, and from scikit-learn's handwritten digits (its training split).
Every set is seeded, so a run reproduces the committed parameters exactly on the same numpy,
OpenCV and BLAS. Needs the ``dnn`` and ``sim`` extras (scikit-learn, OpenCV).
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

import numpy as np
from fpgashare.dnn.network import Network, save_network
from fpgashare.dnn.printed_digits import DEMO_FONTS, NOT_A_DIGIT, rendered_set
from fpgashare.dnn.reference import logits, quantize_input
from fpgashare.dnn.train_digits import ARCH, INPUT_SCALE, digits_split, quantize, train

log = logging.getLogger(__name__)

NAME = "printed_digits"
DEFAULT_OUT = Path(__file__).resolve().parent / "models" / f"{NAME}.npz"
PRINTED_ARCH = (*ARCH[:-1], ("fc", NOT_A_DIGIT + 1))
TRAIN_SEED, HELD_OUT_SEED, DEMO_FONT_SEED = 1, 2, 3
TRAIN_DIGITS, TRAIN_SHAPES = 4000, 600
HELD_OUT_DIGITS, HELD_OUT_SHAPES = 1000, 200
EPOCHS = 14


def training_set() -> tuple[np.ndarray, np.ndarray]:
    printed, printed_labels = rendered_set(TRAIN_SEED, TRAIN_DIGITS, TRAIN_SHAPES)
    hand, hand_labels, _, _ = digits_split()
    return np.concatenate([printed, hand]), np.concatenate([printed_labels, hand_labels])


def held_out_set() -> tuple[np.ndarray, np.ndarray]:
    """The held-out rendered set (all training fonts; digits and non-digits): images, labels."""
    return rendered_set(HELD_OUT_SEED, HELD_OUT_DIGITS, HELD_OUT_SHAPES)


def accuracy(net: Network, images: np.ndarray, labels: np.ndarray) -> float:
    """Fraction of ``images`` the int8 reference (= the tiles, bit for bit) labels right."""
    return float((logits(net, images).argmax(1) == labels).mean())


def build() -> tuple[Network, dict[str, float]]:
    """Train and quantize; return the network and its int8 accuracies on held-out sets: ``rendered``
    (all training fonts, digits and shapes), ``demo_fonts`` (the demo's fonts, digits only) and
    ``handwritten`` (scikit-learn's held-out split), plus the float model's ``rendered_float``."""
    images, labels = training_set()
    model = train(images, labels, epochs=EPOCHS, arch=PRINTED_ARCH)
    net = quantize(model, images, NAME)
    held_x, held_y = held_out_set()
    demo_x, demo_y = rendered_set(DEMO_FONT_SEED, HELD_OUT_DIGITS, fonts=DEMO_FONTS)
    _, _, hand_x, hand_y = digits_split()
    float_pred = model.forward(quantize_input(held_x).astype(np.float64) * INPUT_SCALE).argmax(1)
    return net, {"rendered": accuracy(net, held_x, held_y), "demo_fonts": accuracy(net, demo_x, demo_y),
                 "handwritten": accuracy(net, hand_x, hand_y),
                 "rendered_float": float((float_pred == held_y).mean())}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    net, scores = build()
    save_network(net, args.out)
    log.info("%s: int8 accuracy %s; wrote %s", NAME, ", ".join(f"{k} {v:.4f}" for k, v in scores.items()), args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""printed_digits, the demo's digit reader: the training script regenerates the committed int8
parameters exactly; the int8 model reads >= 98% of a held-out rendered set and >= 95% of the digits
the demo prints (videos of held-out seeds, read back the way the digits app reads them), never
calls the demo's ball or box a digit, and runs bit-exact on the dnn_tiles in RTL."""

from __future__ import annotations

import cv2
import numpy as np
import pytest
from fpgashare.cli.demo_video import score_readings, write_video
from fpgashare.dnn.models import MODELS_DIR, printed_digits
from fpgashare.dnn.printed_digits import MIN_SIDE, NOT_A_DIGIT, digit_crops, match, rendered_set
from fpgashare.dnn.reference import logits
from hypothesis import given, settings
from hypothesis import strategies as st


def test_training_reproduces_committed_weights_and_accuracy():
    from fpgashare.dnn.train_printed import build

    net, scores = build()
    assert scores["rendered"] >= 0.98 and scores["demo_fonts"] >= 0.98
    assert scores["handwritten"] >= 0.95                      # scikit-learn's held-out split, still read
    assert abs(scores["rendered"] - scores["rendered_float"]) <= 0.01
    with np.load(MODELS_DIR / "printed_digits.npz") as committed:
        for i, layer in enumerate(net.layers):
            for name in ("weights", "bias", "mult", "shift") if layer.has_params else ():
                stored = committed[f"l{i}_{name}"]
                assert stored.dtype == getattr(layer, name).dtype
                assert np.array_equal(stored, getattr(layer, name)), f"layer {i} {name} differs"


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(24, 160), st.integers(24, 160), st.integers(0, 6))
def test_crops_are_squares_of_the_input_size_whatever_the_frame(seed, rows, cols, blobs):
    """Blobs anywhere (cut by the frame's edge too): every crop is side x side uint8 in 0..240, its
    box a square 1.25 times a digit-sized blob's height, crops in left-to-right order."""
    rng = np.random.default_rng(seed)
    gray = rng.integers(0, 120, (rows, cols), dtype=np.uint8)
    for _ in range(blobs):
        x, y = int(rng.integers(-10, cols)), int(rng.integers(-10, rows))
        cv2.rectangle(gray, (x, y), (x + int(rng.integers(1, 40)), y + int(rng.integers(1, 60))), 255, -1)
    found = digit_crops(gray, 8)
    for (_, _, w, h), crop in found:
        assert crop.shape == (8, 8) and crop.dtype == np.uint8 and crop.max() <= 240
        assert w == h >= int(MIN_SIDE * 1.25)
    assert [box[0] for box, _ in found] == sorted(box[0] for box, _ in found)


def read_video(path, size):
    """The frames as the apps get them (apps/_common.py frames): decoded, resized, RGB."""
    capture = cv2.VideoCapture(str(path))
    out = []
    while True:
        ok, bgr = capture.read()
        if not ok:
            break
        out.append(cv2.cvtColor(cv2.resize(bgr, (size[1], size[0]), interpolation=cv2.INTER_AREA),
                                cv2.COLOR_BGR2RGB))
    capture.release()
    return out


@pytest.mark.parametrize(("size", "seed"), [((480, 640), 11), ((480, 640), 12), ((240, 320), 13)])
def test_reads_the_digits_the_demo_prints(tmp_path, size, seed):
    net = printed_digits()
    truth = write_video(tmp_path / "v.avi", 12, size, seed)
    readings = []
    for k, rgb in enumerate(read_video(tmp_path / "v.avi", size)):
        found = digit_crops(cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY))
        labels = logits(net, np.stack([img for _, img in found])).argmax(1) if found else []
        readings += [{"frame": k, "box": list(box), "label": int(label)}
                     for (box, _), label in zip(found, labels, strict=True)]
        # Every blob that is no printed digit (the ball; the box is too dark to be a blob) is called so.
        printed_boxes = match(truth[k], [(box, box) for box, _ in found])
        for (box, _), label in zip(found, labels, strict=True):
            if box not in printed_boxes:
                assert label == NOT_A_DIGIT, f"frame {k}: a blob at {box} read as {label}"
    score = score_readings(truth, readings)
    assert score["printed"] == 12 * 6
    assert score["accuracy"] >= 0.95, score


@pytest.mark.rtl
def test_printed_digits_bit_exact_on_two_tiles(zcu104):
    from fpgashare.dnn.partition import partition
    from fpgashare.dnn.tile_chain import TileChain
    from fpgashare.hdl_sim.board import SimBoard

    net = printed_digits()
    images, _ = rendered_set(7, 20, 4)
    run = TileChain(SimBoard(zcu104), net, partition(net, 2)).run(images)
    assert np.array_equal(run.outputs.reshape(len(images), -1), logits(net, images))

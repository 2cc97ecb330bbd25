"""digits_cnn: the training script regenerates the committed int8 parameters exactly, and the
int8 model reaches >= 95% on the held-out split, within 1 point of the float model."""

from __future__ import annotations

import numpy as np
from fpgashare.dnn.models import MODELS_DIR
from fpgashare.dnn.train_digits import build


def test_training_reproduces_committed_weights_and_accuracy():
    net, float_acc, int8_acc = build()
    assert int8_acc >= 0.95
    assert abs(int8_acc - float_acc) <= 0.01
    with np.load(MODELS_DIR / "digits_cnn.npz") as committed:
        for i, layer in enumerate(net.layers):
            for name in ("weights", "bias", "mult", "shift") if layer.has_params else ():
                stored = committed[f"l{i}_{name}"]
                assert stored.dtype == getattr(layer, name).dtype
                assert np.array_equal(stored, getattr(layer, name)), f"layer {i} {name} differs"

"""The networks fpgashare ships: ``digits_cnn`` and ``printed_digits`` (trained, committed) and
``edge_cnn`` (random)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from fpgashare.dnn.network import Layer, Network, load_network
from fpgashare.dnn.reference import multiplier_shift
from fpgashare.errors import NetworkError

MODELS_DIR = Path(__file__).resolve().parent / "models"

#: edge_cnn: shaped like MobileNet-v1-0.25 at 128x128 on a gray frame, with ordinary 3x3
#: convolutions where MobileNet has depthwise-separable pairs: (out_channels, stride) per conv.
EDGE_CONVS = ((8, 2), (16, 1), (32, 2), (32, 1), (64, 2), (64, 1), (128, 2), (128, 1))


def digits_cnn() -> Network:
    return load_network(MODELS_DIR / "digits_cnn.npz")


def printed_digits() -> Network:
    """The demo's digit reader: printed digits as a camera sees them, and class 10 for "no digit"
    (train_printed.py)."""
    return load_network(MODELS_DIR / "printed_digits.npz")


def random_layer(rng: np.random.Generator, kind: str, oc: int, in_shape: tuple[int, int, int],
                 kernel: int = 3, stride: int = 1, pad: int = 1, relu: bool = True, gain: float = 40.0) -> Layer:
    """A conv/fc layer with random int8 weights and a rescale that keeps outputs around ``gain``."""
    kh, kw = (in_shape[0], in_shape[1]) if kind == "fc" else (kernel, kernel)
    fan_in = kh * kw * in_shape[2]
    weights = rng.integers(-127, 128, (oc, kh, kw, in_shape[2]), dtype=np.int8)
    bias = rng.integers(-2000, 2000, oc, dtype=np.int32)
    # Uniform int8 weights have std ~73; inputs after ReLU average ~gain / 2.
    mult, shift = multiplier_shift(gain / (73.0 * (gain / 2 + 1) * np.sqrt(fan_in)))
    return Layer(kind, oc, kernel if kind == "conv" else 1, stride if kind == "conv" else 1,
                 pad if kind == "conv" else 0, relu, weights, bias,
                 np.full(oc, mult, np.int32), np.full(oc, shift, np.uint8))


def edge_cnn(seed: int = 0) -> Network:
    rng = np.random.default_rng(seed)
    layers: list[Layer] = []
    shape = (128, 128, 1)
    for oc, stride in EDGE_CONVS:
        layers.append(random_layer(rng, "conv", oc, shape, stride=stride))
        shape = layers[-1].output_shape(shape)
    layers.append(Layer("maxpool"))
    shape = layers[-1].output_shape(shape)
    layers.append(random_layer(rng, "fc", 10, shape, relu=False))
    return Network("edge_cnn", (128, 128, 1), tuple(layers)).validate()


MODELS = {"digits_cnn": digits_cnn, "printed_digits": printed_digits, "edge_cnn": edge_cnn}


def get_model(name: str) -> Network:
    """A shipped model by name, a network a client registered with the daemon (network_wire.py),
    or any network file (``.npz``, see runtime/dnn/network.py)."""
    if name in MODELS:
        return MODELS[name]()
    from fpgashare.dnn.network_wire import REGISTERED

    if (registered := REGISTERED.get(name)) is not None:
        return registered
    if name.endswith(".npz"):
        return load_network(name)
    raise NetworkError(f"unknown model {name!r}; known: {', '.join(MODELS)}, or a network file (.npz)")

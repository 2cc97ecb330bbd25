"""Train and quantize ``digits_cnn`` on scikit-learn's bundled handwritten digits (8x8, 1797 images).

    python -m fpgashare.dnn.train_digits [--out runtime/dnn/models/digits_cnn.npz]

Everything is seeded and single-path float64 numpy, so a run reproduces the committed parameters
exactly on the same numpy/BLAS. Quantization is post-training: per-output-channel symmetric int8
weights, per-tensor activation scales from the training set's maxima, integer multipliers and
shifts chosen by :func:`multiplier_shift`.
"""

from __future__ import annotations

import argparse
import logging
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from fpgashare.dnn.network import Layer, Network, save_network
from fpgashare.dnn.reference import logits, multiplier_shift, quantize_input
from fpgashare.errors import NetworkError

log = logging.getLogger(__name__)

SEED = 20261203
PIXEL_SCALE = 15          # digits are 0..16; images are value * 15 (0..240) as uint8
INPUT_SCALE = 2 / 255     # float input = (pixel >> 1) * INPUT_SCALE
DEFAULT_OUT = Path(__file__).resolve().parent / "models" / "digits_cnn.npz"
#: (kind, out_channels) of the float model; convs are 3x3, pad 1, stride 1, ReLU; the last fc has none.
ARCH = (("conv", 16), ("maxpool", 0), ("conv", 32), ("maxpool", 0), ("fc", 32), ("fc", 10))


def digits_split() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(train images, train labels, held-out images, held-out labels): uint8 [N, 8, 8], 80/20 split."""
    try:
        from sklearn.datasets import load_digits
    except ImportError:
        raise NetworkError("the digits data set comes with scikit-learn: install 'fpgashare[dnn]' "
                           "(or pass your own images with --images)") from None

    data = load_digits()
    images = (data.images * PIXEL_SCALE).astype(np.uint8)
    order = np.random.default_rng(SEED).permutation(len(images))
    cut = len(images) * 4 // 5
    tr, te = order[:cut], order[cut:]
    return images[tr], data.target[tr], images[te], data.target[te]


# ---- float model (forward and backward by hand: the network is tiny)
def _windows(x: np.ndarray, k: int) -> np.ndarray:
    return np.lib.stride_tricks.sliding_window_view(x, (k, k), axis=(1, 2))  # [N, OH, OW, C, k, k]


def conv_fwd(x, w, b):
    xp = np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))
    return np.einsum("nhwcij,oijc->nhwo", _windows(xp, 3), w, optimize=True) + b


def conv_bwd(x, w, dy):
    xp = np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))
    dw = np.einsum("nhwcij,nhwo->oijc", _windows(xp, 3), dy, optimize=True)
    dyp = np.pad(dy, ((0, 0), (1, 1), (1, 1), (0, 0)))
    dx = np.einsum("nhwoij,oijc->nhwc", _windows(dyp, 3), w[:, ::-1, ::-1, :], optimize=True)
    return dx, dw, dy.sum(axis=(0, 1, 2))


def pool_fwd(x):
    n, h, w, c = x.shape
    r = x.reshape(n, h // 2, 2, w // 2, 2, c)
    y = r.max(axis=(2, 4))
    mask = r == y[:, :, None, :, None, :]
    return y, mask / mask.sum(axis=(2, 4), keepdims=True)


def pool_bwd(mask, dy):
    n, h2, _, w2, _, c = mask.shape
    return (mask * dy[:, :, None, :, None, :]).reshape(n, h2 * 2, w2 * 2, c)


@dataclass
class FloatModel:
    params: list[np.ndarray]   # per parametrised layer: weight [OC, KH, KW, C], bias [OC]
    arch: tuple[tuple[str, int], ...] = ARCH

    def forward(self, x: np.ndarray, keep: bool = False):
        acts, cache, p = [x], [], 0
        arch = self.arch
        for i, (kind, _) in enumerate(arch):
            if kind == "maxpool":
                x, mask = pool_fwd(x)
                cache.append(mask)
            else:
                w, b = self.params[p], self.params[p + 1]
                p += 2
                if kind == "conv":
                    x = conv_fwd(x, w, b)
                else:
                    x = np.einsum("nhwc,ohwc->no", x, w)[:, None, None, :] + b
                if i != len(arch) - 1:
                    x = np.maximum(x, 0)
                cache.append(None)
            acts.append(x)
        return (acts, cache) if keep else x.reshape(len(x), -1)

    def grads(self, x: np.ndarray, y: np.ndarray) -> tuple[float, list[np.ndarray]]:
        acts, cache = self.forward(x, keep=True)
        z = acts[-1].reshape(len(x), -1)
        z = z - z.max(axis=1, keepdims=True)
        prob = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
        loss = float(-np.log(prob[np.arange(len(y)), y] + 1e-12).mean())
        d = prob
        d[np.arange(len(y)), y] -= 1
        d = (d / len(y))[:, None, None, :]
        grads: list[np.ndarray] = [np.empty(0)] * len(self.params)
        p = len(self.params)
        for i in range(len(self.arch) - 1, -1, -1):
            kind = self.arch[i][0]
            if kind == "maxpool":
                d = pool_bwd(cache[i], d)
                continue
            if i != len(self.arch) - 1:
                d = d * (acts[i + 1] > 0)
            p -= 2
            w, xin = self.params[p], acts[i]
            if kind == "conv":
                d, gw, gb = conv_bwd(xin, w, d)
            else:
                gw = np.einsum("nhwc,no->ohwc", xin, d[:, 0, 0, :])
                gb = d.sum(axis=(0, 1, 2))
                d = np.einsum("no,ohwc->nhwc", d[:, 0, 0, :], w)
            grads[p], grads[p + 1] = gw, gb
        return loss, grads


def init_model(rng: np.random.Generator, arch: tuple[tuple[str, int], ...] = ARCH) -> FloatModel:
    params, shape = [], (8, 8, 1)
    for kind, oc in arch:
        if kind == "maxpool":
            shape = (shape[0] // 2, shape[1] // 2, shape[2])
            continue
        kh, kw = (3, 3) if kind == "conv" else shape[:2]
        fan_in = kh * kw * shape[2]
        params += [rng.normal(0, math.sqrt(2 / fan_in), (oc, kh, kw, shape[2])), np.zeros(oc)]
        shape = (shape[0], shape[1], oc) if kind == "conv" else (1, 1, oc)
    return FloatModel(params, arch)


def train(images: np.ndarray, labels: np.ndarray, epochs: int = 40, batch: int = 32,
          arch: tuple[tuple[str, int], ...] = ARCH, seed: int = SEED) -> FloatModel:
    rng = np.random.default_rng(seed)
    model = init_model(rng, arch)
    x = quantize_input(images).astype(np.float64) * INPUT_SCALE
    m = [np.zeros_like(p) for p in model.params]
    v = [np.zeros_like(p) for p in model.params]
    step, lr = 0, 3e-3
    for epoch in range(epochs):
        order = rng.permutation(len(x))
        total = 0.0
        for s in range(0, len(x), batch):
            idx = order[s: s + batch]
            loss, grads = model.grads(x[idx], labels[idx])
            total += loss * len(idx)
            step += 1
            for k, g in enumerate(grads):  # Adam
                m[k] = 0.9 * m[k] + 0.1 * g
                v[k] = 0.999 * v[k] + 0.001 * g * g
                mh, vh = m[k] / (1 - 0.9**step), v[k] / (1 - 0.999**step)
                model.params[k] = model.params[k] - lr * mh / (np.sqrt(vh) + 1e-8)
        log.info("epoch %d: loss %.4f", epoch, total / len(x))
    return model


# ---- quantization
def quantize(model: FloatModel, calib: np.ndarray, name: str = "digits_cnn") -> Network:
    acts, _ = model.forward(quantize_input(calib).astype(np.float64) * INPUT_SCALE, keep=True)
    layers, s_in, p = [], INPUT_SCALE, 0
    arch = model.arch
    for i, (kind, oc) in enumerate(arch):
        if kind == "maxpool":
            layers.append(Layer("maxpool"))
            continue
        w, b = model.params[p], model.params[p + 1]
        p += 2
        s_w = np.maximum(np.abs(w).reshape(oc, -1).max(axis=1), 1e-12) / 127
        s_out = max(float(np.abs(acts[i + 1]).max()), 1e-6) / 127
        wq = np.clip(np.round(w / s_w[:, None, None, None]), -127, 127).astype(np.int8)
        bq = np.round(b / (s_in * s_w)).astype(np.int32)
        ms = [multiplier_shift(s_in * s_w[o] / s_out) for o in range(oc)]
        layers.append(Layer(kind, oc, 3 if kind == "conv" else 1, 1, 1 if kind == "conv" else 0,
                            relu=i != len(arch) - 1, weights=wq, bias=bq,
                            mult=np.array([m for m, _ in ms], np.int32), shift=np.array([s for _, s in ms], np.uint8)))
        s_in = s_out
    return Network(name, (8, 8, 1), tuple(layers)).validate()


def build() -> tuple[Network, float, float]:
    """Train and quantize; return (network, float accuracy, int8 accuracy) on the held-out split."""
    tr_x, tr_y, te_x, te_y = digits_split()
    model = train(tr_x, tr_y)
    float_acc = float((model.forward(quantize_input(te_x).astype(np.float64) * INPUT_SCALE).argmax(1) == te_y).mean())
    net = quantize(model, tr_x)
    int8_acc = float((logits(net, te_x).argmax(1) == te_y).mean())
    return net, float_acc, int8_acc


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    net, float_acc, int8_acc = build()
    save_network(net, args.out)
    log.info("digits_cnn: float %.4f, int8 %.4f on the held-out split; wrote %s", float_acc, int8_acc, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The shipped example of an imported model: a small conv net on scikit-learn's digits, trained in
numpy, written as float ONNX with the ``onnx`` helper API and quantized by onnxruntime's own
``quantize_static`` (QDQ, int8, per-tensor, symmetric activations).

    python -m fpgashare.dnn.onnx_example [--out runtime/dnn/models/digits_qdq.onnx]

The model's input is ``x`` float32 [N, 1, 8, 8] = uint8 image / 255 (images are the data set's
0..16 values times 15); its output is ``logits`` float32 [N, 10], dequantized from the int8
tensor ``fpgashare dnn eval`` reports. The held-out set is the last 30% of a seeded permutation
(540 images), disjoint from training and calibration.

One knob is set by hand, through ``TensorQuantOverrides``: a convolution's output and the ReLU
after it get the same range, so that onnxruntime's two requantizations (after the convolution,
after the ReLU) are one, as on the tile; with different scales the tile cannot represent the
pair (the importer refuses it) and the double rounding is not what a fused kernel does anyway.
"""

from __future__ import annotations

import argparse
import logging
import math
from pathlib import Path

import numpy as np
from fpgashare.dnn.onnx_deps import need_onnx
from fpgashare.dnn.train_digits import PIXEL_SCALE, FloatModel, init_model
from fpgashare.errors import NetworkError

log = logging.getLogger(__name__)

SEED = 20261205
HELD_OUT_FRACTION = 0.3
EPOCHS = 16
#: (kind, out_channels): 3x3 convs (pad 1) with ReLU, 2x2 max-pools, fully connected layers.
ARCH = (("conv", 8), ("maxpool", 0), ("conv", 16), ("maxpool", 0), ("fc", 32), ("fc", 10))
DEFAULT_OUT = Path(__file__).resolve().parent / "models" / "digits_qdq.onnx"
OPSET = 17


def split() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(train images, train labels, held-out images, held-out labels): uint8 [N, 8, 8], 70/30."""
    try:
        from sklearn.datasets import load_digits
    except ImportError:
        raise NetworkError("the digits data set comes with scikit-learn: install 'fpgashare[dnn]'") from None
    data = load_digits()
    images = (data.images * PIXEL_SCALE).astype(np.uint8)
    order = np.random.default_rng(SEED).permutation(len(images))
    cut = len(images) - math.ceil(len(images) * HELD_OUT_FRACTION)
    return images[order[:cut]], data.target[order[:cut]], images[order[cut:]], data.target[order[cut:]]


def to_input(images: np.ndarray) -> np.ndarray:
    """uint8 images [N, 8, 8] -> the model's float32 input [N, 1, 8, 8]."""
    return (images.astype(np.float32) / np.float32(255))[:, None]


def train(images: np.ndarray, labels: np.ndarray, epochs: int = EPOCHS, batch: int = 32) -> FloatModel:
    """Adam on softmax cross-entropy, seeded, float64 numpy (train_digits.FloatModel's gradients)."""
    rng = np.random.default_rng(SEED)
    model = init_model(rng, ARCH)
    x = to_input(images).astype(np.float64).transpose(0, 2, 3, 1)     # the numpy model is HWC
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
            for k, g in enumerate(grads):
                m[k] = 0.9 * m[k] + 0.1 * g
                v[k] = 0.999 * v[k] + 0.001 * g * g
                mh, vh = m[k] / (1 - 0.9**step), v[k] / (1 - 0.999**step)
                model.params[k] = model.params[k] - lr * mh / (np.sqrt(vh) + 1e-8)
        log.info("epoch %d: loss %.4f", epoch, total / len(x))
    return model


def float_onnx(model: FloatModel):
    """The float model as an ONNX graph (NCHW): Conv/Relu/MaxPool, then Flatten and Gemm."""
    onnx = need_onnx()
    from onnx import TensorProto, helper, numpy_helper

    nodes, inits = [], []
    x, p, shape = "x", 0, (8, 8, 1)
    for i, (kind, oc) in enumerate(ARCH):
        last = i == len(ARCH) - 1
        if kind == "maxpool":
            nodes.append(helper.make_node("MaxPool", [x], [f"pool{i}"], name=f"pool{i}", kernel_shape=[2, 2],
                                          strides=[2, 2]))
            x, shape = f"pool{i}", (shape[0] // 2, shape[1] // 2, shape[2])
            continue
        w, b = model.params[p], model.params[p + 1]
        p += 2
        if kind == "conv":
            inits += [numpy_helper.from_array(w.transpose(0, 3, 1, 2).astype(np.float32), f"w{i}"),
                      numpy_helper.from_array(b.astype(np.float32), f"b{i}")]
            nodes.append(helper.make_node("Conv", [x, f"w{i}", f"b{i}"], [f"conv{i}"], name=f"conv{i}",
                                          kernel_shape=[3, 3], pads=[1, 1, 1, 1]))
            x, shape = f"conv{i}", (shape[0], shape[1], oc)
        else:
            if len(shape) == 3:
                nodes.append(helper.make_node("Flatten", [x], [f"flat{i}"], name=f"flat{i}", axis=1))
                x = f"flat{i}"
            # HWC weights [OC, H, W, C] -> the CHW order ONNX's Flatten gives.
            wf = w.transpose(0, 3, 1, 2).reshape(oc, -1) if w.ndim == 4 else w
            inits += [numpy_helper.from_array(wf.astype(np.float32), f"w{i}"),
                      numpy_helper.from_array(b.astype(np.float32), f"b{i}")]
            out = "logits" if last else f"fc{i}"
            nodes.append(helper.make_node("Gemm", [x, f"w{i}", f"b{i}"], [out], name=f"fc{i}", transB=1))
            x, shape = out, (oc,)
        if not last:
            nodes.append(helper.make_node("Relu", [x], [f"relu{i}"], name=f"relu{i}"))
            x = f"relu{i}"
    graph = helper.make_graph(nodes, "digits", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 1, 8, 8])],
                              [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 10])], inits)
    fmodel = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="fpgashare")
    fmodel.ir_version = 8
    onnx.checker.check_model(fmodel)
    return fmodel


def relu_ranges(model: FloatModel, calib: np.ndarray) -> dict[str, float]:
    """Largest ReLU output of each conv/fc layer on the calibration images (float64 numpy)."""
    acts, _ = model.forward(to_input(calib).astype(np.float64).transpose(0, 2, 3, 1), keep=True)
    return {f"{i}": float(acts[i + 1].max()) for i, (kind, _) in enumerate(ARCH[:-1]) if kind != "maxpool"}


def quantize(fmodel, model: FloatModel, calib: np.ndarray, path: Path) -> None:
    """onnxruntime's quantize_static on ``fmodel``: QDQ, int8 weights and activations, per tensor."""
    need_onnx()
    import onnx
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

    class Reader(CalibrationDataReader):
        def __init__(self) -> None:
            self.batches = iter([{"x": to_input(calib[i:i + 64])} for i in range(0, len(calib), 64)])

        def get_next(self):
            return next(self.batches, None)

    overrides = {}
    for i, top in relu_ranges(model, calib).items():
        pre = f"conv{i}" if ARCH[int(i)][0] == "conv" else f"fc{i}"
        for tensor in (pre, f"relu{i}"):     # one range for both: one requantization on the tile
            overrides[tensor] = [{"rmin": np.float32(0.0), "rmax": np.float32(top)}]
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        fpath = Path(tmp) / "float.onnx"
        onnx.save(fmodel, fpath)
        quantize_static(str(fpath), str(path), Reader(), quant_format=QuantFormat.QDQ, per_channel=False,
                        activation_type=QuantType.QInt8, weight_type=QuantType.QInt8,
                        extra_options={"ActivationSymmetric": True, "WeightSymmetric": True,
                                       "TensorQuantOverrides": overrides})


def build(out: Path = DEFAULT_OUT) -> dict:
    """Train, export, quantize to ``out``; float and onnxruntime int8 accuracy on the held-out set."""
    tr_x, tr_y, te_x, te_y = split()
    model = train(tr_x, tr_y)
    float_acc = float((model.forward(to_input(te_x).astype(np.float64).transpose(0, 2, 3, 1)).argmax(1) == te_y).mean())
    quantize(float_onnx(model), model, tr_x, out)
    import onnxruntime as ort

    sess = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"])
    int8_acc = float((sess.run(None, {"x": to_input(te_x)})[0].argmax(1) == te_y).mean())
    return {"float_accuracy": float_acc, "int8_accuracy": int8_acc, "held_out": len(te_y), "path": str(out)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    r = build(args.out)
    log.info("digits_qdq: float %.4f, int8 (onnxruntime) %.4f on %d held-out images; wrote %s",
             r["float_accuracy"], r["int8_accuracy"], r["held_out"], r["path"])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

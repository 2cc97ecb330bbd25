"""Network files, the int8 reference arithmetic (against a naive loop implementation and hand
values), and input checking."""

from __future__ import annotations

import json

import numpy as np
import pytest
from fpgashare.dnn.evaluate import read_images
from fpgashare.dnn.models import digits_cnn, edge_cnn, random_layer
from fpgashare.dnn.network import Layer, Network, load_network, save_network
from fpgashare.dnn.reference import multiplier_shift, quantize_input, requantize, run_layer
from fpgashare.errors import FrameError, NetworkError


def naive_conv(x: np.ndarray, layer: Layer) -> np.ndarray:
    """One image, HWC, plain loops: the rule of reference.py written out the slow way."""
    h, w, _ = x.shape
    kh, kw = layer.kernel_hw(x.shape)
    stride, pad = (1, 0) if layer.kind == "fc" else (layer.stride, layer.pad)
    oh, ow, oc = layer.output_shape(x.shape)
    out = np.zeros((oh, ow, oc), np.int8)
    for oy in range(oh):
        for ox in range(ow):
            for o in range(oc):
                acc = 0
                for ky in range(kh):
                    for kx in range(kw):
                        iy, ix = oy * stride - pad + ky, ox * stride - pad + kx
                        if 0 <= iy < h and 0 <= ix < w:
                            acc += int(np.dot(x[iy, ix].astype(np.int64), layer.weights[o, ky, kx].astype(np.int64)))
                acc = (acc + int(layer.bias[o]) + 2**31) % 2**32 - 2**31
                s = int(layer.shift[o])
                y = (acc * int(layer.mult[o]) + (1 << (s - 1))) >> s
                out[oy, ox, o] = min(127, max(0 if layer.relu else -128, y))
    return out


@pytest.mark.parametrize("k,stride,pad,relu", [(3, 1, 1, True), (3, 2, 0, False), (1, 1, 0, False), (5, 2, 2, True)])
def test_conv_reference_matches_naive_loops(k, stride, pad, relu):
    rng = np.random.default_rng(k * 10 + stride)
    shape = (7, 6, 5)
    layer = random_layer(rng, "conv", 4, shape, kernel=k, stride=stride, pad=pad, relu=relu)
    x = rng.integers(-128, 128, shape, dtype=np.int8)
    assert np.array_equal(run_layer(x[None], layer)[0], naive_conv(x, layer))


def test_fc_and_maxpool_reference():
    rng = np.random.default_rng(5)
    x = rng.integers(-128, 128, (3, 5, 4), dtype=np.int8)
    fc = random_layer(rng, "fc", 6, x.shape, relu=False)
    assert np.array_equal(run_layer(x[None], fc)[0], naive_conv(x, fc))
    pooled = run_layer(x[None], Layer("maxpool"))[0]
    assert pooled.shape == (1, 2, 4)
    assert pooled[0, 1, 2] == x[0:2, 2:4, 2].max()


def test_requantize_rounds_half_up_and_saturates():
    m, s = np.array([2**30], np.int32), np.array([31], np.uint8)        # x * 0.5
    acc = np.array([[5], [-5], [3], [-3], [1000], [-1000]], np.int64)
    assert requantize(acc, m, s, relu=False).ravel().tolist() == [3, -2, 2, -1, 127, -128]
    assert requantize(acc, m, s, relu=True).ravel().tolist() == [3, 0, 2, 0, 127, 0]


def test_multiplier_shift_is_accurate():
    for real in (0.5, 1e-6, 0.0123, 0.999999, 3.7):
        mult, shift = multiplier_shift(real)
        assert 2**30 <= mult < 2**31 and 1 <= shift <= 62
        assert abs(mult / 2**shift - real) <= real * 2**-30


def test_input_quantization():
    assert quantize_input(np.array([[[0, 1, 255]]], np.uint8)).tolist() == [[[[0], [0], [127]]]]
    with pytest.raises(NetworkError, match="uint8"):
        quantize_input(np.zeros((1, 2, 2), np.float32))


def test_network_file_round_trip(tmp_path):
    net = edge_cnn()
    save_network(net, tmp_path / "edge.npz")
    back = load_network(tmp_path / "edge.npz")
    assert back == net and back.shapes() == net.shapes()
    for a, b in zip(net.layers, back.layers, strict=True):
        for name in ("weights", "bias", "mult", "shift") if a.has_params else ():
            assert np.array_equal(getattr(a, name), getattr(b, name)), name


def _write(path, spec, **arrays):
    np.savez(path, spec=np.frombuffer(json.dumps(spec).encode(), np.uint8), **arrays)


def test_malformed_network_files_are_named(tmp_path):
    bad = tmp_path / "x.npz"
    bad.write_bytes(b"not a zip")
    with pytest.raises(NetworkError, match="not a network file"):
        load_network(bad)
    with pytest.raises(NetworkError, match="no such file"):
        load_network(tmp_path / "missing.npz")
    spec = {"name": "n", "input": [4, 4, 1], "layers": [
        {"kind": "conv", "out_channels": 2, "kernel": 3, "stride": 1, "pad": 1, "relu": True}]}
    good = {"l0_weights": np.zeros((2, 3, 3, 1), np.int8), "l0_bias": np.zeros(2, np.int32),
            "l0_mult": np.ones(2, np.int32), "l0_shift": np.ones(2, np.uint8)}
    _write(bad, spec, **good)
    assert load_network(bad).layers[0].out_channels == 2
    _write(bad, spec, **{**good, "l0_weights": np.zeros((2, 3, 3, 2), np.int8)})
    with pytest.raises(NetworkError, match=r"layer 0 \(conv\): weights must be int8 of shape \(2, 3, 3, 1\)"):
        load_network(bad)
    _write(bad, spec, **{k: v for k, v in good.items() if k != "l0_mult"})
    with pytest.raises(NetworkError, match="l0_mult missing"):
        load_network(bad)
    _write(bad, {**spec, "layers": [{**spec["layers"][0], "kind": "deconv"}]}, **good)
    with pytest.raises(NetworkError, match="unknown kind"):
        load_network(bad)
    _write(bad, {"name": "n"})
    with pytest.raises(NetworkError, match="spec is not valid"):
        load_network(bad)
    _write(bad, spec, **{**good, "l0_shift": np.full(2, 70, np.uint8)})
    with pytest.raises(NetworkError, match=r"shift must be in 1\.\.62"):
        load_network(bad)


def test_image_files_are_checked(tmp_path):
    net = digits_cnn()
    path = tmp_path / "img.npz"
    np.savez(path, images=np.zeros((3, 8, 8), np.uint8), labels=np.array([1, 2, 3]))
    images, labels = read_images(path, net)
    assert images.shape == (3, 8, 8) and labels.tolist() == [1, 2, 3]
    for arrays, message in (({"images": np.zeros((3, 8, 8), np.float32)}, "uint8 of shape"),
                            ({"images": np.zeros((3, 9, 8), np.uint8)}, r"\(N, 8, 8\)"),
                            ({"pictures": np.zeros((3, 8, 8), np.uint8)}, "no 'images'"),
                            ({"images": np.zeros((3, 8, 8), np.uint8), "labels": np.zeros(2, int)}, "3 integers")):
        np.savez(path, **arrays)
        with pytest.raises(FrameError, match=message):
            read_images(path, net)


def test_shipped_models_validate():
    assert digits_cnn().output_shape == (1, 1, 10)
    assert edge_cnn().shapes()[1] == (64, 64, 8) and edge_cnn().output_shape == (1, 1, 10)
    with pytest.raises(NetworkError, match="kernel 3 larger"):
        Network("tiny", (1, 1, 1), (random_layer(np.random.default_rng(0), "conv", 1, (1, 1, 1), pad=0),)).validate()


def test_a_hostile_network_file_is_refused_by_name_and_never_raises_anything_else(fresh_seed):
    """A client's network with a field of another JSON type (``4.0`` compares equal to 4 and passed
    the shape checks, then failed in the daemon's engine), a spec nested past the parser's depth,
    or a member numpy cannot read: each is a NetworkError naming the problem, on fresh seeds; the
    valid network each starts from is read back whole."""
    from fpgashare.dnn.network_wire import network_bytes, network_from_wire

    from tests.hostile_networks import hostile_network, small_network

    seed = fresh_seed
    rng = np.random.default_rng(seed)
    for _ in range(300):
        what, data = hostile_network(rng)
        refusal = r"spec is not valid|must be|needs|unknown kind|cannot be read|not a network file"
        with pytest.raises(NetworkError, match=refusal):
            network_from_wire(data)
        net = small_network(rng)
        back = network_from_wire(network_bytes(net))
        assert back.input_shape == net.input_shape and [ly.kind for ly in back.layers] == \
            [ly.kind for ly in net.layers], f"seed {seed}: {what}"

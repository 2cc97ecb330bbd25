"""``fpga.dnn(name, model="X.onnx")``: the client converts the model and sends the network in its
registration; the daemon checks what it is sent (size, archive members, dtypes and shapes, tile fit)
and runs it like a shipped network, on tiles or on its CPU; outputs equal the import's reference."""

from __future__ import annotations

import io
import zipfile

import numpy as np
import pytest
from fpgashare.backends import make_backend
from fpgashare.catalogue.platform import load_platform
from fpgashare.client import DaemonError, connect
from fpgashare.daemon import Daemon, DaemonThread
from fpgashare.dnn.network import Layer, Network
from fpgashare.dnn.network_wire import MAX_WIRE_BYTES, Registry, network_bytes, network_from_wire
from fpgashare.dnn.onnx_example import split, to_input
from fpgashare.dnn.onnx_import import import_onnx
from fpgashare.dnn.onnx_shipped import SHIPPED_ONNX
from fpgashare.errors import NetworkError
from fpgashare.sched.host.host_cost import HostCost

pytest.importorskip("onnxruntime")
SHIPPED = SHIPPED_ONNX["digits_qdq"]
#: The host taken as free: these tests check what the daemon accepts and runs, and a host cost
#: measured at start on a busy machine could refuse their pipelines for the host's sake (the
#: host's own checks: tests/test_host_cost.py).
FREE_HOST = HostCost()


@pytest.fixture(scope="module")
def inputs():
    return to_input(split()[2][:6])


@pytest.mark.parametrize("platform,fallback", [("zcu104", None), ("pynq-z2", "cpu")])
def test_imported_model_through_the_daemon(tmp_path, inputs, platform, fallback):
    sock = tmp_path / "d.sock"
    daemon = Daemon(make_backend("model", load_platform(platform)), sock, dilation=20.0, host_cost=FREE_HOST)
    with DaemonThread(daemon), connect(sock) as fpga:
        pipe = fpga.dnn("digits", model=str(SHIPPED), fallback=fallback)
        got = np.stack([pipe.submit(x).result(timeout=20) for x in inputs])   # one ring slot at a time
        assert pipe.placement is not None
    assert np.array_equal(got, import_onnx(SHIPPED).reference(inputs))


def test_daemon_refuses_networks_it_cannot_trust(tmp_path):
    sock = tmp_path / "d.sock"
    good = network_bytes(import_onnx(SHIPPED).network)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("../evil.npy", b"x")
    bad = {b"junk": "not a network file", buf.getvalue(): "unexpected member",
           good[:-40]: "not a network file", b"\0" * (MAX_WIRE_BYTES + 1): "more than"}
    daemon = Daemon(make_backend("model", load_platform("zcu104")), sock, host_cost=FREE_HOST)
    with DaemonThread(daemon), connect(sock) as fpga:
        for data, words in bad.items():
            with pytest.raises(DaemonError, match=words):
                fpga.request("dnn", name="x", model="m", network=data)
        with pytest.raises(DaemonError, match="must be the bytes"):
            fpga.request("dnn", name="x", model="m", network=[1, 2, 3])
        answer = fpga.request("dnn", name="ok", model="m", network=good)
        assert answer["model"].startswith("m-")


def test_wire_network_checks_shapes_types_and_tile_fit():
    rng = np.random.default_rng(3)
    w = rng.integers(-5, 5, (4, 3, 3, 1), dtype=np.int8)
    mult, shift = np.full(4, 2**30, np.int32), np.full(4, 40, np.uint8)
    ok = Layer("conv", 4, 3, 1, 1, True, w, np.zeros(4, np.int32), mult, shift)
    net = Network("n", (8, 8, 1), (ok,))
    assert network_from_wire(network_bytes(net)).layers[0].out_channels == 4
    wrong = Layer("conv", 4, 3, 1, 1, True, w.astype(np.int16), ok.bias, ok.mult, ok.shift)
    with pytest.raises(NetworkError, match="weights must be int8"):
        network_from_wire(network_bytes(Network("n", (8, 8, 1), (wrong,))))
    huge = Network("n", (8, 8, 1), (Layer("maxpool"),) * 3)
    assert network_from_wire(network_bytes(huge)).output_shape == (1, 1, 1)
    reg = Registry(limit=1)
    name = reg.register(network_bytes(net), "a")
    assert reg.register(network_bytes(net), "a") == name and reg.get(name).layers == net.layers
    with pytest.raises(NetworkError, match="already holds 1"):
        reg.register(network_bytes(huge), "b")


def test_client_side_input_conversion_is_exact_and_refuses_negatives():
    from fpgashare.dnn.onnx_client import to_pixels
    from fpgashare.errors import FrameError

    imported = import_onnx(SHIPPED)
    x = to_input(split()[2][:3])
    frames = np.stack([to_pixels(imported, xi) for xi in x])
    assert frames.dtype == np.uint8 and frames.shape == (3, 8, 8)
    assert np.array_equal((frames >> 1).astype(np.int8)[..., None], imported.quantize_input(x))
    with pytest.raises(FrameError, match="negative"):
        to_pixels(imported, -x[0])


def test_a_full_registry_makes_room_from_networks_no_pipeline_uses(fresh_seed):
    """Whatever networks were kept and whichever are in use: a new one takes the place of the
    oldest unused one, and is refused only when every kept network is in use."""
    good = network_bytes(import_onnx(SHIPPED).network)
    rng = np.random.default_rng(fresh_seed)
    for _ in range(20):
        limit = int(rng.integers(1, 6))
        reg = Registry(limit=limit)
        names = [reg.register(good, f"m{i}") for i in range(limit)]
        used = {n for n in names if rng.random() < 0.5}
        gone: list[str] = []
        newcomer = reg.register(good, "new", used.__contains__, gone.append) if len(used) < limit else None
        if newcomer is None:
            with pytest.raises(NetworkError, match=f"already holds {limit} client networks, each in use"):
                reg.register(good, "new", used.__contains__)
            assert all(reg.get(n) is not None for n in names), fresh_seed
            continue
        dropped = next(n for n in names if n not in used)               # the oldest unused
        assert reg.get(dropped) is None and reg.get(newcomer) is not None and gone == [dropped], fresh_seed
        assert all(reg.get(n) is not None for n in names if n != dropped), fresh_seed


def test_networks_left_by_refused_registrations_do_not_keep_another_clients_out(tmp_path, inputs, monkeypatch):
    """A client sends more networks than the daemon keeps, each under a new label, in
    registrations refused after the network was read (a name it holds already): another client's
    network still registers and runs, and the first client's live pipeline keeps its own."""
    from fpgashare.dnn.network_wire import REGISTERED

    monkeypatch.setattr(REGISTERED, "limit", 3)
    monkeypatch.setattr(REGISTERED, "_nets", {})
    good = network_bytes(import_onnx(SHIPPED).network)
    sock = tmp_path / "d.sock"
    daemon = Daemon(make_backend("model", load_platform("zcu104")), sock, dilation=20.0, host_cost=FREE_HOST)
    with DaemonThread(daemon), connect(sock) as hog, connect(sock) as other:
        held = hog.request("dnn", name="x", model="kept", network=good)["model"]
        for i in range(2 * REGISTERED.limit):
            with pytest.raises(DaemonError, match="already registered") as err:
                hog.request("dnn", name="x", model=f"label{i}", network=good)
            assert err.value.kind == "bad_request"
        pipe = other.dnn("digits", model=str(SHIPPED))
        got = np.stack([pipe.submit(x).result(timeout=20) for x in inputs[:2]])
        assert np.array_equal(got, import_onnx(SHIPPED).reference(inputs[:2]))
        assert REGISTERED.get(held) is not None and len(REGISTERED._nets) <= REGISTERED.limit

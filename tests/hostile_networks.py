"""Network files a hostile or careless client may send in a ``dnn`` registration, generated from a
valid one: a spec field of another JSON type that compares like the right one (``4.0``, ``"4"``,
``[4]``, a flag's string), a spec nested past the parser's depth, and members numpy cannot read
(cut short, an object or oversized array header), and a field whose text is longer than a
reply can carry (deflated, the file stays small)."""

from __future__ import annotations

import io
import json
import zipfile

import numpy as np
from fpgashare.dnn.network import Layer, Network
from fpgashare.dnn.network_wire import network_bytes

FIELDS = ("kind", "out_channels", "kernel", "stride", "pad", "relu")


def small_network(rng: np.random.Generator) -> Network:
    """A valid conv (+ fc) network on a small input: what the mutations start from."""
    h, w, c = int(rng.integers(4, 12)), int(rng.integers(4, 12)), int(rng.integers(1, 4))
    oc, k = int(rng.integers(1, 8)), int(rng.choice([1, 3]))
    conv = Layer("conv", oc, k, 1, k // 2, bool(rng.integers(2)), rng.integers(-9, 9, (oc, k, k, c), dtype=np.int8),
                 np.zeros(oc, np.int32), np.full(oc, 2**30, np.int32), np.full(oc, 40, np.uint8))
    fc = Layer("fc", 3, 1, 1, 0, False, rng.integers(-9, 9, (3, h, w, oc), dtype=np.int8),
               np.zeros(3, np.int32), np.full(3, 2**30, np.int32), np.full(3, 40, np.uint8))
    return Network("n", (h, w, c), (conv, fc) if rng.integers(2) else (conv,))


def _members(data: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return {m.filename: archive.read(m.filename) for m in archive.infolist()}


def _archive(members: dict[str, bytes], how: int = zipfile.ZIP_STORED) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", how) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return buf.getvalue()


def _npy(array: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, array)
    return buf.getvalue()


def _retyped(value: object, rng: np.random.Generator) -> object:
    """``value`` as another JSON type that may compare equal to it or be truthy like it."""
    choices = [float(value) if isinstance(value, (int, float)) else 1.0, str(value), [value], {"v": value},
               None, float("inf"), "no", 1e308, 2]
    return choices[int(rng.integers(len(choices)))]


def hostile_network(rng: np.random.Generator) -> tuple[str, bytes]:
    """(what was done, the bytes) for one hostile variant of a fresh small network."""
    net = small_network(rng)
    members = _members(network_bytes(net))
    spec = json.loads(members["spec.npy"][members["spec.npy"].index(b"\n") + 1:].decode())
    how = int(rng.integers(6))
    if how == 5:                             # a text far longer than a message, in a small file
        n = int(rng.integers(25_000, 30_000))
        if rng.integers(2):
            layer = int(rng.integers(len(spec["layers"])))
            spec["layers"][layer]["kind"], what = "x" * 3 * n, f"layer {layer} kind of {3 * n} characters"
        else:
            spec["input"], what = [1] * n, f"an input of {n} sides"
        members["spec.npy"] = _npy(np.frombuffer(json.dumps(spec).encode(), np.uint8))
        return what, _archive(members, zipfile.ZIP_DEFLATED)
    if how == 0:
        layer = int(rng.integers(len(spec["layers"])))
        key = FIELDS[int(rng.integers(len(FIELDS)))]
        value = _retyped(spec["layers"][layer][key], rng)
        if type(value) is type(spec["layers"][layer][key]):
            value = [value]                  # the same JSON type would be no attack
        spec["layers"][layer][key] = value
        what, text = f"layer {layer} {key} = {value!r}", json.dumps(spec)
    elif how == 1:
        key = str(rng.choice(["input", "name", "layers"]))
        value = [float(v) for v in spec["input"]] if key == "input" and rng.integers(2) else _retyped(spec[key], rng)
        if type(value) is type(spec[key]) and key != "input":
            value = [value]
        spec[key] = value
        what, text = f"{key} = {value!r}", json.dumps(spec)
    elif how == 2:
        depth = int(rng.integers(2_000, 15_000))
        what, text = f"spec nested {depth} deep", "[" * depth + "]" * depth
    else:
        array = str(rng.choice([m for m in members if m != "spec.npy"]))
        data = members[array]
        if how == 3:
            cut = int(rng.integers(1, len(data)))
            members[array] = data[:cut] if rng.integers(2) else data.replace(b"(", b"(4000000000, ", 1)
            what = f"{array} cut to {cut} bytes or given a huge shape"
        else:
            members[array] = _npy(np.array([None, 1], dtype=object))
            what = f"{array} an object array"
        return what, _archive(members)
    members["spec.npy"] = _npy(np.frombuffer(text.encode(), np.uint8))
    return what, _archive(members)

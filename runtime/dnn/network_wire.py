"""A network sent over the wire (a client's converted model in its ``dnn`` registration), checked
as untrusted input, and the daemon's registry of such networks under content-addressed names.

The bytes are a network file (runtime/dnn/network.py: an uncompressed .npz). Before numpy reads
them: the size, and the zip directory (only ``spec`` and ``l{i}_{weights,bias,mult,shift}``
members, uncompressed sizes bounded), so a crafted archive cannot make the daemon allocate more
than it was sent. Then the network's own validation (dtypes and shapes of every array against its
layer), bounds on the input and the layer count, and every layer must fit one tile. A network's
name in the registry is ``<client's name>-<sha256 prefix of the bytes>``: the same bytes get the
same name, so the caches keyed by model name (planning.network, program_words) stay right.
"""

from __future__ import annotations

import hashlib
import io
import re
import tempfile
import threading
import zipfile
from collections.abc import Callable
from pathlib import Path

from fpgashare.dnn.network import Network, load_network, save_network
from fpgashare.dnn.tile_format import DEFAULT_TILE, footprint
from fpgashare.errors import NetworkError

MAX_WIRE_BYTES = 48 * 1024           #: fits the daemon's 64 kB message with the rest of a registration
MAX_LAYERS = 64
MAX_INPUT_SIDE = 4096
MAX_INPUT_CHANNELS = 16
MAX_REGISTERED = 256                 #: client networks a daemon keeps (<= 256 x MAX_WIRE_BYTES); same bytes, same entry
#: Output values of one image: they ride in its reply (at most 2 msgpack bytes each), which must fit
#: one 64 KiB message; a 1.8 kB network can have 65,536 of them.
MAX_OUTPUT_VALUES = 16_384
_MEMBER = re.compile(r"^(spec|l\d{1,3}_(weights|bias|mult|shift))\.npy$")


def network_bytes(net: Network) -> bytes:
    """``net`` as the bytes of a network file."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "net.npz"
        save_network(net, path)
        return path.read_bytes()


def network_from_wire(data: object, where: str = "network") -> Network:
    """The network in ``data`` (bytes), every size, shape and type checked; NetworkError if not."""
    if not isinstance(data, (bytes, bytearray)):
        raise NetworkError(f"{where}: must be the bytes of a network file, got {type(data).__name__}")
    if len(data) > MAX_WIRE_BYTES:
        raise NetworkError(f"{where}: {len(data)} bytes, more than the {MAX_WIRE_BYTES} a registration carries")
    try:
        with zipfile.ZipFile(io.BytesIO(bytes(data))) as archive:
            members = archive.infolist()
    except (zipfile.BadZipFile, ValueError, OSError) as exc:
        raise NetworkError(f"{where}: not a network file (.npz): {exc}") from None
    total = 0
    for m in members:
        if not _MEMBER.match(m.filename):
            raise NetworkError(f"{where}: unexpected member {m.filename[:40]!r} in the network file")
        total += m.file_size
    if total > 2 * MAX_WIRE_BYTES:
        raise NetworkError(f"{where}: its arrays unpack to {total} bytes, more than {2 * MAX_WIRE_BYTES}")
    buf = io.BytesIO(bytes(data))
    try:
        net = load_network(buf)
    except NetworkError as exc:
        raise NetworkError(str(exc).replace(str(buf), where)) from None
    h, w, c = net.input_shape
    if max(h, w) > MAX_INPUT_SIDE or c > MAX_INPUT_CHANNELS or len(net.layers) > MAX_LAYERS:
        raise NetworkError(f"{where}: input {net.input_shape} and {len(net.layers)} layers; the daemon takes "
                           f"inputs up to {MAX_INPUT_SIDE}x{MAX_INPUT_SIDE}x{MAX_INPUT_CHANNELS} and "
                           f"{MAX_LAYERS} layers")
    outputs = net.output_shape[0] * net.output_shape[1] * net.output_shape[2]
    if outputs > MAX_OUTPUT_VALUES:
        raise NetworkError(f"{where}: its output {net.output_shape} has {outputs} values; an image's reply carries "
                           f"at most {MAX_OUTPUT_VALUES}")
    for i in range(len(net.layers)):
        problem = footprint(net, i, i + 1, DEFAULT_TILE).problem(DEFAULT_TILE)
        if problem:
            raise NetworkError(f"{where}: layer {i} ({net.layers[i].kind}) does not fit a tile: {problem}")
    return net


class Registry:
    """Networks clients sent, by content-addressed name; bounded, thread-safe. When it is full,
    a new network takes the place of the oldest that no pipeline uses (``in_use``), so networks
    left over by clients that went (or by registrations refused after their network was read)
    cannot keep other clients' networks out."""

    def __init__(self, limit: int = MAX_REGISTERED) -> None:
        self.limit = limit
        self._nets: dict[str, Network] = {}     # oldest first
        self._lock = threading.Lock()

    def register(self, data: object, label: str, in_use: Callable[[str], bool] = lambda name: True,
                 dropped: Callable[[str], None] = lambda name: None) -> str:
        """Check ``data`` and keep it; its name (the same for the same bytes). ``in_use(name)``:
        whether a kept network is still needed (default: every one is, so none is dropped);
        ``dropped(name)``: told of a network dropped to make room (to forget what was kept for it)."""
        return self.keep(network_from_wire(data, f"network for {label!r}"), data, label, in_use, dropped)

    def keep(self, net: Network, data: bytes, label: str, in_use: Callable[[str], bool] = lambda name: True,
             dropped: Callable[[str], None] = lambda name: None) -> str:
        """``register`` for a network already read from ``data`` (``network_from_wire``, which the
        daemon runs on a worker: reading a file of many members takes milliseconds, on a board's
        CPU tens of them, more than a registration's share of the loop)."""
        digest = hashlib.sha256(bytes(data)).hexdigest()[:12]
        name = f"{label[:40]}-{digest}"
        with self._lock:
            if name not in self._nets:
                if len(self._nets) >= self.limit:
                    self._make_room(in_use, dropped)
                if len(self._nets) >= self.limit:
                    raise NetworkError(f"network for {label!r}: the daemon already holds {self.limit} client "
                                       "networks, each in use")
                self._nets[name] = Network(name, net.input_shape, net.layers)
        return name

    def _make_room(self, in_use: Callable[[str], bool], dropped: Callable[[str], None]) -> None:
        """Drop the oldest network no pipeline uses."""
        for old in list(self._nets):
            if not in_use(old):
                del self._nets[old]
                dropped(old)
                return

    def get(self, name: str) -> Network | None:
        with self._lock:
            return self._nets.get(name)


#: The daemon's registry (get_model looks here for names it does not ship).
REGISTERED = Registry()

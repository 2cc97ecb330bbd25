"""The TCP listener's wire (runtime/daemon/tcp_listener.py, runtime/client/tcp.py): the daemon's framing
(runtime/wire/framing.py) with a larger limit, as frames travel inline, and the handshake's proofs."""

from __future__ import annotations

import hashlib
import hmac
import socket
import threading
from collections.abc import Callable

import numpy as np
from fpgashare.wire.framing import HEADER, Decoder, FramingError, pack_map, unpack_map  # noqa: F401  (HEADER: raw clients)

MAX_TCP_MESSAGE = 32 << 20       #: a 1080p RGB frame is 6.2 MB
CHALLENGE_BYTES = 32
DEFAULT_PORT = 7411
PROTOCOL = b"fpgashare-tcp-1"
READ_BYTES = 1 << 20            #: the most one recv takes of an inline frame


def proof(token: bytes, challenge: bytes, role: bytes) -> bytes:
    return hmac.new(token, PROTOCOL + role + challenge, hashlib.sha256).digest()


def send(sock: socket.socket, message: dict, lock: threading.Lock | None = None) -> None:
    data = pack_map(message, MAX_TCP_MESSAGE)
    if lock is None:
        sock.sendall(data)
    else:
        with lock:
            sock.sendall(data)


class Reader:
    """The messages of a blocking socket, cut by the wire's decoder (runtime/wire/framing.py). It
    reads no byte past the message it returns, so ``admit(length)`` runs once a message's header
    is in and before any of its body is read (the listener reserves room for it there)."""

    def __init__(self, sock: socket.socket, limit: int = MAX_TCP_MESSAGE) -> None:
        self.sock = sock
        self.decoder = Decoder(limit)

    def next(self, admit: Callable[[int], None] | None = None) -> dict | None:
        """The next message, or None at a clean end; FramingError if the bytes are no message."""
        decoder, admitted = self.decoder, False
        while True:
            if admit is not None and not admitted and decoder.expecting is not None:
                admit(decoder.expecting)
                admitted = True
            data = self.sock.recv(min(decoder.needed, READ_BYTES))
            if not data:
                if decoder.pending:
                    raise FramingError("malformed", "connection ended inside a message")
                return None
            bodies = decoder.feed(data)
            if bodies:                       # one: no more than the message was read
                if admit is not None and not admitted:
                    admit(len(bodies[0]))
                return unpack_map(bodies[0])


def recv(sock: socket.socket, limit: int = MAX_TCP_MESSAGE) -> dict | None:
    """One message from ``sock`` (no byte after it is read), or None at a clean end."""
    return Reader(sock, limit).next()


#: An inline frame's dtype and shape as the daemon takes them (daemon/checks.py): a short dtype
#: name and up to four sides. Checked before numpy parses them: a dtype string of a million
#: fields is a valid structured dtype, and parsing one costs seconds and hundreds of megabytes.
MAX_DTYPE_CHARS, MAX_RANK = 16, 4


def array(fields: dict, prefix: str) -> np.ndarray:
    """The array ``fields`` carries inline under ``prefix`` (its bytes, ``_dtype`` and ``_shape``);
    ValueError naming the field that cannot be one."""
    dtype, shape = fields[f"{prefix}_dtype"], fields[f"{prefix}_shape"]
    if not isinstance(dtype, str) or not 1 <= len(dtype) <= MAX_DTYPE_CHARS:
        raise ValueError(f"{prefix}_dtype must be a dtype name of 1..{MAX_DTYPE_CHARS} characters, "
                         f"got {repr(dtype)[:40]}")
    if not isinstance(shape, list) or len(shape) > MAX_RANK or \
            not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in shape):
        raise ValueError(f"{prefix}_shape must be a list of at most {MAX_RANK} sides (integers >= 0), "
                         f"got {repr(shape)[:40]}")
    return np.frombuffer(fields[f"{prefix}"], dtype=np.dtype(dtype)).reshape(shape)


def pack_array(a: np.ndarray, prefix: str) -> dict:
    a = np.ascontiguousarray(a)
    return {prefix: a.tobytes(), f"{prefix}_shape": list(a.shape), f"{prefix}_dtype": str(a.dtype)}

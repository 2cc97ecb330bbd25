"""The TCP listener's wire (runtime/daemon/tcp_listener.py, runtime/client/tcp.py): the daemon's framing
(runtime/wire/framing.py) with a larger limit, as frames travel inline, and the handshake's proofs."""

from __future__ import annotations

import hashlib
import hmac
import socket
import threading

import msgpack
import numpy as np
from fpgashare.errors import FpgashareError
from fpgashare.wire.framing import HEADER

MAX_TCP_MESSAGE = 32 << 20       #: a 1080p RGB frame is 6.2 MB
CHALLENGE_BYTES = 32
DEFAULT_PORT = 7411
PROTOCOL = b"fpgashare-tcp-1"


def proof(token: bytes, challenge: bytes, role: bytes) -> bytes:
    return hmac.new(token, PROTOCOL + role + challenge, hashlib.sha256).digest()


def send(sock: socket.socket, message: dict, lock: threading.Lock | None = None) -> None:
    body = msgpack.packb(message, use_bin_type=True)
    if len(body) > MAX_TCP_MESSAGE:
        raise FpgashareError(f"message of {len(body)} bytes exceeds {MAX_TCP_MESSAGE}")
    data = HEADER.pack(len(body)) + body
    if lock is None:
        sock.sendall(data)
    else:
        with lock:
            sock.sendall(data)


def recv_exact(sock: socket.socket, n: int) -> bytes | None:
    chunks, got = [], 0
    while got < n:
        chunk = sock.recv(min(n - got, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def recv(sock: socket.socket, limit: int = MAX_TCP_MESSAGE) -> dict | None:
    header = recv_exact(sock, HEADER.size)
    if header is None:
        return None
    (length,) = HEADER.unpack(header)
    if length > limit:
        raise FpgashareError(f"message of {length} bytes exceeds {limit}")
    body = recv_exact(sock, length)
    if body is None:
        raise FpgashareError("connection ended inside a message")
    message = msgpack.unpackb(body, raw=False)
    if not isinstance(message, dict):
        raise FpgashareError("a message must be a map")
    return message


def array(fields: dict, prefix: str) -> np.ndarray:
    return np.frombuffer(fields[f"{prefix}"], dtype=np.dtype(fields[f"{prefix}_dtype"])).reshape(
        fields[f"{prefix}_shape"])


def pack_array(a: np.ndarray, prefix: str) -> dict:
    a = np.ascontiguousarray(a)
    return {prefix: a.tobytes(), f"{prefix}_shape": list(a.shape), f"{prefix}_dtype": str(a.dtype)}

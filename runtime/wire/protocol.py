"""The daemon's wire protocol: length-prefixed msgpack maps on a Unix socket.

Each message is a 4-byte big-endian length followed by that many bytes of msgpack (the framing:
runtime/wire/framing.py, shared with the client and the TCP listener), which must
decode to a map with ``v`` (the protocol version), ``op`` (requests) or ``ok`` (replies) and ``id``
(echoed in the reply). Messages carry control only: pixels travel in shared memory
(runtime/wire/shm.py), so a message is small and anything over ``MAX_MESSAGE`` is refused before it
is read.

Errors are values, not exceptions, on the wire: a reply ``{"v", "id", "ok": False, "error":
{"kind", "message"}}`` names what was wrong. ``kind`` is one of ``KINDS``: ``bad_request`` names
the field at fault, ``quota`` the limit that refused it (runtime/daemon/limits.py), ``internal``
is kept for bugs in the daemon (the fuzz test fails on one).

A reply that carries a frame ring (``pipeline``, ``dnn``) has ``"ring_fd": true``: the ring's
descriptor rides on the reply's first byte as SCM_RIGHTS ancillary data (runtime/wire/shm.py).
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import msgpack
from fpgashare.errors import FpgashareError
from fpgashare.wire.framing import HEADER, frame

#: Where the daemon listens and clients connect unless told otherwise.
DEFAULT_SOCKET = Path(os.environ.get("FPGASHARE_SOCKET", "/run/fpgashare/fpgashare.sock"))

VERSION = 2                      #: 2: submit and infer state the frame's shape and dtype
MAX_MESSAGE = 64 * 1024          #: bytes of msgpack; a frame handle and its metadata need < 1 kB
KINDS = ("malformed", "oversized", "version", "unknown_op", "bad_request", "admission", "frame",
         "quota", "busy", "gone", "internal")


class ProtocolError(FpgashareError):
    """A message that cannot be taken: ``kind`` says why (one of ``KINDS``)."""

    def __init__(self, kind: str, message: str) -> None:
        if kind not in KINDS:
            raise ValueError(f"unknown protocol error kind {kind!r}")
        super().__init__(message)
        self.kind = kind


def encode(message: dict[str, Any]) -> bytes:
    """One message, framed. Raises ProtocolError if it would exceed MAX_MESSAGE."""
    body = msgpack.packb({"v": VERSION, **message}, use_bin_type=True)
    if len(body) > MAX_MESSAGE:
        raise ProtocolError("oversized", f"message of {len(body)} bytes exceeds {MAX_MESSAGE}")
    return frame(body)


def decode(body: bytes) -> dict[str, Any]:
    """The map in ``body`` (no length prefix), checked for shape and version."""
    try:
        message = msgpack.unpackb(body, raw=False, strict_map_key=True)
    except Exception as exc:    # msgpack raises several unrelated types for bad bytes
        raise ProtocolError("malformed", f"not msgpack: {exc}") from None
    if not isinstance(message, dict):
        raise ProtocolError("malformed", f"a message must be a map, got {type(message).__name__}")
    version = message.get("v")
    if version != VERSION:
        raise ProtocolError("version", f"protocol version {version!r} is not supported (this daemon speaks {VERSION})")
    if not isinstance(message.get("id"), int):
        raise ProtocolError("malformed", "a message needs an integer id")
    return message


async def read_message(reader: asyncio.StreamReader) -> dict[str, Any] | None:
    """The next message, or None at a clean end of stream. An oversized length is refused after
    the 4 header bytes (the body is never read); the stream cannot be resynchronised after it."""
    try:
        header = await reader.readexactly(HEADER.size)
    except asyncio.IncompleteReadError as exc:
        if not exc.partial:
            return None
        raise ProtocolError("malformed", "stream ended inside a message header") from None
    (length,) = HEADER.unpack(header)
    if length > MAX_MESSAGE:
        raise ProtocolError("oversized", f"message of {length} bytes exceeds {MAX_MESSAGE}")
    try:
        body = await reader.readexactly(length)
    except asyncio.IncompleteReadError:
        raise ProtocolError("malformed", f"stream ended inside a {length}-byte message") from None
    return decode(body)


def reply(request_id: int, **fields: Any) -> bytes:
    return encode({"id": request_id, "ok": True, **fields})


def error_reply(request_id: int, error: ProtocolError) -> bytes:
    return encode({"id": request_id, "ok": False, "error": {"kind": error.kind, "message": str(error)}})

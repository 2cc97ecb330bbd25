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
from collections import deque
from pathlib import Path
from typing import Any

from fpgashare.errors import FpgashareError
from fpgashare.wire.framing import HEADER, Decoder, FramingError, pack_map, unpack_map  # noqa: F401  (HEADER: the wire's, for raw clients)

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
    try:
        return pack_map({"v": VERSION, **message}, MAX_MESSAGE)
    except FramingError as exc:
        raise ProtocolError(exc.kind, str(exc)) from None


def decode(body: bytes) -> dict[str, Any]:
    """The map in ``body`` (no length prefix), checked for shape and version."""
    try:
        message = unpack_map(body)
    except FramingError as exc:
        raise ProtocolError(exc.kind, str(exc)) from None
    version = message.get("v")
    if version != VERSION:
        raise ProtocolError("version", f"protocol version {version!r} is not supported (this daemon speaks {VERSION})")
    if not isinstance(message.get("id"), int):
        raise ProtocolError("malformed", "a message needs an integer id")
    return message


#: The most bytes one read of a connection takes, all of them cut into messages at once (one
#: step of the reader's task, the loop waiting meanwhile). Cutting costs about half a microsecond
#: a message, and a message may be a bare 4-byte header: 256 KiB of them took 28 ms in one step,
#: on the loop every tenant's real-time frames share. 4 KiB bounds a step near half a millisecond
#: and still takes ~30 submits a read.
READ_BYTES = 4096


class MessageReader:
    """The messages of one asyncio stream, cut by the wire's decoder (runtime/wire/framing.py).
    ``chunk``: the most bytes one read takes (READ_BYTES); ``chunk=None`` reads no byte past the
    message returned, so a reader made per message loses nothing."""

    def __init__(self, reader: asyncio.StreamReader, limit: int = MAX_MESSAGE, chunk: int | None = READ_BYTES) -> None:
        self.reader, self.chunk = reader, chunk
        self.decoder = Decoder(limit)
        self.bodies: deque[bytes] = deque()

    @property
    def waiting(self) -> bool:
        """Whether a whole message is already here (``next`` returns it without reading)."""
        return bool(self.bodies)

    async def next(self) -> dict[str, Any] | None:
        """The next message, or None at a clean end of stream. An oversized length is refused
        once its header is in (the body is never read); the stream cannot be resynchronised
        after it. A body that is no message is refused alone: the next one is read."""
        while not self.bodies:
            data = await self.reader.read(self.decoder.needed if self.chunk is None else self.chunk)
            if not data:
                if self.decoder.pending:
                    where = "header" if self.decoder.expecting is None else f"{self.decoder.expecting}-byte message"
                    raise ProtocolError("malformed", f"stream ended inside a {where}")
                return None
            try:
                self.bodies.extend(self.decoder.feed(data))
            except FramingError as exc:
                raise ProtocolError(exc.kind, str(exc)) from None
        return decode(self.bodies.popleft())


async def read_message(reader: asyncio.StreamReader) -> dict[str, Any] | None:
    """The next message of ``reader`` alone (no byte after it is read), or None at a clean end."""
    return await MessageReader(reader, chunk=None).next()


def reply(request_id: int, **fields: Any) -> bytes:
    return encode({"id": request_id, "ok": True, **fields})


#: The most characters of an error's text a reply carries. A refusal may quote what it was sent
#: (a network's field, a list's items), so a small request can make a long text; a reply too long
#: to encode left the request unanswered and ended the connection ("the daemon went away"). The
#: text names the problem first, so its head is kept.
MAX_ERROR_TEXT = 4096


def error_reply(request_id: int, error: ProtocolError) -> bytes:
    text = str(error)
    if len(text) > MAX_ERROR_TEXT:
        text = f"{text[:MAX_ERROR_TEXT]}... ({len(text) - MAX_ERROR_TEXT} characters more)"
    return encode({"id": request_id, "ok": False, "error": {"kind": error.kind, "message": text}})

"""The wire's framing, without any I/O: a 4-byte big-endian length, then that many bytes of
msgpack (runtime/wire/protocol.py says what the map holds). This module is the only place that
writes or cuts it: the daemon, the client and the TCP listener and client each read their
sockets their own way and hand the bytes to a ``Decoder``.

Why any split of a stream decodes alike: the decoder keeps every byte it has not yet given back
in one buffer, and it cuts only at positions fixed by the stream itself (a header, then the body
it announces), never by where a chunk ended. So the bodies, and the first error, depend on the
bytes alone. An error is sticky: a stream whose length was bad cannot be resynchronised, so
every later ``feed`` raises it again. Bodies whole before the error are given back first (the
error is raised by the next ``feed``), so no whole message is lost to a bad one after it.
"""

from __future__ import annotations

import struct

import msgpack
from fpgashare.errors import FpgashareError

HEADER = struct.Struct(">I")
KINDS = ("oversized", "malformed")


class FramingError(FpgashareError, ValueError):
    """A length over the limit (``oversized``) or bytes that cannot be a message (``malformed``);
    the message says which and by how much."""

    def __init__(self, kind: str, message: str) -> None:
        if kind not in KINDS:
            raise ValueError(f"unknown framing error kind {kind!r}")
        super().__init__(message)
        self.kind = kind


def frame(body: bytes) -> bytes:
    """``body`` with its length in front."""
    return HEADER.pack(len(body)) + body


def pack_map(message: dict, limit: int) -> bytes:
    """One map, framed; FramingError ``oversized`` if its body is over ``limit`` bytes."""
    body = msgpack.packb(message, use_bin_type=True)
    if len(body) > limit:
        raise FramingError("oversized", f"message of {len(body)} bytes exceeds {limit}")
    return HEADER.pack(len(body)) + body


class Decoder:
    """Bytes in (``feed``), whole bodies out, in order. A body longer than ``limit`` is refused
    as soon as its header is in, before any of it is waited for.

    For readers that must decide before a body is read (the TCP listener reserves room for it):
    ``needed`` is how many more bytes the next step takes (the rest of a header, or of a body), so
    reading at most that many never reads past the message; ``expecting`` is the announced length
    of the body being waited for (None between messages)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._buffer = bytearray()             # bytes received and not yet given back
        self._error: FramingError | None = None

    @property
    def pending(self) -> int:
        """Bytes held of a message not yet whole (0: the stream is between messages)."""
        return len(self._buffer)

    @property
    def expecting(self) -> int | None:
        if len(self._buffer) < HEADER.size:
            return None
        return HEADER.unpack_from(self._buffer)[0]

    @property
    def needed(self) -> int:
        held = len(self._buffer)
        if held < HEADER.size:
            return HEADER.size - held
        return max(1, HEADER.size + HEADER.unpack_from(self._buffer)[0] - held)

    def feed(self, data: bytes | bytearray | memoryview) -> list[bytes]:
        """The bodies ``data`` completes, in order; raises FramingError once the stream is bad."""
        if self._error is not None:
            raise self._error
        buffer = self._buffer
        if buffer:
            buffer += data
            view = buffer
        else:
            view = data                         # the usual case: whole messages in one chunk, no copy
        size, at, bodies, limit = len(view), 0, [], self.limit
        while size - at >= HEADER.size:
            (length,) = HEADER.unpack_from(view, at)
            if length > limit:
                self._error = FramingError("oversized", f"message of {length} bytes exceeds {limit}")
                break
            end = at + HEADER.size + length
            if end > size:
                break
            bodies.append(bytes(view[at + HEADER.size:end]))
            at = end
        if view is buffer:
            del buffer[:at]
        else:
            self._buffer = bytearray(view[at:])
        if self._error is not None and not bodies:
            raise self._error
        return bodies


def unpack_map(body: bytes) -> dict:
    """A body's msgpack map; FramingError ``malformed`` if it is not one."""
    try:
        message = msgpack.unpackb(body, raw=False, strict_map_key=True)
    except Exception as exc:    # msgpack raises several unrelated types for bad bytes
        raise FramingError("malformed", f"not msgpack: {exc}") from None
    if not isinstance(message, dict):
        raise FramingError("malformed", f"a message must be a map, got {type(message).__name__}")
    return message

"""The wire's framing, without any I/O: a 4-byte big-endian length, then that many bytes of
msgpack (runtime/wire/protocol.py says what the map holds). ``Decoder`` takes bytes as they come and
gives whole message bodies back; the daemon, the client and the TCP listener each read their
sockets their own way and share this."""

from __future__ import annotations

import struct

import msgpack

HEADER = struct.Struct(">I")


class FramingError(ValueError):
    """A length over the limit (``oversized``) or bytes that cannot be a message (``malformed``):
    the stream cannot be resynchronised after it."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


def frame(body: bytes) -> bytes:
    """``body`` with its length in front."""
    return HEADER.pack(len(body)) + body


class Decoder:
    """Bytes in (``feed``), whole bodies out, in order; a body longer than ``limit`` is refused
    as soon as its header is in (it is never buffered)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._buffer = bytearray()
        self._need: int | None = None          # the body length being waited for

    @property
    def pending(self) -> int:
        """Bytes held of a message not yet whole (0: the stream is between messages)."""
        return len(self._buffer) + (HEADER.size if self._need is not None else 0)

    def feed(self, data: bytes) -> list[bytes]:
        self._buffer += data
        bodies = []
        while True:
            if self._need is None:
                if len(self._buffer) < HEADER.size:
                    return bodies
                (self._need,) = HEADER.unpack_from(self._buffer)
                del self._buffer[:HEADER.size]
                if self._need > self.limit:
                    raise FramingError("oversized", f"message of {self._need} bytes exceeds {self.limit}")
            if len(self._buffer) < self._need:
                return bodies
            bodies.append(bytes(self._buffer[:self._need]))
            del self._buffer[:self._need]
            self._need = None


def unpack_map(body: bytes) -> dict:
    """A body's msgpack map; FramingError ``malformed`` if it is not one."""
    try:
        message = msgpack.unpackb(body, raw=False, strict_map_key=True)
    except Exception as exc:    # msgpack raises several unrelated types for bad bytes
        raise FramingError("malformed", f"not msgpack: {exc}") from None
    if not isinstance(message, dict):
        raise FramingError("malformed", f"a message must be a map, got {type(message).__name__}")
    return message

"""The Vivado .bit container: a header of tagged fields, then the raw configuration data.

Layout (xc3sprog bitfile.h, prjxray bitstream_format.rst): ``00 09`` + 9 bytes
``0f f0 0f f0 0f f0 0f f0 00`` + ``00 01``; then fields ``a`` design, ``b`` part, ``c`` date,
``d`` time, each a big-endian 16-bit length and a NUL-terminated string; then ``e`` with a 32-bit
length and the configuration bytes. The device never sees the header.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np
from fpgashare.errors import BitstreamError

MAGIC = bytes.fromhex("0009 0ff00ff00ff00ff000 0001".replace(" ", ""))


@dataclass(frozen=True)
class BitHeader:
    """The text fields of a .bit header."""

    design: str
    part: str
    date: str
    time: str


def write_bit(header: BitHeader, config: bytes) -> bytes:
    """A complete .bit file: header fields then the configuration data."""
    out = bytearray(MAGIC)
    for tag, text in (("a", header.design), ("b", header.part), ("c", header.date), ("d", header.time)):
        value = text.encode() + b"\0"
        out += tag.encode() + struct.pack(">H", len(value)) + value
    out += b"e" + struct.pack(">I", len(config)) + config
    return bytes(out)


def parse_bit(data: bytes) -> tuple[BitHeader, bytes]:
    """Split a .bit file into its header and configuration data; BitstreamError on a bad header."""
    if len(data) < len(MAGIC) or data[: len(MAGIC)] != MAGIC:
        raise BitstreamError("not a .bit file: the 13-byte header magic is missing")
    pos = len(MAGIC)
    fields: dict[str, str] = {}
    for tag in "abcd":
        if pos + 3 > len(data) or chr(data[pos]) != tag:
            found = chr(data[pos]) if pos < len(data) else "end of file"
            raise BitstreamError(f"bad .bit header: expected field '{tag}' at byte {pos}, found {found!r}")
        (length,) = struct.unpack_from(">H", data, pos + 1)
        value = data[pos + 3 : pos + 3 + length]
        if len(value) != length or not value.endswith(b"\0"):
            raise BitstreamError(f"bad .bit header: field '{tag}' is truncated or not NUL-terminated")
        try:
            fields[tag] = value[:-1].decode()
        except UnicodeDecodeError:
            raise BitstreamError(f"bad .bit header: field '{tag}' is not text") from None
        pos += 3 + length
    if pos + 5 > len(data) or data[pos : pos + 1] != b"e":
        raise BitstreamError(f"bad .bit header: expected field 'e' (configuration data) at byte {pos}")
    (length,) = struct.unpack_from(">I", data, pos + 1)
    config = data[pos + 5 :]
    if len(config) != length:
        raise BitstreamError(f"bad .bit file: field 'e' says {length} bytes but {len(config)} follow")
    if length % 4:
        raise BitstreamError(f"bad .bit file: configuration data is {length} bytes, not whole 32-bit words")
    return BitHeader(fields["a"], fields["b"], fields["c"], fields["d"]), config


def bit_to_bin(data: bytes) -> bytes:
    """The .bin the Linux FPGA manager takes: the configuration data with each 32-bit word
    byte-swapped (pynq's ``bit2bin`` does the same)."""
    _, config = parse_bit(data)
    return np.frombuffer(config, dtype=">u4").astype("<u4").tobytes()

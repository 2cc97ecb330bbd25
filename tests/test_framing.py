"""The wire's one decoder (runtime/wire/framing.py), as the daemon, the client and the TCP listener use
it: any split of a byte stream decodes to the same messages and the same first error; bad bytes
raise a typed error naming the problem; a reader taking ``needed`` bytes at a time never reads
past a message."""

from __future__ import annotations

import asyncio
import itertools
import socket
import struct
import threading

import msgpack
import pytest
from fpgashare.wire.framing import HEADER, Decoder, FramingError, frame, pack_map, unpack_map
from fpgashare.wire.protocol import VERSION, MessageReader, ProtocolError, encode
from fpgashare.wire.tcp_wire import Reader
from hypothesis import given, settings
from hypothesis import strategies as st

LIMIT = 512
bodies_st = st.lists(st.binary(max_size=LIMIT), max_size=12)
cuts_st = st.lists(st.integers(min_value=0, max_value=20 * LIMIT), max_size=30)


def _chunks(wire: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(wire) + 1) for c in cuts} | {0, len(wire)})
    return [wire[a:b] for a, b in itertools.pairwise(points)]


def _decode(chunks: list[bytes], limit: int = LIMIT) -> tuple[list[bytes], FramingError | None, Decoder]:
    """Every body the chunks give, and the error that stopped the stream (None if none did)."""
    decoder, out = Decoder(limit), []
    try:
        for chunk in chunks:
            out += decoder.feed(chunk)
        out += decoder.feed(b"")           # an error found with bodies before it is raised by the next feed
    except FramingError as exc:
        return out, exc, decoder
    return out, None, decoder


@settings(max_examples=300, deadline=None)
@given(bodies_st, cuts_st)
def test_any_split_decodes_to_the_same_bodies(bodies, cuts):
    wire = b"".join(frame(b) for b in bodies)
    out, error, decoder = _decode(_chunks(wire, cuts))
    assert error is None
    assert out == bodies
    assert decoder.pending == 0 and decoder.expecting is None


@settings(max_examples=300, deadline=None)
@given(bodies_st, st.integers(min_value=LIMIT + 1, max_value=(1 << 32) - 1), st.binary(max_size=64), cuts_st)
def test_an_oversized_length_stops_the_stream_after_the_bodies_before_it(bodies, length, tail, cuts):
    wire = b"".join(frame(b) for b in bodies) + HEADER.pack(length) + tail
    out, error, decoder = _decode(_chunks(wire, cuts))
    assert out == bodies
    assert error is not None and error.kind == "oversized"
    assert f"message of {length} bytes exceeds {LIMIT}" in str(error)
    with pytest.raises(FramingError) as again:          # sticky: the stream cannot be resynchronised
        decoder.feed(frame(b"ok"))
    assert again.value.kind == "oversized"


@settings(max_examples=200, deadline=None)
@given(st.binary(min_size=1, max_size=LIMIT), st.integers(min_value=1))
def test_a_cut_stream_holds_what_it_lacks(body, cut):
    wire = frame(body)
    part = wire[:cut % len(wire)]
    decoder = Decoder(LIMIT)
    assert decoder.feed(part) == []
    assert decoder.pending == len(part)
    # the rest of the header first (the body's length is not known before), then the rest of the body
    assert decoder.needed == (HEADER.size if len(part) < HEADER.size else len(wire)) - len(part)
    assert decoder.expecting == (len(body) if len(part) >= HEADER.size else None)


@settings(max_examples=200, deadline=None)
@given(bodies_st)
def test_reading_what_is_needed_never_reads_past_a_message(bodies):
    wire = b"".join(frame(b) for b in bodies)
    decoder, at, out = Decoder(LIMIT), 0, []
    while at < len(wire):
        step = decoder.needed
        got = decoder.feed(wire[at:at + step])
        at += step
        assert len(got) <= 1
        if got:
            assert decoder.pending == 0          # a body ends exactly where a read ended
        out += got
    assert out == bodies


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=64))
def test_a_body_is_a_map_or_a_malformed_error(body):
    try:
        message = unpack_map(body)
    except FramingError as exc:
        assert exc.kind == "malformed" and str(exc)
    else:
        assert isinstance(message, dict)


@given(st.dictionaries(st.text(max_size=8), st.integers(-(1 << 63), (1 << 64) - 1) | st.binary(max_size=32) | st.none(),
                       max_size=8))
def test_pack_map_round_trips_and_refuses_over_its_limit(message):
    try:
        data = pack_map(message, 64)
    except FramingError as exc:
        assert exc.kind == "oversized" and "exceeds 64" in str(exc)
        assert len(msgpack.packb(message, use_bin_type=True)) > 64
        return
    assert Decoder(64).feed(data) == [data[HEADER.size:]]
    assert unpack_map(data[HEADER.size:]) == message


def test_an_unknown_error_kind_is_refused():
    with pytest.raises(ValueError, match="unknown framing error kind"):
        FramingError("odd", "no such kind")


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=1000), min_size=1, max_size=8), cuts_st)
def test_the_daemons_reader_gives_the_messages_however_they_arrive(ids, cuts):
    wire = b"".join(encode({"op": "clock", "id": i}) for i in ids) + struct.pack(">I", 3) + b"\xc1\xc1\xc1"

    async def go():
        stream = asyncio.StreamReader()
        for chunk in _chunks(wire, cuts):
            stream.feed_data(chunk)
        stream.feed_eof()
        reader, got = MessageReader(stream), []
        while True:
            try:
                message = await reader.next()
            except ProtocolError as exc:       # a body that is no message: refused alone
                got.append(exc.kind)
                continue
            if message is None:
                return got
            got.append(message["id"])

    assert asyncio.run(go()) == [*ids, "malformed"]


def test_the_tcp_reader_admits_a_body_before_reading_it():
    """``admit`` sees a message's length while its body is still unread in the socket."""
    mine, theirs = socket.socketpair()
    try:
        body = {"v": VERSION, "id": 1, "frame": bytes(100_000)}
        data = pack_map(body, 1 << 20)
        seen = []

        def admit(length: int) -> None:
            seen.append((length, reader.decoder.pending))

        sender = threading.Thread(target=mine.sendall, args=(data + data,))
        sender.start()
        reader = Reader(theirs, 1 << 20)
        assert reader.next(admit) == body and reader.next(admit) == body
        sender.join()
        assert [length for length, _ in seen] == [len(data) - HEADER.size] * 2
        assert all(held == HEADER.size for _, held in seen)   # the header alone was read
        mine.close()
        assert reader.next() is None
    finally:
        mine.close()
        theirs.close()


@settings(max_examples=30, deadline=None)
@given(st.integers(min_value=0, max_value=20), st.integers(min_value=1, max_value=64 << 10))
def test_the_daemons_reader_cuts_at_most_one_reads_bytes_at_once(body_len, total):
    """However many messages are already buffered (bare headers cost the most: one message per
    4 bytes), one step of the reader cuts no more of them than one read's bytes hold: the loop
    every tenant shares is never held for a whole flood's worth of cutting."""
    from fpgashare.wire.protocol import READ_BYTES

    one = struct.pack(">I", body_len) + b"\xc1" * body_len
    wire = one * max(1, total // len(one))

    async def go():
        stream = asyncio.StreamReader(limit=1 << 30)
        stream.feed_data(wire)
        stream.feed_eof()
        reader = MessageReader(stream)
        most = 0
        while True:
            try:
                if await reader.next() is None:
                    return most
            except ProtocolError:
                pass
            most = max(most, len(reader.bodies) + 1)

    assert asyncio.run(go()) <= READ_BYTES // len(one) + 1

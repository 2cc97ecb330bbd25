"""The daemon's wire protocol (length-prefixed, versioned msgpack) and shared-memory frame rings."""

from __future__ import annotations

import asyncio
import multiprocessing as mp
import os
import struct

import msgpack
import numpy as np
import pytest
from fpgashare.errors import FrameError
from fpgashare.wire.protocol import MAX_MESSAGE, VERSION, ProtocolError, decode, encode, error_reply, read_message
from fpgashare.wire.shm import FrameRing, RingSpec, check_frame


def _read(data: bytes):
    async def go():
        reader = asyncio.StreamReader()
        reader.feed_data(data)
        reader.feed_eof()
        return [await read_message(reader) for _ in range(2)]
    return asyncio.run(go())


def test_messages_round_trip_with_version_and_id():
    wire = encode({"op": "hello", "id": 7, "name": "edges"}) + encode({"op": "bye", "id": 8})
    first, second = _read(wire)
    assert first == {"v": VERSION, "op": "hello", "id": 7, "name": "edges"}
    assert second["op"] == "bye"
    assert _read(b"") == [None, None]           # a clean end of stream


@pytest.mark.parametrize("wire,kind", [
    (struct.pack(">I", MAX_MESSAGE + 1) + b"x", "oversized"),
    (struct.pack(">I", 3) + b"\xc1\xc1\xc1", "malformed"),                     # not msgpack
    (struct.pack(">I", 2) + msgpack.packb([1]), "malformed"),                  # not a map
    (struct.pack(">I", 10) + b"abc", "malformed"),                             # cut short
    (b"\x00\x00", "malformed"),                                                # cut inside the header
])
def test_bad_bytes_get_a_named_kind(wire, kind):
    with pytest.raises(ProtocolError) as err:
        _read(wire)
    assert err.value.kind == kind


def test_version_and_id_are_checked_and_errors_are_replies():
    with pytest.raises(ProtocolError, match="version 99 is not supported") as err:
        decode(msgpack.packb({"v": 99, "id": 1, "op": "hello"}))
    assert err.value.kind == "version"
    with pytest.raises(ProtocolError, match="integer id"):
        decode(msgpack.packb({"v": VERSION, "op": "hello"}))
    with pytest.raises(ProtocolError, match="exceeds") as err:
        encode({"id": 1, "blob": b"x" * MAX_MESSAGE})
    assert err.value.kind == "oversized"
    answer = _read(error_reply(3, ProtocolError("frame", "frame shape is (2, 2)")))[0]
    assert answer == {"v": VERSION, "id": 3, "ok": False,
                      "error": {"kind": "frame", "message": "frame shape is (2, 2)"}}



def test_an_error_of_any_length_is_a_reply_with_its_head(fresh_seed):
    """A refusal quoting what it was sent can be longer than a message (a 1 kB network file
    made a 90 kB text): the reply then failed to encode and the connection ended unanswered.
    Whatever its length and characters, an error is a reply keeping the text's head."""
    from fpgashare.wire.protocol import MAX_ERROR_TEXT

    rng = np.random.default_rng(fresh_seed)
    for _ in range(20):
        n = int(rng.integers(0, 4 * MAX_MESSAGE))
        text = "".join(chr(c) for c in rng.integers(32, 0x10FFFF, n) if not 0xD800 <= c < 0xE000)
        answer = _read(error_reply(5, ProtocolError("bad_request", text)))[0]
        message = answer["error"]["message"]
        assert answer["id"] == 5 and answer["error"]["kind"] == "bad_request", fresh_seed
        assert message == text if len(text) <= MAX_ERROR_TEXT else message.startswith(text[:MAX_ERROR_TEXT]), fresh_seed


def _client(spec_wire, index, value, done):
    ring = FrameRing.attach(RingSpec.from_wire(spec_wire))
    ring.input(index)[:] = value
    out = int(ring.output(index)[0, 0])
    ring.close()
    done.put(out)


def test_frames_cross_processes_in_shared_memory_without_copies():
    ring = FrameRing.create(2, (4, 6), (2, 3), tag="test")
    path = f"/dev/shm/{ring.spec.name}"
    try:
        assert os.path.exists(path)
        ring.output(1)[:] = 42
        done = mp.get_context("spawn").Queue()
        proc = mp.get_context("spawn").Process(target=_client, args=(ring.spec.to_wire(), 1, 9, done))
        proc.start()
        assert done.get(timeout=30) == 42              # the client saw the daemon's output in place
        proc.join(timeout=30)
        assert proc.exitcode == 0
        assert (ring.input(1) == 9).all() and (ring.input(0) == 0).all()
        assert os.path.exists(path)                    # the client leaving does not remove it
        view = ring.input(0)
        assert np.shares_memory(view, ring.input(0)) and not view.flags.owndata
        del view
    finally:
        ring.close()
    assert not os.path.exists(path)                    # the owner's close removes the segment


def test_bad_frames_and_rings_are_named():
    with pytest.raises(FrameError, match="dtype is float32, the pipeline takes uint8"):
        check_frame(np.zeros((4, 6), np.float32), (4, 6))
    with pytest.raises(FrameError, match=r"shape is \(6, 4\), the pipeline takes \(4, 6\)"):
        check_frame(np.zeros((6, 4), np.uint8), (4, 6))
    with pytest.raises(FrameError, match="numpy array"):
        check_frame([[1]], (1, 1))
    with pytest.raises(FrameError, match="does not exist"):
        FrameRing.attach(RingSpec("fpgashare-nope-000000", 1, (2, 2), (2, 2)))
    with pytest.raises(FrameError, match="needs name"):
        RingSpec.from_wire({"name": "x"})
    ring = FrameRing.create(1, (2, 2), (2, 2))
    try:
        with pytest.raises(FrameError, match=r"outside 0\.\.0"):
            ring.input(1)
    finally:
        ring.close()


def test_a_private_ring_cannot_be_resized_by_whoever_holds_its_descriptor():
    """The daemon seals a ring's size before handing it over: truncating it (what would make the
    daemon's next read of it a bus error) fails, and so does adding a seal or growing it."""
    import fcntl

    ring = FrameRing.create_private(2, (6, 8), (6, 8))
    fd = ring.take_fd()
    try:
        for size in (0, 1, ring.nbytes - 1, ring.nbytes + 4096):
            with pytest.raises(PermissionError):
                os.ftruncate(fd, size)
        with pytest.raises(PermissionError):
            fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_WRITE)
        assert os.fstat(fd).st_size == ring.nbytes
        ring.input(1)[...] = 7                     # the daemon's mapping is whole
        client = FrameRing.attach_fd(ring.spec, os.dup(fd))
        assert int(client.input(1).sum()) == 7 * 48
        client.close()
    finally:
        os.close(fd)
        ring.close()


def test_an_unsealed_ring_descriptor_is_refused():
    spec = RingSpec("fake", 1, (4, 4), (4, 4))
    fd = os.memfd_create("fake", os.MFD_CLOEXEC)
    os.ftruncate(fd, spec.slot_bytes)
    with pytest.raises(FrameError, match="not sealed"):
        FrameRing.attach_fd(spec, fd)              # closed by attach_fd either way


def test_the_framing_decoder_gives_back_every_body_however_the_bytes_are_cut(fresh_seed):
    """Bodies framed and concatenated, fed in chunks cut at random places (a fresh seed each run):
    the same bodies come out, in order; a length over the limit is refused at its header."""
    import random

    from fpgashare.wire.framing import Decoder, FramingError, frame

    seed = fresh_seed
    rng = random.Random(seed)
    for _ in range(50):
        bodies = [rng.randbytes(rng.choice([0, 1, 3, 4, 5, 100, 4096])) for _ in range(rng.randrange(1, 20))]
        wire = b"".join(frame(b) for b in bodies)
        decoder, out, at = Decoder(4096), [], 0
        while at < len(wire):
            step = rng.randrange(1, 64)
            out += decoder.feed(wire[at:at + step])
            at += step
        assert out == bodies and decoder.pending == 0, seed
    with pytest.raises(FramingError) as refused:
        Decoder(10).feed(frame(bytes(11))[:4])
    assert refused.value.kind == "oversized"

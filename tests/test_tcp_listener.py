"""The daemon's TCP listener on loopback: a client with the token streams frames (inline) and gets
OpenCV's output; a wrong token is refused before any request; a fleet agent works through it, as a
gateway's proxy node for an armv7 board does."""

from __future__ import annotations

import os
import socket

import numpy as np
import pytest
from fpgashare.client import AdmissionRejected
from fpgashare.errors import FpgashareError
from fpgashare.fleet.board import BoardAgent
from fpgashare.simrun import resolve_chain
from fpgashare.tcp_listener import TcpListener, _recv, _send, connect_tcp, load_token
from fpgashare.vision_ref import chain_reference

from tests.test_daemon import RunningDaemon

TOKEN = b"0123456789abcdef-a-test-token"
CHAIN = ["gauss3x3", "sobel_mag"]
SHAPE = (60, 80)


@pytest.fixture
def listener(tmp_path):
    sock = tmp_path / "fpgashare.sock"
    with RunningDaemon(sock, platform="pynq-z2"):
        lst = TcpListener(sock, TOKEN, ("127.0.0.1", 0)).start()
        try:
            yield lst
        finally:
            lst.close()


def test_frames_round_trip(listener):
    fpga = connect_tcp(*listener.address, TOKEN)
    try:
        assert fpga.platform == "pynq-z2"
        pipe = fpga.pipeline("edges", CHAIN, period_ms=20.0, frame_shape=SHAPE)
        rng = np.random.default_rng(3)
        frames = [rng.integers(0, 256, SHAPE, dtype=np.uint8) for _ in range(6)]
        futures = [pipe.submit(f) for f in frames]            # several in flight on one connection
        stages = resolve_chain(CHAIN, {})
        for frame, fut in zip(frames, futures, strict=True):
            assert np.array_equal(fut.result(timeout=30), chain_reference(stages, frame))
        with pytest.raises(AdmissionRejected, match="not admitted"):     # 62% of the stream, beside edges
            fpga.pipeline("hd", CHAIN, period_ms=33.3, frame_shape=(1080, 1920))
        assert fpga.status()["pipelines"]["edges"]["outcomes"] == {"on_time": 6}
        pipe.close()
    finally:
        fpga.close()


def test_wrong_token_is_refused_before_any_request(listener):
    with pytest.raises(FpgashareError, match="authentication failed"):
        connect_tcp(*listener.address, b"not-the-token-at-all-0000")
    raw = socket.create_connection(listener.address, timeout=5)       # no answer to the challenge at all
    try:
        assert isinstance(_recv(raw)["challenge"], bytes)
        _send(raw, {"op": "hello", "id": 1})
        reply = _recv(raw)
        assert reply["ok"] is False and reply["error"]["kind"] == "auth"
        assert _recv(raw) is None                                    # and the listener hangs up
    finally:
        raw.close()


def test_token_file_must_be_private(tmp_path):
    path = tmp_path / "token"
    path.write_bytes(TOKEN)
    os.chmod(path, 0o644)
    with pytest.raises(FpgashareError, match="readable by others"):
        load_token(path)
    os.chmod(path, 0o600)
    assert load_token(path) == TOKEN
    path.write_bytes(b"short")
    with pytest.raises(FpgashareError, match="at least 16 bytes"):
        load_token(path)


def test_fleet_agent_through_the_listener(listener, tmp_path, monkeypatch):
    """The proxy node's agent for an armv7 board: the same agent, its daemon at tcp://."""
    token_file = tmp_path / "token"
    token_file.write_bytes(TOKEN)
    os.chmod(token_file, 0o600)
    monkeypatch.setenv("FPGASHARE_TOKEN_FILE", str(token_file))
    host, port = listener.address
    agent = BoardAgent("pz2", f"tcp://{host}:{port}")
    try:
        assert agent.admit("e", {"stages": CHAIN, "period_ms": 20.0, "frame_shape": list(SHAPE)})["ok"]
        refused = agent.admit("hd", {"stages": CHAIN, "period_ms": 33.3, "frame_shape": [1080, 1920]})
        assert not refused["ok"] and "not admitted" in refused["reason"]
        frame = np.full(SHAPE, 77, np.uint8)
        answer = agent.submit("e", frame)
        assert answer["outcome"] == "on_time"
        assert np.array_equal(answer["output"], chain_reference(resolve_chain(CHAIN, {}), frame))
        assert agent.submit("nope", frame)["outcome"] == "dropped"
        agent.close("e")
    finally:
        agent.fpga.close()

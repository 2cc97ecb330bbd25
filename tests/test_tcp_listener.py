"""The daemon's TCP listener on loopback: a client with the token streams frames (inline) and gets
OpenCV's output; a wrong token is refused before any request; a fleet agent works through it, as a
gateway's proxy node for an armv7 board does."""

from __future__ import annotations

import base64
import os
import socket
import time

import numpy as np
import pytest
from fpgashare.backends.simrun import resolve_chain
from fpgashare.catalogue.vision_ref import chain_reference
from fpgashare.client import AdmissionRejected, DaemonError
from fpgashare.daemon.tcp_listener import TcpListener, _recv, _send, connect_tcp
from fpgashare.daemon.tcp_token import load_token
from fpgashare.errors import FpgashareError
from fpgashare.fleet.board import BoardAgent

from tests.fork_child import in_fork_child, told_forked
from tests.test_daemon import RunningDaemon

TOKEN = b"0123456789abcdef-a-test-token"      # 29 bytes, 22 different: random enough
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


def test_a_handshake_cannot_be_replayed_or_reflected(listener):
    """Without the token: a proof seen on one connection does not open another (each has its own
    challenge), and the listener's own proof is never an oracle (a client that sends it a challenge
    gets no proof back unless its own proof held; the roles are bound into each proof)."""
    from fpgashare.wire.tcp_wire import proof

    seen = socket.create_connection(listener.address, timeout=5)      # a holder's handshake, overheard
    try:
        challenge = _recv(seen)["challenge"]
        overheard = proof(TOKEN, challenge, b"client")
        _send(seen, {"proof": overheard, "challenge": os.urandom(32)})
        assert _recv(seen)["ok"] is True
    finally:
        seen.close()
    for _ in range(3):
        again = socket.create_connection(listener.address, timeout=5)
        try:
            theirs = _recv(again)["challenge"]
            assert theirs != challenge
            _send(again, {"proof": overheard, "challenge": theirs})    # replayed, and the listener's own challenge
            reply = _recv(again)
            assert reply["ok"] is False and reply["error"]["kind"] == "auth" and "proof" not in reply
            assert _recv(again) is None
        finally:
            again.close()
    assert proof(TOKEN, challenge, b"server") != overheard                # a server's proof is no client's


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


def test_token_files_must_be_root_owned_and_random(tmp_path, fresh_seed):
    path = tmp_path / "token"
    path.write_bytes(TOKEN)
    os.chmod(path, 0o600)
    os.chown(path, 4321, -1)                       # another user could rewrite it
    with pytest.raises(FpgashareError, match="owned by uid 4321, not root"):
        load_token(path)
    os.chown(path, os.geteuid(), -1)
    for weak in (bytes(32), b"ab" * 16, b"password" * 4):
        path.write_bytes(weak)
        with pytest.raises(FpgashareError, match="does not look random"):
            load_token(path)
    rng = np.random.default_rng(fresh_seed)        # a fresh seed: any random token passes
    for _ in range(20):
        token = base64.b64encode(rng.bytes(24))
        path.write_bytes(token)
        assert load_token(path) == token, fresh_seed
    with pytest.raises(FpgashareError, match="does not look random"):
        TcpListener(tmp_path / "s.sock", bytes(32), ("127.0.0.1", 0))


def test_remote_clients_see_only_their_own_pipelines(listener):
    """The listener is root to the daemon, yet a remote status is never the admin's view."""
    one, two = connect_tcp(*listener.address, TOKEN), connect_tcp(*listener.address, TOKEN)
    try:
        one.pipeline("mine", CHAIN, period_ms=50.0, frame_shape=SHAPE)
        two.pipeline("theirs", CHAIN, period_ms=50.0, frame_shape=SHAPE)
        status = one.status()
        assert list(status["pipelines"]) == ["mine"] and not status["admin"] and len(status["clients"]) == 1
    finally:
        one.close()
        two.close()


def test_connections_over_the_cap_and_slow_handshakes_are_cut(tmp_path, monkeypatch):
    import fpgashare.daemon.tcp_listener as tcp

    monkeypatch.setattr(tcp, "AUTH_TIMEOUT_S", 0.5)
    sock = tmp_path / "fpgashare.sock"
    quota = tcp.TokenQuota(connections=3, handshakes=2, pipelines=4, messages_per_s=1000.0, inline_bytes=1 << 20)
    with RunningDaemon(sock, platform="pynq-z2"):
        lst = TcpListener(sock, TOKEN, ("127.0.0.1", 0), quota).start()
        try:
            silent = [socket.create_connection(lst.address, timeout=10) for _ in range(2)]
            for raw in silent:                        # challenged, never answer: cut at the deadline
                assert isinstance(_recv(raw)["challenge"], bytes)
            extra = socket.create_connection(lst.address, timeout=10)
            assert extra.recv(1) == b""               # a third handshake at once: closed, no challenge
            for raw in silent:
                assert _recv(raw) is None             # the deadline passed: hung up
            deadline = time.monotonic() + 10
            while quota.shaking and time.monotonic() < deadline:
                time.sleep(0.01)                      # waiting for the listener's threads to count them out
            fpga = connect_tcp(*lst.address, TOKEN)   # room again
            assert fpga.clock() >= 0
            pipes = [fpga.pipeline(f"p{i}", ["threshold"], period_ms=100.0, frame_shape=SHAPE) for i in range(4)]
            with pytest.raises(DaemonError, match="limit pipelines = 4"):
                fpga.pipeline("p4", ["threshold"], period_ms=100.0, frame_shape=SHAPE)
            with pytest.raises(DaemonError, match="exceeds"):         # over the inline budget
                pipes[0].submit(np.zeros((1080, 1920), np.uint8)).result(timeout=30)
            fpga.close()
            for raw in (*silent, extra):
                raw.close()
        finally:
            lst.close()


def test_a_remote_pipeline_recovers_after_timeouts(listener, monkeypatch):
    """Frames whose outcome does not come within the listener's wait are answered ``busy``; their
    ring slots come back when the daemon answers, so the pipeline keeps working."""
    import fpgashare.daemon.tcp_listener as tcp

    fpga = connect_tcp(*listener.address, TOKEN)
    try:
        pipe = fpga.pipeline("slow", CHAIN, period_ms=20.0, frame_shape=SHAPE)
        monkeypatch.setattr(tcp, "FRAME_WAIT_S", 0.0)          # every wait times out
        kinds = set()
        for _ in range(8):                                    # twice the ring's slots
            try:
                pipe.submit(np.zeros(SHAPE, np.uint8)).result(timeout=30)
                kinds.add("result")
            except DaemonError as exc:
                kinds.add(exc.kind)
        assert "busy" in kinds
        monkeypatch.setattr(tcp, "FRAME_WAIT_S", 30.0)
        frame = np.full(SHAPE, 99, np.uint8)
        assert np.array_equal(pipe.submit(frame).result(timeout=30), chain_reference(resolve_chain(CHAIN, {}), frame))
    finally:
        fpga.close()


def test_fuzzed_requests_over_tcp_never_get_internal(listener, fresh_seed):
    """The daemon fuzzer's requests over the listener, with inline frames good and bad (fresh seed
    each run): every one answered, none ``internal``, and the listener never hangs up."""
    from benchmarks.daemon_fuzz import fuzz_tcp

    seed = fresh_seed
    kinds = fuzz_tcp(listener.address, TOKEN, 2_000, seed, timeout_s=120)
    assert "internal" not in kinds and kinds["ok"] > 100 and kinds["bad_request"] > 100, (seed, kinds)


@pytest.mark.parametrize("fields,says", [
    ({"frame_dtype": "u1," * 100_000 + "u1"}, "frame_dtype must be a dtype name of 1..16 characters"),
    ({"frame_dtype": ["uint8"]}, "frame_dtype must be a dtype name"),
    ({"frame_shape": [1] * 10_000}, "frame_shape must be a list of at most 4 sides"),
    ({"frame_shape": [60, -80]}, "frame_shape must be a list of at most 4 sides"),
    ({"frame_shape": "60x80"}, "frame_shape must be a list"),
])
def test_an_inline_frames_layout_is_checked_before_numpy_parses_it(listener, fields, says, fresh_seed):
    """A dtype string of many fields is a valid structured dtype whose parsing alone costs the
    listener seconds and hundreds of megabytes (a board has 512 MB): refused by its length first,
    naming the field; the connection and its pipeline carry on."""
    fpga = connect_tcp(*listener.address, TOKEN)
    try:
        pipe = fpga.pipeline("p", ["threshold"], period_ms=20.0, frame_shape=SHAPE)
        frame = {"frame": bytes(SHAPE[0] * SHAPE[1]), "frame_shape": list(SHAPE), "frame_dtype": "uint8"}
        with pytest.raises(DaemonError, match=says) as err:
            fpga.request("submit", pipeline="p", **{**frame, **fields})
        assert err.value.kind == "bad_request", fresh_seed
        image = np.random.default_rng(fresh_seed).integers(0, 256, SHAPE, dtype=np.uint8)
        assert np.array_equal(pipe.submit(image).result(timeout=30),
                              chain_reference(resolve_chain(["threshold"], {}), image)), fresh_seed
    finally:
        fpga.close()


@pytest.mark.skipif(os.geteuid() != 0, reason="drops from root to another user")
def test_a_listener_started_as_root_serves_as_an_ordinary_user(tmp_path, capsys):
    """Started as root (the unit starts it so), the listener would be root to the daemon: trusted,
    exempt from every per-user quota and let into root's reserve, while every token holder is a
    tenant. Once listening it serves as ``--user`` (nobody) in the socket folder's group: the
    daemon sees that uid, and it still reaches the daemon's 0660 socket in its 0750 folder."""
    import grp
    import shutil
    import subprocess
    import sys
    import tempfile
    from pathlib import Path

    from fpgashare.daemon.tcp_listener import main

    base = Path(tempfile.mkdtemp(prefix="fpgashare-tcp-"))        # (pytest's own folders are root's alone)
    base.chmod(0o755)
    folder = base / "run"
    folder.mkdir()
    gid = grp.getgrnam("nogroup").gr_gid
    os.chown(folder, 0, gid)
    os.chmod(folder, 0o750)
    sock = folder / "fpgashare.sock"
    token = tmp_path / "token"
    token.write_bytes(base64.b64encode(os.urandom(32)))
    token.chmod(0o600)
    running = RunningDaemon(sock)
    running.daemon.socket_group = "nogroup"
    child = ("import sys; from fpgashare.daemon.tcp_listener import drop_to; from fpgashare.client import connect\n"
             "drop_to('nobody', sys.argv[1])\n"
             "with connect(sys.argv[1]) as fpga: print(fpga.status(own=True)['clients'][0]['uid'])")
    try:
        with running:
            out = subprocess.run([sys.executable, "-c", child, str(sock)], capture_output=True, text=True,
                                 timeout=60)
            assert out.returncode == 0, out.stderr
            assert int(out.stdout.split()[-1]) == 65534                      # nobody, not root
            probe = socket.socket()
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
            probe.close()
            assert main(["--socket", str(sock), "--listen", f"127.0.0.1:{port}", "--token-file", str(token),
                         "--user", "root"]) == 2
            assert "is root: token holders would be exempt" in capsys.readouterr().err
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_a_remote_client_cannot_make_the_listener_open_a_file(listener, tmp_path):
    """``dnn`` with a model that is a path ending in .onnx: the listener's client library opened
    and converted that file on the listener's host (any file its user may read, another local
    user's model included), and registered it for the remote client; a missing one told it the
    file was not there. Refused by name alike, whether the file exists; shipped names still run."""
    import shutil

    from fpgashare.dnn.onnx_shipped import SHIPPED_ONNX

    private = tmp_path / "alice" / "model.onnx"
    private.parent.mkdir()
    shutil.copy(SHIPPED_ONNX["digits_qdq"], private)
    fpga = connect_tcp(*listener.address, TOKEN)
    try:
        for path in (private, tmp_path / "missing.onnx", "relative/Model.ONNX"):
            with pytest.raises(DaemonError, match=r"a remote client names a shipped model .*never a file") as err:
                fpga.dnn("d", str(path))
            assert err.value.kind == "bad_request"
        pipe = fpga.dnn("digits", "digits_cnn")
        assert pipe.submit(np.zeros((8, 8), np.uint8)).result(timeout=30).shape == (10,)
    finally:
        fpga.close()


def test_a_fork_child_is_told_the_tcp_connection_is_its_parents_and_cannot_cut_it(listener):
    """As over the Unix socket (test_daemon.py): a child forked after ``connect_tcp`` would share
    the authenticated socket with no reader of its own (its calls hang or take the parent's
    replies) and its ``close`` would shut the parent's connection. It is told to connect again
    (``forked``), closing there drops only its copy, and the parent streams on."""
    fpga = connect_tcp(*listener.address, TOKEN)
    try:
        pipe = fpga.pipeline("edges", CHAIN, period_ms=20.0, frame_shape=SHAPE)
        def child() -> int:
            code = 1
            try:
                pipe.submit(np.zeros(SHAPE, np.uint8))
            except DaemonError as exc:
                code = 0 if told_forked(exc) else 2
            fpga.close()
            return code

        code = in_fork_child(child)
        assert code == b"\x00", code
        stages = resolve_chain(CHAIN, {})
        frame = np.arange(SHAPE[0] * SHAPE[1], dtype=np.uint8).reshape(SHAPE)
        assert np.array_equal(pipe.submit(frame).result(timeout=30), chain_reference(stages, frame))
    finally:
        fpga.close()

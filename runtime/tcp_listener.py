"""An authenticated TCP listener for a board's daemon, and its client: how a board that cannot run
a Ray node (PYNQ-Z2: armv7, 512 MB) joins a fleet through a proxy node on a gateway host.

It is off by default and needs no change to the daemon: ``python -m fpgashare.tcp_listener`` runs
beside the daemon on the board, takes TCP connections and speaks to the daemon's Unix socket as an
ordinary client (one client connection per TCP connection), so frames cross the LAN once and land
in the daemon's shared-memory ring there.

Authentication: a shared token (a file, mode 0600, the same on the board and the gateway). The
listener opens with a random 32-byte challenge; the client answers HMAC-SHA256(token, challenge)
with a challenge of its own, which the listener answers the same way (so the client knows it
reached a board that holds the token too). A wrong answer ends the connection before any request is
read. The token is never sent. There is no encryption: keep the listener on a trusted LAN or a
tunnel (WireGuard, SSH).

Messages: the daemon's framing (4-byte big-endian length, msgpack map with an id), at most
``MAX_TCP_MESSAGE`` bytes because frames travel inline: a submit carries the frame's bytes, shape
and dtype; its reply the output's.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import hashlib
import hmac
import itertools
import logging
import os
import secrets
import socket
import socketserver
import struct
import sys
import threading
from pathlib import Path

import msgpack
import numpy as np
from fpgashare.client import AdmissionRejected, DaemonError, DeadlineMissed, FrameDropped, FrameFailed, connect
from fpgashare.errors import FpgashareError

log = logging.getLogger(__name__)

HEADER = struct.Struct(">I")
MAX_TCP_MESSAGE = 32 << 20       #: a 1080p RGB frame is 6.2 MB
CHALLENGE_BYTES = 32
DEFAULT_PORT = 7411
AUTH_TIMEOUT_S = 5.0
PROTOCOL = b"fpgashare-tcp-1"


def load_token(path: str | Path) -> bytes:
    """The shared token from ``path``; refuses a file others can read."""
    path = Path(path)
    try:
        mode = path.stat().st_mode & 0o077
        token = path.read_bytes().strip()
    except OSError as exc:
        raise FpgashareError(f"token file {path}: {exc.strerror or exc}") from None
    if mode:
        raise FpgashareError(f"token file {path}: readable by others (mode {oct(mode)}); chmod 600 it")
    if len(token) < 16:
        raise FpgashareError(f"token file {path}: a token needs at least 16 bytes, has {len(token)}")
    return token


def _proof(token: bytes, challenge: bytes, role: bytes) -> bytes:
    return hmac.new(token, PROTOCOL + role + challenge, hashlib.sha256).digest()


def _send(sock: socket.socket, message: dict, lock: threading.Lock | None = None) -> None:
    body = msgpack.packb(message, use_bin_type=True)
    if len(body) > MAX_TCP_MESSAGE:
        raise FpgashareError(f"message of {len(body)} bytes exceeds {MAX_TCP_MESSAGE}")
    data = HEADER.pack(len(body)) + body
    if lock is None:
        sock.sendall(data)
    else:
        with lock:
            sock.sendall(data)


def _recv_exact(sock: socket.socket, n: int) -> bytes | None:
    chunks, got = [], 0
    while got < n:
        chunk = sock.recv(min(n - got, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def _recv(sock: socket.socket, limit: int = MAX_TCP_MESSAGE) -> dict | None:
    header = _recv_exact(sock, HEADER.size)
    if header is None:
        return None
    (length,) = HEADER.unpack(header)
    if length > limit:
        raise FpgashareError(f"message of {length} bytes exceeds {limit}")
    body = _recv_exact(sock, length)
    if body is None:
        raise FpgashareError("connection ended inside a message")
    message = msgpack.unpackb(body, raw=False)
    if not isinstance(message, dict):
        raise FpgashareError("a message must be a map")
    return message


def _array(fields: dict, prefix: str) -> np.ndarray:
    return np.frombuffer(fields[f"{prefix}"], dtype=np.dtype(fields[f"{prefix}_dtype"])).reshape(
        fields[f"{prefix}_shape"])


def _pack_array(a: np.ndarray, prefix: str) -> dict:
    a = np.ascontiguousarray(a)
    return {prefix: a.tobytes(), f"{prefix}_shape": list(a.shape), f"{prefix}_dtype": str(a.dtype)}


class _Handler(socketserver.BaseRequestHandler):
    server: TcpListener

    def handle(self) -> None:
        sock: socket.socket = self.request
        peer = f"{self.client_address[0]}:{self.client_address[1]}"
        if not self._authenticate(sock, peer):
            return
        write = threading.Lock()
        try:
            fpga = connect(self.server.socket_path)
        except FpgashareError as exc:
            _send(sock, {"id": 0, "ok": False, "error": {"kind": "gone", "message": str(exc)}})
            return
        pool = concurrent.futures.ThreadPoolExecutor(max_workers=16, thread_name_prefix="tcp-frame")
        pipes: dict = {}
        try:
            while True:
                try:
                    message = _recv(sock)
                except (FpgashareError, ValueError, msgpack.UnpackException) as exc:
                    _send(sock, {"id": -1, "ok": False, "error": {"kind": "malformed", "message": str(exc)}}, write)
                    return
                if message is None:
                    return
                rid, op = message.get("id"), message.get("op")
                if op in ("submit", "infer"):
                    pool.submit(self._frame, sock, write, pipes, rid, message)
                    continue
                try:
                    answer = self._control(fpga, pipes, op, message)
                    reply = {"id": rid, "ok": True, **answer}
                except AdmissionRejected as exc:
                    reply = {"id": rid, "ok": False, "error": {"kind": "admission", "message": str(exc)}}
                except DaemonError as exc:
                    reply = {"id": rid, "ok": False, "error": {"kind": exc.kind, "message": str(exc)}}
                except (FpgashareError, KeyError, TypeError, ValueError) as exc:
                    reply = {"id": rid, "ok": False, "error": {"kind": "bad_request", "message": f"{op}: {exc}"}}
                _send(sock, reply, write)
        except OSError as exc:
            log.info("tcp client %s: %s", peer, exc)
        finally:
            pool.shutdown(wait=True)
            fpga.close()
            log.info("tcp client %s gone", peer)

    def _authenticate(self, sock: socket.socket, peer: str) -> bool:
        sock.settimeout(AUTH_TIMEOUT_S)
        try:
            challenge = secrets.token_bytes(CHALLENGE_BYTES)
            _send(sock, {"challenge": challenge, "protocol": PROTOCOL.decode()})
            answer = _recv(sock, limit=1024)
            if (answer is None or not isinstance(answer.get("proof"), bytes)
                    or not hmac.compare_digest(answer["proof"], _proof(self.server.token, challenge, b"client"))):
                log.warning("tcp client %s: authentication failed", peer)
                _send(sock, {"ok": False, "error": {"kind": "auth", "message": "authentication failed"}})
                return False
            theirs = answer.get("challenge")
            if not isinstance(theirs, bytes) or len(theirs) != CHALLENGE_BYTES:
                return False
            _send(sock, {"ok": True, "proof": _proof(self.server.token, theirs, b"server")})
        except (OSError, FpgashareError, ValueError, msgpack.UnpackException) as exc:
            log.warning("tcp client %s: authentication failed (%s)", peer, exc)
            return False
        sock.settimeout(None)
        log.info("tcp client %s authenticated", peer)
        return True

    @staticmethod
    def _control(fpga, pipes: dict, op: str, m: dict) -> dict:
        if op == "hello":
            return {"platform": fpga.platform, "dilation": fpga.dilation}
        if op == "clock":
            return {"now": fpga.clock()}
        if op == "status":
            return {"status": fpga.status()}
        if op == "pipeline":
            fields = {k: m[k] for k in ("stages", "period_ms", "frame_shape", "deadline_ms", "params") if k in m}
            pipe = fpga.pipeline(m["name"], **fields)
            pipes[m["name"]] = pipe
            return {"deadline_ms": pipe.deadline_ms, "exec_ms": pipe.exec_ms}
        if op == "dnn":
            pipes[m["name"]] = fpga.dnn(m["name"], m["model"])
            return {}
        if op == "close":
            pipe = pipes.pop(m["pipeline"], None)
            if pipe is None:
                raise FpgashareError(f"no pipeline {m['pipeline']!r} of this connection")
            pipe.close()
            return {"closed": m["pipeline"]}
        raise FpgashareError(f"unknown op {op!r}")

    @staticmethod
    def _frame(sock, write, pipes: dict, rid, m: dict) -> None:
        try:
            pipe = pipes[m["pipeline"]]
            out = pipe.submit(_array(m, "frame")).result(timeout=pipe.fpga.timeout)
            reply = {"id": rid, "ok": True, "outcome": "done" if m["op"] == "infer" else "on_time",
                     **_pack_array(out, "output")}
        except DeadlineMissed as exc:
            reply = {"id": rid, "ok": True, "outcome": "late", "latency_ms": exc.latency_ms,
                     **_pack_array(exc.output, "output")}
        except FrameDropped as exc:
            reply = {"id": rid, "ok": True, "outcome": "dropped", "reason": exc.reason}
        except FrameFailed as exc:
            reply = {"id": rid, "ok": True, "outcome": "error", "reason": str(exc)}
        except DaemonError as exc:
            reply = {"id": rid, "ok": False, "error": {"kind": exc.kind, "message": str(exc)}}
        except (FpgashareError, KeyError, TypeError, ValueError, concurrent.futures.TimeoutError) as exc:
            message = f"{type(exc).__name__}: {exc}"
            reply = {"id": rid, "ok": False, "error": {"kind": "bad_request", "message": message}}
        try:
            _send(sock, reply, write)
        except OSError:
            pass                          # the client went away; its frames end with it


class TcpListener(socketserver.ThreadingTCPServer):
    """``TcpListener(socket_path, token, ("127.0.0.1", 0))``; ``serve_forever()`` or ``start()`` (a
    thread) and ``close()``. ``address`` is the bound (host, port)."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, socket_path: str | Path, token: bytes, address: tuple[str, int] = ("127.0.0.1", DEFAULT_PORT)):
        if len(token) < 16:
            raise FpgashareError("the TCP listener's token needs at least 16 bytes")
        self.socket_path, self.token = Path(socket_path), token
        super().__init__(address, _Handler)
        self.address = self.server_address[:2]

    def start(self) -> TcpListener:
        threading.Thread(target=self.serve_forever, name="fpgashare-tcp", daemon=True).start()
        return self

    def close(self) -> None:
        self.shutdown()
        self.server_close()


# ---- the client side (a gateway's proxy agent, or any app off the board)


class TcpFpga:
    """``connect_tcp(host, port, token)``: the calls a fleet agent makes on ``fpgashare.connect()``,
    over the listener. Frames travel inline."""

    def __init__(self, host: str, port: int, token: bytes, timeout: float = 30.0) -> None:
        self.timeout = timeout
        self._sock = socket.create_connection((host, port), timeout=timeout)
        self._sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._write = threading.Lock()
        self._ids = itertools.count(1)
        self._waiting: dict[int, concurrent.futures.Future] = {}
        self._closed = False
        hello = _recv(self._sock, limit=1024)
        if hello is None or not isinstance(hello.get("challenge"), bytes):
            raise FpgashareError(f"{host}:{port} is not an fpgashare TCP listener")
        mine = secrets.token_bytes(CHALLENGE_BYTES)
        _send(self._sock, {"proof": _proof(token, hello["challenge"], b"client"), "challenge": mine})
        answer = _recv(self._sock, limit=1024)
        if not answer or not answer.get("ok"):
            raise FpgashareError(f"{host}:{port}: authentication failed (is the token the board's?)")
        if not hmac.compare_digest(answer.get("proof", b""), _proof(token, mine, b"server")):
            raise FpgashareError(f"{host}:{port}: the listener could not prove it holds the token")
        self._sock.settimeout(None)
        threading.Thread(target=self._read, name="tcp-replies", daemon=True).start()
        hello = self.request("hello")
        self.platform, self.dilation = hello["platform"], hello["dilation"]
        self.pipelines: dict[str, TcpPipeline] = {}

    def _read(self) -> None:
        try:
            while (message := _recv(self._sock)) is not None:
                future = self._waiting.pop(message.get("id"), None)
                if future is not None:
                    future.set_result(message)
        except (OSError, FpgashareError) as exc:
            log.info("tcp connection ended: %s", exc)
        self._closed = True
        for future in list(self._waiting.values()):
            future.set_result({"ok": False, "error": {"kind": "gone", "message": "the board went away"}})
        self._waiting.clear()

    def send(self, op: str, **fields) -> concurrent.futures.Future:
        if self._closed:
            raise FpgashareError("the connection to the board is closed")
        rid = next(self._ids)
        future: concurrent.futures.Future = concurrent.futures.Future()
        self._waiting[rid] = future
        try:
            _send(self._sock, {"op": op, "id": rid, **fields}, self._write)
        except OSError as exc:
            self._waiting.pop(rid, None)
            raise FpgashareError(f"the connection to the board is closed ({exc})") from None
        return future

    def request(self, op: str, **fields) -> dict:
        reply = self.send(op, **fields).result(self.timeout)
        if not reply.get("ok"):
            error = reply["error"]
            cls = AdmissionRejected if error["kind"] == "admission" else DaemonError
            raise cls(error["kind"], error["message"])
        return reply

    def clock(self) -> float:
        return float(self.request("clock")["now"])

    def status(self) -> dict:
        return self.request("status")["status"]

    def pipeline(self, name: str, stages, period_ms: float, frame_shape, deadline_ms: float | None = None,
                 params: dict | None = None) -> TcpPipeline:
        fields = {"name": name, "stages": list(stages), "period_ms": float(period_ms),
                  "frame_shape": [int(v) for v in frame_shape], "params": params or {}}
        if deadline_ms is not None:
            fields["deadline_ms"] = float(deadline_ms)
        info = self.request("pipeline", **fields)
        pipe = TcpPipeline(self, name, "submit", info)
        self.pipelines[name] = pipe
        return pipe

    def dnn(self, name: str, model: str) -> TcpPipeline:
        self.request("dnn", name=name, model=model)
        pipe = TcpPipeline(self, name, "infer", {})
        self.pipelines[name] = pipe
        return pipe

    def close(self) -> None:
        self._closed = True
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._sock.close()


class TcpPipeline:
    def __init__(self, fpga: TcpFpga, name: str, op: str, info: dict) -> None:
        self.fpga, self.name, self.op = fpga, name, op
        self.deadline_ms, self.exec_ms = info.get("deadline_ms"), info.get("exec_ms")

    def submit(self, frame: np.ndarray) -> TcpFrameFuture:
        return TcpFrameFuture(self.fpga.send(self.op, pipeline=self.name, **_pack_array(frame, "frame")))

    def close(self) -> None:
        self.fpga.request("close", pipeline=self.name)
        self.fpga.pipelines.pop(self.name, None)


class TcpFrameFuture:
    """``result()``: the output, or DeadlineMissed / FrameDropped / FrameFailed / DaemonError."""

    def __init__(self, future: concurrent.futures.Future) -> None:
        self._future = future

    def result(self, timeout: float | None = None) -> np.ndarray:
        reply = self._future.result(timeout)
        if not reply.get("ok"):
            raise DaemonError(reply["error"]["kind"], reply["error"]["message"])
        outcome = reply["outcome"]
        if outcome == "dropped":
            raise FrameDropped(reply.get("reason") or "no reason given")
        if outcome == "error":
            raise FrameFailed(reply.get("reason") or "the hardware path failed")
        output = _array(reply, "output")
        if outcome == "late":
            raise DeadlineMissed(reply["latency_ms"], output)
        return output


def connect_tcp(host: str, port: int, token: bytes, timeout: float = 30.0) -> TcpFpga:
    """A client of the board's TCP listener at ``host:port``, authenticated with ``token``."""
    return TcpFpga(host, port, token, timeout)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m fpgashare.tcp_listener",
                                     description="An authenticated TCP listener for the board's daemon.")
    parser.add_argument("--socket", default=os.environ.get("FPGASHARE_SOCKET", "/run/fpgashare/fpgashare.sock"))
    parser.add_argument("--listen", default=f"127.0.0.1:{DEFAULT_PORT}", help="HOST:PORT (default loopback only)")
    parser.add_argument("--token-file", required=True, help="the shared token (mode 0600)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    try:
        host, _, port = args.listen.rpartition(":")
        if not host or not port.isdigit():
            raise FpgashareError(f"--listen must be HOST:PORT, not {args.listen!r}")
        listener = TcpListener(args.socket, load_token(args.token_file), (host, int(port)))
    except (FpgashareError, OSError) as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 2
    log.info("listening on %s:%d for %s", *listener.address, args.socket)
    try:
        listener.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())

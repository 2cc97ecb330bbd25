"""The client side of the board's TCP listener (runtime/daemon/tcp_listener.py): a gateway's proxy agent,
or any app off the board. ``connect_tcp(host, port, token)`` authenticates both ways and offers the
calls a fleet agent makes on ``fpgashare.connect()``; frames travel inline."""

from __future__ import annotations

import concurrent.futures
import hmac
import itertools
import logging
import secrets
import socket
import threading

import numpy as np
from fpgashare.client import AdmissionRejected, DaemonError, DeadlineMissed, FrameDropped, FrameFailed, fork_guard
from fpgashare.errors import FpgashareError
from fpgashare.wire.tcp_wire import CHALLENGE_BYTES, Reader
from fpgashare.wire.tcp_wire import array as _array
from fpgashare.wire.tcp_wire import pack_array as _pack_array
from fpgashare.wire.tcp_wire import proof as _proof
from fpgashare.wire.tcp_wire import recv as _recv
from fpgashare.wire.tcp_wire import send as _send

log = logging.getLogger(__name__)


#: After a failed send, how long to wait for the listener's parting reply (its reason for hanging up).
PARTING_READ_S = 2.0


class TcpFpga:
    """``connect_tcp(host, port, token)``: the calls a fleet agent makes on ``fpgashare.connect()``,
    over the listener. Frames travel inline."""

    def __init__(self, host: str, port: int, token: bytes, timeout: float = 30.0) -> None:
        self.timeout = timeout
        self._owner = fork_guard.Owner()        # a fork() child is told to connect again (fork_guard.py)
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
        parting = {"kind": "gone", "message": "the board went away"}
        try:
            replies = Reader(self._sock)
            while (message := replies.next()) is not None:
                future = self._waiting.pop(message.get("id"), None)
                if future is not None:
                    future.set_result(message)
                elif not message.get("ok", True) and isinstance(message.get("error"), dict):
                    parting = message["error"]      # the listener's reason for hanging up, if it does
        except (OSError, FpgashareError) as exc:
            log.info("tcp connection ended: %s", exc)
        self._closed = True
        for future in list(self._waiting.values()):
            future.set_result({"ok": False, "error": parting})
        self._waiting.clear()

    def send(self, op: str, **fields) -> concurrent.futures.Future:
        self._owner.check("connection to the board")
        if self._closed:
            raise FpgashareError("the connection to the board is closed")
        rid = next(self._ids)
        future: concurrent.futures.Future = concurrent.futures.Future()
        self._waiting[rid] = future
        try:
            _send(self._sock, {"op": op, "id": rid, **fields}, self._write)
        except OSError as exc:
            # The listener may have hung up on this very message (over its size or the token's
            # budget) after saying why: the reader settles the request with that reason at the end.
            try:
                future.result(PARTING_READ_S)
                return future
            except concurrent.futures.TimeoutError:
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
        if self._owner.inherited:            # a fork() child: its copy only, the parent's lives on
            self._sock.close()
            return
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
            raise DeadlineMissed(reply["latency_ms"], output, reply.get("reason") or "")
        return output


def connect_tcp(host: str, port: int, token: bytes, timeout: float = 30.0) -> TcpFpga:
    """A client of the board's TCP listener at ``host:port``, authenticated with ``token``."""
    return TcpFpga(host, port, token, timeout)

"""An authenticated TCP listener for a board's daemon, and its client: how a board that cannot run
a Ray node (PYNQ-Z2: armv7, 512 MB) joins a fleet through a proxy node on a gateway host.

It is off by default and needs no change to the daemon: ``python -m fpgashare.daemon.tcp_listener`` runs
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
import contextlib
import hmac
import logging
import os
import secrets
import socket
import socketserver
import sys
import threading
import time
from pathlib import Path

from fpgashare.cli.inputs import host_port
from fpgashare.client import AdmissionRejected, DaemonError, DeadlineMissed, FrameDropped, FrameFailed, connect
from fpgashare.client.pipeline import DnnPipeline
from fpgashare.client.tcp import TcpFpga, connect_tcp  # noqa: F401  (the client, where it was first)
from fpgashare.daemon.tcp_quota import TokenQuota, default_quota
from fpgashare.daemon.tcp_token import check_token, load_token
from fpgashare.dnn.models import MODELS
from fpgashare.dnn.onnx_shipped import SHIPPED_ONNX, onnx_path
from fpgashare.errors import FpgashareError
from fpgashare.wire.protocol import ProtocolError
from fpgashare.wire.tcp_wire import CHALLENGE_BYTES, DEFAULT_PORT, MAX_TCP_MESSAGE, PROTOCOL, Reader
from fpgashare.wire.tcp_wire import array as _array
from fpgashare.wire.tcp_wire import pack_array as _pack_array
from fpgashare.wire.tcp_wire import proof as _proof
from fpgashare.wire.tcp_wire import recv as _recv
from fpgashare.wire.tcp_wire import send as _send

log = logging.getLogger(__name__)

AUTH_TIMEOUT_S = 5.0             #: the whole handshake's deadline, however slowly its bytes come
FRAME_WAIT_S = 30.0              #: a remote frame's wait for its outcome; past it: ``busy`` (its slot comes back later)


def _quota(rid, limit: str, value, detail: str) -> dict:
    return {"id": rid, "ok": False, "error": {"kind": "quota", "message": f"{detail}: limit {limit} = {value}"}}


class _Handler(socketserver.BaseRequestHandler):
    server: TcpListener

    def handle(self) -> None:
        sock: socket.socket = self.request
        peer = f"{self.client_address[0]}:{self.client_address[1]}"
        quota = self.server.quota
        shaking = True
        try:
            if not self._authenticate(sock, peer):
                return
            quota.shaken()
            shaking = False
            self._serve(sock, peer, quota)
        finally:
            quota.leave(shaking)

    def _serve(self, sock: socket.socket, peer: str, quota: TokenQuota) -> None:
        write = threading.Lock()
        try:
            fpga = connect(self.server.socket_path)
        except FpgashareError as exc:
            _send(sock, {"id": 0, "ok": False, "error": {"kind": getattr(exc, "kind", "gone"), "message": str(exc)}})
            return
        pool = concurrent.futures.ThreadPoolExecutor(max_workers=16, thread_name_prefix="tcp-frame")
        pipes: dict = {}
        reader = Reader(sock, min(MAX_TCP_MESSAGE, quota.inline_bytes))
        try:
            while True:
                try:
                    message, nbytes = self._next(reader, quota)
                except (FpgashareError, ValueError) as exc:
                    kind = getattr(exc, "kind", "malformed")
                    _send(sock, {"id": -1, "ok": False, "error": {"kind": kind, "message": str(exc)}}, write)
                    return
                if message is None:
                    return
                rid, op = message.get("id"), message.get("op")
                wait = quota.take_rate()
                if wait:
                    quota.release(nbytes)
                    _send(sock, _quota(rid, "messages_per_s", quota.rate.rate, "request rate of this token too high"),
                          write)
                    time.sleep(wait)              # real waiting: this connection is not read meanwhile
                    continue
                if op in ("submit", "infer"):
                    pool.submit(self._frame, sock, write, pipes, rid, message, nbytes)
                    continue
                try:
                    reply = {"id": rid, "ok": True, **self._control(fpga, pipes, op, message, quota)}
                except AdmissionRejected as exc:
                    reply = {"id": rid, "ok": False, "error": {"kind": "admission", "message": str(exc)}}
                except DaemonError as exc:
                    reply = {"id": rid, "ok": False, "error": {"kind": exc.kind, "message": str(exc)}}
                except (FpgashareError, KeyError, TypeError, ValueError, OverflowError) as exc:
                    # (OverflowError: a field msgpack took in but the daemon's framing cannot carry)
                    reply = {"id": rid, "ok": False, "error": {"kind": getattr(exc, "kind", "bad_request"),
                                                               "message": f"{op}: {exc}"}}
                except Exception as exc:      # a bug here: said so, and the connection lives on
                    log.exception("tcp client %s: %s failed", peer, op)
                    reply = {"id": rid, "ok": False, "error": {"kind": "internal", "message": f"{op}: {exc!r}"}}
                finally:
                    quota.release(nbytes)
                _send(sock, reply, write)
        except OSError as exc:
            log.info("tcp client %s: %s", peer, exc)
        finally:
            pool.shutdown(wait=True)
            for _ in pipes:
                quota.drop_pipeline()
            fpga.close()
            log.info("tcp client %s gone", peer)

    @staticmethod
    def _next(reader: Reader, quota: TokenQuota) -> tuple[dict | None, int]:
        """The next message and the inline bytes it holds of the token's budget (reserved before
        its body is read; the caller releases them once it is answered)."""
        reserved = [0]

        def admit(length: int) -> None:
            if not quota.reserve(length, FRAME_WAIT_S):
                raise ProtocolError("quota", f"a message of {length} bytes waited {FRAME_WAIT_S:g} s for room: "
                                    f"limit inline_bytes = {quota.inline_bytes}")
            reserved[0] = length

        try:
            return reader.next(admit), reserved[0]
        except BaseException:
            quota.release(reserved[0])
            raise

    def _authenticate(self, sock: socket.socket, peer: str) -> bool:
        # One deadline for the whole handshake: a client trickling bytes is cut off at it.
        cutoff = threading.Timer(AUTH_TIMEOUT_S, _shut, (sock,))
        cutoff.start()
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
        except (OSError, FpgashareError, ValueError) as exc:
            log.warning("tcp client %s: authentication failed (%s)", peer, exc)
            return False
        finally:
            cutoff.cancel()
        log.info("tcp client %s authenticated", peer)
        return True

    @staticmethod
    def _control(fpga, pipes: dict, op: str, m: dict, quota: TokenQuota) -> dict:
        if op == "hello":
            return {"platform": fpga.platform, "dilation": fpga.dilation}
        if op == "clock":
            return {"now": fpga.clock()}
        if op == "status":                # a remote client sees its own pipelines only, never the admin view
            return {"status": fpga.status(own=True)}
        if op in ("pipeline", "dnn"):
            if not isinstance(m.get("name"), str) or m["name"] in pipes:
                raise FpgashareError(f"name must be a string not registered on this connection, got {m.get('name')!r}")
            if not quota.add_pipeline():
                raise ProtocolError("quota", f"{op} {m['name']!r}: limit pipelines = {quota.pipelines}")
            try:
                if op == "pipeline":
                    keys = ("stages", "period_ms", "frame_shape", "deadline_ms", "params")
                    fields = {k: m[k] for k in keys if k in m}
                    pipe = fpga.pipeline(m["name"], **fields)
                    answer = {"deadline_ms": pipe.deadline_ms, "exec_ms": pipe.exec_ms}
                else:
                    if not isinstance(m.get("model"), str):
                        raise FpgashareError(f"dnn {m['name']!r}: model must be a string, got {m.get('model')!r}")
                    # The client library converts the ONNX file a path names, on this host: a remote
                    # client naming one had the listener open any file it may read, for its own use.
                    if onnx_path(m["model"]) is not None and m["model"] not in SHIPPED_ONNX:
                        raise ProtocolError("bad_request", f"dnn {m['name']!r}: a remote client names a shipped "
                                            f"model ({', '.join((*MODELS, *SHIPPED_ONNX))}), never a file")
                    pipe, answer = fpga.dnn(m["name"], m["model"]), {}
            except BaseException:
                quota.drop_pipeline()
                raise
            pipes[m["name"]] = pipe
            return answer
        if op == "close":
            pipe = pipes.pop(m["pipeline"], None)
            if pipe is None:
                raise FpgashareError(f"no pipeline {m['pipeline']!r} of this connection")
            quota.drop_pipeline()
            pipe.close()
            return {"closed": m["pipeline"]}
        raise ProtocolError("unknown_op", f"unknown op {op!r}")

    def _frame(self, sock, write, pipes: dict, rid, m: dict, nbytes: int) -> None:
        future = None
        try:
            pipe = pipes[m["pipeline"]]
            future = pipe.submit(_array(m, "frame"))
            m = None                          # the inline bytes: let them go once in the ring
            out = future.result(timeout=FRAME_WAIT_S)
            reply = {"id": rid, "ok": True, "outcome": "done" if isinstance(pipe, DnnPipeline) else "on_time",
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
        except concurrent.futures.TimeoutError:
            # The daemon answers every frame in the end: its slot comes back then, so the
            # pipeline keeps working after timeouts.
            threading.Thread(target=_settle_late, args=(future,), name="tcp-late", daemon=True).start()
            reply = {"id": rid, "ok": False, "error": {"kind": "busy", "message": f"no outcome within "
                                                       f"{FRAME_WAIT_S:g} s; the frame may still end on the board"}}
        except (FpgashareError, KeyError, IndexError, TypeError, ValueError, OverflowError) as exc:
            # The frame and its fields are a remote client's: what the client library refuses to
            # turn into a frame (a shape of the wrong rank, an index past it) is that client's error.
            message = f"{type(exc).__name__}: {exc}"
            reply = {"id": rid, "ok": False, "error": {"kind": "bad_request", "message": message}}
        except Exception as exc:              # a bug here: said so, and the connection lives on
            log.exception("tcp frame failed")
            reply = {"id": rid, "ok": False, "error": {"kind": "internal", "message": repr(exc)}}
        finally:
            self.server.quota.release(nbytes)
        try:
            _send(sock, reply, write)
        except OSError:
            pass                          # the client went away; its frames end with it


def _settle_late(future) -> None:
    with contextlib.suppress(Exception):
        future.result(timeout=None)


def _shut(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)


class TcpListener(socketserver.ThreadingTCPServer):
    """``TcpListener(socket_path, token, ("127.0.0.1", 0))``; ``serve_forever()`` or ``start()`` (a
    thread) and ``close()``. ``address`` is the bound (host, port). ``quota``: the token's limits
    (default ``default_quota()``, its connections below the process's descriptor limit)."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, socket_path: str | Path, token: bytes, address: tuple[str, int] = ("127.0.0.1", DEFAULT_PORT),
                 quota: TokenQuota | None = None):
        check_token(token)
        self.socket_path, self.token = Path(socket_path), token
        self.quota = quota or default_quota()
        super().__init__(address, _Handler)
        self.address = self.server_address[:2]

    def verify_request(self, request, client_address) -> bool:
        """Over the connection cap (or too many handshakes at once): closed at once, no thread."""
        if self.quota.enter():
            return True
        log.warning("tcp client %s:%d refused: %d connections, %d in the handshake", *client_address[:2],
                    self.quota.open, self.quota.shaking)
        return False

    def handle_error(self, request, client_address) -> None:
        log.exception("tcp client %s: handler failed", client_address)

    def start(self) -> TcpListener:
        threading.Thread(target=self.serve_forever, name="fpgashare-tcp", daemon=True).start()
        return self

    def close(self) -> None:
        self.shutdown()
        self.server_close()


#: Whom a listener started as root serves as once it listens (``--user``).
TCP_USER = "nobody"


def drop_to(user: str, socket_path: str | Path) -> None:
    """Serve as ``user``, in the group of the daemon socket's folder, from now on. Started as root
    (as the unit starts it, to bind its port and read a root-owned token), the listener's daemon
    connections would be root's: trusted, exempt from every per-user quota (pipelines, ring bytes,
    frames in flight, request rate, share of the fabric) and let into the connections kept for root
    (tenants.py), while every token holder is a tenant. As ``user`` they are one tenant together,
    held to one user's quotas. FpgashareError if ``user`` is unknown or root, or the folder is
    unreadable."""
    import pwd

    folder = Path(socket_path).parent
    try:
        account, gid = pwd.getpwnam(user), folder.stat().st_gid
    except (KeyError, OSError) as exc:
        raise FpgashareError(f"cannot serve as {user!r} in the group of {folder}: {exc}") from None
    if account.pw_uid == 0:
        raise FpgashareError(f"--user {user!r} is root: token holders would be exempt from the daemon's quotas")
    os.setgroups([gid])
    os.setgid(gid)
    os.setuid(account.pw_uid)
    log.info("serving as %s (uid %d, gid %d)", user, account.pw_uid, gid)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m fpgashare.daemon.tcp_listener",
                                     description="An authenticated TCP listener for the board's daemon.")
    parser.add_argument("--socket", default=os.environ.get("FPGASHARE_SOCKET", "/run/fpgashare/fpgashare.sock"))
    parser.add_argument("--listen", type=host_port, default=("127.0.0.1", DEFAULT_PORT),
                        help="HOST:PORT (default loopback only)")
    parser.add_argument("--token-file", required=True, help="the shared token (mode 0600)")
    parser.add_argument("--user", default=TCP_USER,
                        help=f"started as root: serve as this user once listening (default {TCP_USER})")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    try:
        listener = TcpListener(args.socket, load_token(args.token_file), args.listen)
    except (FpgashareError, OSError) as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 2
    if os.geteuid() == 0:
        try:
            drop_to(args.user, args.socket)
        except (FpgashareError, OSError) as exc:
            listener.server_close()
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

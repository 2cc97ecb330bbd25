"""One socket to the daemon, shared by an app's threads: requests go out with an id, replies come
back matched to their futures by it.

There is no reader thread: a thread waiting for a reply reads the socket itself while no other
thread does, and hands the replies it meets to their waiters (a reply costs no extra thread
wake-up). A ring's descriptor rides on its reply's first byte (SCM_RIGHTS) and is paired with
the reply that says so (``ring_fd``).

When the daemon goes, every waiting request ends with an error reply: the daemon's parting error
if it sent one before closing (a quota refusing the connection, say), else ``gone``. A send that
fails because the daemon already closed still reads that parting error first, so the refusal
reaches the app typed, never as a bare 'gone' or a raw OSError.
"""

from __future__ import annotations

import array
import concurrent.futures
import itertools
import logging
import os
import select
import socket
import threading
import time
from collections import deque
from pathlib import Path

from fpgashare.client import fork_guard
from fpgashare.client.errors import DaemonError, daemon_error
from fpgashare.wire.framing import Decoder, FramingError
from fpgashare.wire.protocol import MAX_MESSAGE, ProtocolError, decode, encode

log = logging.getLogger("fpgashare.client")

RECV_BYTES = 1 << 16    #: one recv takes every reply already there
MAX_FDS = 16            #: ring descriptors one recv may bring
PARTING_READ_S = 0.5    #: after a failed send, how long to look for the daemon's parting error


#: the ancillary room one recv leaves for ring descriptors (as ``socket.recv_fds`` asks)
FDS_ROOM = socket.CMSG_LEN(MAX_FDS * array.array("i").itemsize)

class Reply:
    """One request's reply: set once, by whichever thread reads the socket, under the
    connection's lock (its waiters wait on the connection's condition, not on this). Lighter
    than a ``concurrent.futures.Future``, which a frame's trip would build, lock and notify."""

    __slots__ = ("message",)

    def __init__(self) -> None:
        self.message: dict | None = None

    def done(self) -> bool:
        return self.message is not None

    def set_result(self, message: dict) -> None:
        self.message = message

    def result(self) -> dict:
        if self.message is None:
            raise RuntimeError("no reply yet")
        return self.message


class Connection:
    """The socket and the replies' bookkeeping; ``Fpga`` (fpga.py) is the API on top."""

    def __init__(self, path: Path, timeout: float) -> None:
        self.path, self.timeout = path, timeout
        self._ids = itertools.count(1)
        self._waiting: dict[int, Reply] = {}
        self._lock = threading.Lock()
        self._turn = threading.Condition(self._lock)   # waiters sleep here while another thread reads
        self._reading = threading.Lock()               # held by the thread reading the socket
        self._closed = False          # by the app: for good
        self._lost = False            # by the daemon (or the socket)
        self._owner = fork_guard.Owner()        # the process whose connection it is (fork_guard.py)

    def _own(self) -> None:
        """Raise DaemonError ``forked`` in a fork() child using its parent's connection."""
        self._owner.check()

    def _connect(self) -> socket.socket:
        """A new socket to the daemon, with fresh reply state; raises DaemonError ``gone``."""
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(str(self.path))
        except OSError as exc:
            sock.close()
            raise DaemonError("gone", f"cannot reach the fpgashare daemon at {self.path}: "
                              f"{exc.strerror or exc}") from None
        with self._lock:
            self._sock = sock
            self._decoder = Decoder(MAX_MESSAGE)      # the wire's framing (runtime/wire/framing.py)
            self._bodies: deque[bytes] = deque()     # whole replies not yet taken
            self._fds: deque[int] = deque()            # ring descriptors received, in order
            self._last_error: dict | None = None       # an error the daemon sent unasked (before closing)
            self._lost = False
        return sock

    def _send(self, op: str, **fields) -> tuple[int, Reply]:
        """Send one request; its reply settles the returned ``Reply``."""
        self._own()
        future = Reply()
        with self._lock:
            if self._closed or self._lost:
                raise DaemonError("gone", "the connection to the daemon is closed" if self._closed
                                  else "the daemon went away")
            rid = next(self._ids)
            data = encode({"op": op, "id": rid, **fields})
            self._waiting[rid] = future
            try:
                self._sock.sendall(data)
                return rid, future
            except OSError as exc:
                self._waiting.pop(rid, None)
                self._lost = True
                failure = exc
        parting = self._parting_error()
        if parting is not None:
            raise daemon_error(parting)
        raise DaemonError("gone", f"the daemon went away: {failure.strerror or failure}")

    def _parting_error(self) -> dict | None:
        """After a failed send: what the daemon said before it closed (read from the socket, where
        it still is), or None. Every waiting request ends too."""
        if self._reading.acquire(blocking=False):
            try:
                deadline = time.monotonic() + PARTING_READ_S
                while (message := self._next_message(deadline)) is not None:
                    self._take(message)
            except (OSError, ProtocolError) as exc:
                log.debug("connection ended: %s", exc)
            finally:
                self._reading.release()
            self._fail_all(lost=True)
        return self._last_error                        # else the thread reading meets it

    def wait(self, future: Reply, timeout: float | None) -> dict:
        """The reply ``future`` stands for, read from the socket by this thread unless another
        thread is reading it; raises TimeoutError after ``timeout`` seconds (None: no limit)."""
        if not future.done():
            self._own()
        deadline = None if timeout is None else time.monotonic() + timeout
        while not future.done():
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                raise concurrent.futures.TimeoutError(f"no reply from the daemon within {timeout} s")
            if self._reading.acquire(blocking=False):
                try:
                    self._read_until(future, deadline)
                finally:
                    self._reading.release()
                    with self._turn:
                        self._turn.notify_all()            # another waiter may take the socket now
            else:
                with self._turn:
                    if not future.done() and self._reading.locked():
                        self._turn.wait(remaining)
        return future.result()

    def _read_until(self, future: Reply, deadline: float | None) -> None:
        """Read replies and settle their futures until ``future`` is settled or the deadline passes."""
        try:
            while not future.done():
                message = self._next_message(deadline)
                if message is None:
                    return                                 # the deadline passed
                self._take(message)
        except (OSError, ProtocolError) as exc:
            log.debug("connection ended: %s", exc)
            self._fail_all(lost=True)

    def _take(self, message: dict) -> None:
        """Settle the future ``message`` answers; an error nobody asked about is kept (the
        daemon's reason for closing, if it closes)."""
        with self._turn:
            waiter = self._waiting.pop(message.get("id"), None)
            if waiter is not None:
                waiter.set_result(message)
                self._turn.notify_all()
        if waiter is None and not message.get("ok", True):
            log.warning("daemon: %s", message["error"]["message"])
            self._last_error = message["error"]

    def _next_message(self, deadline: float | None) -> dict | None:
        """The next whole message from the socket, or None if the deadline passes first."""
        while True:
            if self._bodies:
                message = decode(self._bodies.popleft())
                if message.get("ring_fd"):            # its descriptor came with its first byte
                    message["fd"] = self._fds.popleft() if self._fds else None
                return message
            if deadline is not None:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not select.select([self._sock], [], [], remaining)[0]:
                    return None
            chunk, ancillary, _, _ = self._sock.recvmsg(RECV_BYTES, FDS_ROOM)
            for level, kind, data in ancillary:       # (socket.recv_fds, without its cost on every reply)
                if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                    fds = array.array("i")
                    fds.frombytes(data[:len(data) - len(data) % fds.itemsize])
                    self._fds.extend(fds)
            if not chunk:
                raise ProtocolError("malformed", "the daemon closed the connection"
                                    + (" inside a message" if self._decoder.pending else ""))
            try:
                self._bodies.extend(self._decoder.feed(chunk))
            except FramingError as exc:
                raise ProtocolError(exc.kind, f"reply: {exc}") from None

    def _fail_all(self, lost: bool = False) -> None:
        """The connection is gone: every waiting request ends with an error reply (the daemon's
        parting error if it sent one, else 'gone')."""
        with self._turn:
            if lost:
                self._lost = True
            else:
                self._closed = True
            waiting, self._waiting = self._waiting, {}
            for future in waiting.values():
                error = self._last_error or {"kind": "gone", "message": "the daemon went away"}
                future.set_result({"ok": False, "error": error})
            self._turn.notify_all()

    def _shut(self) -> None:
        """Close the socket for good: a thread reading it sees the end; descriptors nobody took close."""
        if self._owner.inherited:                 # a fork() child: its copy only, the parent's lives on
            self._closed = True
            self._sock.close()
            return
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        with self._reading:                            # wait until no thread reads it
            self._fail_all()
            self._sock.close()
            while self._fds:
                os.close(self._fds.popleft())

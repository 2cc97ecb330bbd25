"""Taking connections without letting a flood of them take the loop: the listening socket is
read by hand, a few connections a turn, each one's credentials (SO_PEERCRED) checked before
asyncio builds anything for it. A refused connection costs an accept, a short send and a close;
and all accepts together, refused or not, draw on one token bucket (ACCEPTS_PER_S): while it is
empty the socket is not read, so a connect-and-hang-up flood waits in the kernel's backlog and
costs the loop at most that rate's worth of accepts. Taking connections is control work: each
batch waits for its turn in the control lane (control_lane.py), behind the real-time path, the
socket not watched meanwhile."""

from __future__ import annotations

import asyncio
import contextlib
import grp
import logging
import os
import socket
import stat
import struct
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from fpgashare.daemon.limits import RateLimiter
from fpgashare.errors import FpgashareError
from fpgashare.wire.protocol import ProtocolError, error_reply

if TYPE_CHECKING:
    from fpgashare.daemon.control_lane import ControlLane

log = logging.getLogger("fpgashare.daemon")

ACCEPTS_PER_S = 2_000.0     #: connections taken a second, refused or not (a burst: a second's)
ACCEPT_BATCH = 16           #: connections taken a turn of the loop
BACKLOG = 128


def credentials(conn: socket.socket) -> tuple[int, int, int]:
    try:
        return struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")))
    except OSError:
        return (-1, -1, -1)


class Acceptor:
    """Reads ``listener`` on ``loop``; ``admit(uid)`` says why a connection is refused (None: it
    is taken); ``serve(reader, writer, (pid, uid, gid))`` runs a taken one; ``lane``: the control
    lane whose turns the batches take (None: at once)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, listener: socket.socket,
                 admit: Callable[[int], ProtocolError | None], serve, rate: float = ACCEPTS_PER_S,
                 lane: ControlLane | None = None) -> None:
        self.loop, self.listener, self.admit, self.serve, self.lane = loop, listener, admit, serve, lane
        self.bucket = RateLimiter(rate)
        self.refused = 0
        self._paused: asyncio.TimerHandle | None = None
        self._closed = False
        self._tasks: set[asyncio.Task] = set()
        listener.setblocking(False)
        loop.add_reader(listener.fileno(), self._readable)

    def _readable(self) -> None:
        if self.lane is None:
            self._ready()
            return
        self.loop.remove_reader(self.listener.fileno())     # not watched until its turn
        self.lane.call(self._turn)

    def _turn(self) -> None:
        if self._closed:
            return
        self._ready()
        if self._paused is None:
            self.loop.add_reader(self.listener.fileno(), self._readable)

    def _ready(self) -> None:
        for _ in range(ACCEPT_BATCH):
            if not self.bucket.take():
                self._pause(self.bucket.wait_s())
                return
            try:
                conn, _ = self.listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:             # out of descriptors: wait rather than spin
                log.warning("accept failed (%s); not accepting for 100 ms", exc)
                self._pause(0.1)
                return
            creds = credentials(conn)
            refusal = self.admit(creds[1])
            if refusal is not None:
                self.refused += 1
                with contextlib.suppress(OSError):
                    conn.setblocking(False)
                    conn.send(error_reply(-1, refusal))
                conn.close()
                continue
            task = self.loop.create_task(self._adopt(conn, creds))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    def _pause(self, seconds: float) -> None:
        self.loop.remove_reader(self.listener.fileno())
        self._paused = self.loop.call_later(max(seconds, 0.001), self._resume)

    def _resume(self) -> None:
        self._paused = None
        self.loop.add_reader(self.listener.fileno(), self._readable)

    async def _adopt(self, conn: socket.socket, creds: tuple[int, int, int]) -> None:
        try:
            reader, writer = await asyncio.open_unix_connection(sock=conn)
        except OSError:
            conn.close()
            return
        await self.serve(reader, writer, creds)

    def close(self) -> None:
        self._closed = True
        if self._paused is not None:
            self._paused.cancel()
        else:
            with contextlib.suppress(ValueError, OSError):
                self.loop.remove_reader(self.listener.fileno())
        self.listener.close()


def listen_unix(path: Path, group: str | None) -> socket.socket:
    """A listening Unix socket at ``path``, mode 0660, in ``group`` if given. A socket file already
    there is a dead daemon's (the board lock says no other daemon runs) and is replaced; any other
    file is refused, never replaced."""
    try:
        mode = path.lstat().st_mode
    except FileNotFoundError:
        mode = None
    if mode is not None and not stat.S_ISSOCK(mode):
        raise FpgashareError(f"socket path {path} exists and is not a socket; "
                             "refusing to replace it (choose another --socket or remove it)")
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        listener.bind(str(path))
        listener.listen(BACKLOG)
        os.chmod(path, 0o660)
        if group is not None:
            os.chown(path, -1, grp.getgrnam(group).gr_gid)
    except BaseException:
        listener.close()
        raise
    return listener

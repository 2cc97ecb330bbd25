"""One daemon per board: a lock file next to the socket, held for the daemon's life, and a connect
probe for a daemon that serves the socket without it. The second daemon refuses to start,
naming the first's pid."""

from __future__ import annotations

import contextlib
import fcntl
import glob
import logging
import os
import socket
import struct
from pathlib import Path

from fpgashare.errors import FpgashareError

log = logging.getLogger(__name__)

#: Named rings an older daemon (before private rings) may have left in /dev/shm.
STALE_RINGS = "/dev/shm/fpgashare-c*"


class DaemonRunningError(FpgashareError):
    """Another daemon serves this board; ``pid`` is its process id (-1 when unknown)."""

    def __init__(self, message: str, pid: int) -> None:
        super().__init__(message)
        self.pid = pid


class BoardLock:
    """``acquire`` takes ``<socket>.lock`` (flock) and writes this pid in it; ``release`` lets go."""

    def __init__(self, socket_path: Path) -> None:
        self.socket_path = socket_path
        self.path = socket_path.with_name(socket_path.name + ".lock")
        self._fd: int | None = None

    def acquire(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            pid = _read_pid(fd)
            os.close(fd)
            raise DaemonRunningError(f"another fpgashare daemon (pid {pid}) holds {self.path} and serves "
                                f"{self.socket_path}; stop it first", pid) from None
        pid = probe(self.socket_path)
        if pid is not None:
            os.close(fd)
            raise DaemonRunningError(f"another fpgashare daemon (pid {pid}) answers on {self.socket_path}; "
                                f"stop it first", pid)
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, 0)
            os.close(self._fd)
            self._fd = None


def _read_pid(fd: int) -> int:
    try:
        return int(os.pread(fd, 32, 0).decode().strip() or -1)
    except (OSError, ValueError):
        return -1


def probe(socket_path: Path) -> int | None:
    """The pid of a process accepting connections on ``socket_path`` (-1 if it cannot be told),
    or None if nothing answers there."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(1.0)
    try:
        sock.connect(str(socket_path))
    except OSError:
        return None
    try:
        creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        return struct.unpack("3i", creds)[0]
    except OSError:
        return -1
    finally:
        sock.close()


def sweep_stale_rings(pattern: str = STALE_RINGS) -> list[str]:
    """Remove named rings a dead daemon left behind (this daemon's rings have no name): those of
    this user that no live process maps (an older daemon on another board still maps its own);
    the paths removed."""
    candidates = [p for p in glob.glob(pattern) if _owned(p)]
    if not candidates:
        return []
    mapped = _mapped_shm()
    removed = []
    for path in candidates:
        if path in mapped:
            continue
        with contextlib.suppress(OSError):
            os.unlink(path)
            removed.append(path)
    if removed:
        log.warning("removed %d frame ring(s) a previous daemon left: %s", len(removed), ", ".join(removed))
    return removed


def _owned(path: str) -> bool:
    try:
        return os.stat(path).st_uid == os.geteuid()
    except OSError:
        return False


def _mapped_shm() -> set[str]:
    """Every /dev/shm file some process maps (from /proc/*/maps; unreadable ones are skipped, so
    a ring is kept when in doubt only for processes of other users, whose rings are not ours)."""
    mapped = set()
    for maps in glob.glob("/proc/[0-9]*/maps"):
        try:
            with open(maps) as f:
                for line in f:
                    at = line.find("/dev/shm/")
                    if at >= 0:
                        mapped.add(line[at:].rstrip("\n").removesuffix(" (deleted)"))
        except OSError:
            continue
    return mapped

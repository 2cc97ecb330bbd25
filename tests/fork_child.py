"""Run a check in a fork() child of the test process and bring back its one-byte verdict: for the
tests that a connection inherited through fork() is refused in the child (test_daemon.py over the
Unix socket, test_tcp_listener.py over TCP)."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable

WAIT_S = 30.0      #: a child stuck on a shared socket is killed after this; its verdict is then empty


def in_fork_child(check: Callable[[], int]) -> bytes:
    """``check()``'s code (0-255) as computed in a fork() child, or b"" if the child hung or died.
    The child does no logging and no pytest: it leaves with os._exit whatever ``check`` does."""
    read_end, write_end = os.pipe()
    child = os.fork()
    if child == 0:
        code = 255
        try:
            code = check()
        finally:
            os.write(write_end, bytes([code]))
            os._exit(0)
    os.close(write_end)
    deadline = time.monotonic() + WAIT_S
    while os.waitpid(child, os.WNOHANG) == (0, 0):
        if time.monotonic() > deadline:
            os.kill(child, signal.SIGKILL)
        time.sleep(0.01)                  # waiting for another process
    try:
        return os.read(read_end, 1)
    finally:
        os.close(read_end)


def told_forked(exc: BaseException) -> bool:
    """Whether ``exc`` is the DaemonError ``forked`` naming this (child) process."""
    return getattr(exc, "kind", None) == "forked" and str(os.getpid()) in str(exc)

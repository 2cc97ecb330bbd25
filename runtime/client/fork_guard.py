"""A connection inherited through fork() is its parent's: used from both processes, the one socket
would hand each of them parts of the other's replies (calls hang or fail with "slot not free"), and
the child closing it would shut the parent's connection down. Each connection holds an
``Owner``; in a fork() child every owner is marked, so the child is told to connect again
instead, and closing there only drops its copy of the descriptor. Shared by the Unix-socket
client (connection.py) and the TCP one (tcp.py)."""

from __future__ import annotations

import os
import weakref

from fpgashare.client.errors import DaemonError

#: Every owner of an open connection in this process, so that a fork() child can mark its copies.
_OPEN: weakref.WeakSet[Owner] = weakref.WeakSet()


class Owner:
    """Which process a connection belongs to."""

    __slots__ = ("__weakref__", "parent", "pid")

    def __init__(self) -> None:
        self.pid = os.getpid()
        self.parent: int | None = None     #: set in a fork() child: the connection is that process's
        _OPEN.add(self)

    @property
    def inherited(self) -> bool:
        """Whether this process got the connection through fork() (its copy: close only that)."""
        return self.parent is not None

    def check(self, what: str = "connection to the daemon") -> None:
        """Raise DaemonError ``forked`` in a fork() child using its parent's connection."""
        if self.parent is not None:
            raise DaemonError("forked", f"this {what} is process {self.parent}'s (inherited through fork()); "
                              f"connect again in process {os.getpid()}")


def _forked() -> None:
    for owner in list(_OPEN):
        owner.parent = owner.pid


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forked)

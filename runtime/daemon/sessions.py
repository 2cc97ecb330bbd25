"""Who the daemon serves: a client (its connection, credentials, quotas' counts) and its
pipelines' states, and how they end: a pipeline ends when its client closes it or goes (or the
daemon stops); frames waiting are answered dropped at once, frames on the fabric when they end
(driver.py), then its ring is retired."""

from __future__ import annotations

import asyncio
import logging
import os
import pwd
import socket
import struct
from dataclasses import dataclass, field

from fpgashare.daemon.limits import RateLimiter
from fpgashare.wire.shm import FrameRing

log = logging.getLogger("fpgashare.daemon")


@dataclass
class PipelineState:
    name: str                     #: the client's name for it
    key: str                      #: the engine's name (unique across clients)
    ring: FrameRing
    free: set[int]
    in_flight: dict[int, int] = field(default_factory=dict)   # frame seq -> ring slot
    closing: str | None = None    #: why it is ending, once it is


@dataclass
class Client:
    id: int
    pid: int
    uid: int
    gid: int
    writer: asyncio.StreamWriter
    rate: RateLimiter
    pipelines: dict[str, PipelineState] = field(default_factory=dict)   # by the client's name
    submits: dict[int, int] = field(default_factory=dict)    # frame seq -> request id
    shm_bytes: int = 0

    def in_flight(self) -> int:
        return sum(len(s.in_flight) for s in self.pipelines.values())


class Sessions:
    """The daemon's side of its clients (a mixin of ``Daemon``)."""

    def is_admin(self, client: Client) -> bool:
        """Root, the daemon's own user, or a member of ``limits.admin_gid``."""
        if client.uid in (0, os.getuid()):
            return True
        admin = self.limits.admin_gid
        if admin is None:
            return False
        if client.gid == admin:
            return True
        try:
            return admin in os.getgrouplist(pwd.getpwuid(client.uid).pw_name, client.gid)
        except KeyError:
            return False

    def _end_pipeline(self, client: Client, name: str, reason: str) -> None:
        state = client.pipelines[name]
        if state.closing:
            return
        state.closing = reason
        self._step(self.engine.remove_pipeline, state.key, reason)     # waiting frames are answered dropped
        if not state.in_flight:             # else frames on the fabric end first (answered dropped)
            self._retire(client, state)

    def _retire(self, client: Client, state: PipelineState) -> None:
        state.ring.close()
        if client.pipelines.get(state.name) is state:
            del client.pipelines[state.name]
            client.shm_bytes -= state.ring.nbytes
            self.shm_bytes -= state.ring.nbytes
        self.states.pop(state.key, None)
        self.stats.retired(state.key, self.states)

    def _client_gone(self, client: Client, reason: str) -> None:
        if self.clients.pop(client.id, None) is None:
            return
        for name in list(client.pipelines):
            self._end_pipeline(client, name, reason)
        log.info("client %d gone (%s)", client.id, reason)


def peer_credentials(writer: asyncio.StreamWriter) -> tuple[int, int, int]:
    sock = writer.get_extra_info("socket")
    try:
        creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        return struct.unpack("3i", creds)
    except (AttributeError, OSError):
        return (-1, -1, -1)

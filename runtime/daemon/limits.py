"""Quotas: what one client (and all together) may hold of the daemon, each refusal a ``quota``
error naming the limit and its value.

Frames faster than their pipeline's declared period are *held*, not refused: each frame moves the
pipeline's due time a period on, and a frame more than a period ahead of it waits until then (its
deadline counts from that release; runtime/sched/sources/submitted.py). Jitter passes; a faster app only
delays its own frames and cannot take slot time admission promised to others.

Requests of a client that does not read its replies are not read either (the daemon waits for
its socket to drain), so its replies cannot grow the daemon.
"""

from __future__ import annotations

import contextlib
import resource
import sys
import time
from dataclasses import dataclass

from fpgashare.errors import FpgashareError
from fpgashare.wire.protocol import ProtocolError

MIB = 1 << 20


#: Descriptors kept for the daemon's own use whatever its clients hold: the loop and its
#: self-pipe, the listening socket, the board lock, the metrics server, the backend's files, the
#: CPU workers, logging, a ring's descriptor between its creation and its hand-over.
ENGINE_FDS = 64
#: Descriptors a ring keeps in the daemon once handed over: Python's mmap holds a duplicate of
#: the file's descriptor until 3.13 (``trackfd=False``), none after.
RING_FDS = 0 if sys.version_info >= (3, 13) else 1


@dataclass(frozen=True)
class Limits:
    """Per-connection, per-user (uid, from SO_PEERCRED) and total limits; the defaults fit a board
    daemon with a few dozen apps. Every user's connections together share its user quotas, so
    opening more connections buys nothing."""

    clients: int = 64                       #: connections of users other than root, all together
    clients_per_user: int = 16              #: connections of one user
    root_reserve: int = 8                   #: connections only root may open beyond ``clients``
    pipelines_per_client: int = 16          #: real-time pipelines of one connection
    dnn_per_client: int = 4                 #: DNN pipelines of one connection
    pipelines_per_user: int = 32            #: pipelines (real-time and DNN) of one user
    shm_bytes_per_client: int = 512 * MIB   #: frame-ring bytes of one connection
    shm_bytes_per_user: int = 1024 * MIB    #: frame-ring bytes of one user
    shm_bytes_total: int = 2048 * MIB       #: frame-ring bytes of every client together
    outstanding_per_client: int = 64        #: frames and images in flight of one connection
    outstanding_per_user: int = 128         #: frames and images in flight of one user
    messages_per_s: float = 20_000.0        #: sustained request rate of one connection (burst: one second's)
    connects_per_s_per_user: float = 20.0   #: new connections a second of one user (burst: one second's)
    messages_per_s_per_user: float = 2_000.0   #: request units a second of one user (tenants.OP_COST)
    fabric_share_per_user: float = 0.5      #: share of all slots' time one user's frames may take
    descriptors_per_user: int = 0           #: connections and rings of one user (0: a quarter of the budget)
    admin_gid: int | None = None            #: members see other clients' details in status (root always)

    def fds_needed(self) -> int:
        """File descriptors the daemon may need at these limits: one per connection (root's reserve
        too) and ENGINE_FDS for itself; rings' descriptors come out of each user's own quota."""
        return self.clients + self.root_reserve + ENGINE_FDS


@dataclass(frozen=True)
class DescriptorBudget:
    """What the process's descriptor limit (RLIMIT_NOFILE) allows: ``clients`` connections of
    users other than root (at most ``Limits.clients``) and ``per_user`` descriptors (connections
    and rings) of one user; root's reserve and ENGINE_FDS are kept out of both."""

    nofile: int
    clients: int
    per_user: int

    @classmethod
    def of_process(cls, limits: Limits) -> DescriptorBudget:
        """Raise the soft limit to the hard one (a daemon's right), then split it."""
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if soft != hard and hard != resource.RLIM_INFINITY:
            with contextlib.suppress(ValueError, OSError):
                resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
                soft = hard
        return cls.split(soft, limits)

    @classmethod
    def split(cls, nofile: int, limits: Limits) -> DescriptorBudget:
        room = nofile - ENGINE_FDS - limits.root_reserve
        if room < 2:
            raise FpgashareError(f"the descriptor limit (RLIMIT_NOFILE = {nofile}) leaves no room for clients: "
                                 f"the daemon keeps {ENGINE_FDS} for itself and {limits.root_reserve} for root")
        per_user = limits.descriptors_per_user or max(2, room // 4)
        return cls(nofile, min(limits.clients, room), min(per_user, room))


def refuse(limit: str, value, detail: str) -> ProtocolError:
    return ProtocolError("quota", f"{detail}: limit {limit} = {value}")


class RateLimiter:
    """A token bucket: ``rate`` tokens a second sustained, a second's worth in a burst. A refused
    request is charged too (down to a second's debt), so a client that keeps sending while refused
    waits longer for its next token, and the refusals themselves stay within the rate."""

    def __init__(self, rate: float, now=time.monotonic) -> None:
        self.rate, self._now = rate, now
        self.tokens, self.stamp = rate, now()

    def take(self, cost: float = 1.0) -> bool:
        cost = min(cost, self.rate)          # a costly request still passes on a full bucket
        t = self._now()
        self.tokens = min(self.rate, self.tokens + (t - self.stamp) * self.rate)
        self.stamp = t
        if self.tokens >= cost:
            self.tokens -= cost
            return True
        self.tokens = max(-self.rate, self.tokens - 1.0)
        return False

    def wait_s(self, cost: float = 1.0) -> float:
        """How long until the bucket holds ``cost`` tokens again (0: it does)."""
        return max(0.0, (min(cost, self.rate) - self.tokens) / self.rate)

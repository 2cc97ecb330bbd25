"""Quotas: what one client (and all together) may hold of the daemon, each refusal a ``quota``
error naming the limit and its value.

Frames faster than their pipeline's declared period are *held*, not refused: each frame moves the
pipeline's due time a period on, and a frame more than a period ahead of it waits until then (its
deadline counts from that release; runtime/sched/online.py). Jitter passes; a faster app only
delays its own frames and cannot take slot time admission promised to others.

Requests of a client that does not read its replies are not read either (the daemon waits for
its socket to drain), so its replies cannot grow the daemon.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from fpgashare.protocol import ProtocolError

MIB = 1 << 20


@dataclass(frozen=True)
class Limits:
    """Per-client and total limits; the defaults fit a board daemon with a few dozen apps."""

    clients: int = 64                       #: connections at once
    pipelines_per_client: int = 16          #: real-time pipelines of one client
    dnn_per_client: int = 4                 #: DNN pipelines of one client
    shm_bytes_per_client: int = 512 * MIB   #: frame-ring bytes of one client
    shm_bytes_total: int = 2048 * MIB       #: frame-ring bytes of every client together
    outstanding_per_client: int = 64        #: frames and images in flight of one client
    messages_per_s: float = 20_000.0        #: sustained request rate of one client (burst: one second's)
    admin_gid: int | None = None            #: members see other clients' details in status (root always)

    def fds_needed(self) -> int:
        """File descriptors the daemon may need at these limits: one per connection, a few for the
        loop, the lock, the metrics server and the backend (rings hold none once handed over)."""
        return self.clients + 64


def refuse(limit: str, value, detail: str) -> ProtocolError:
    return ProtocolError("quota", f"{detail}: limit {limit} = {value}")


class RateLimiter:
    """A token bucket: ``rate`` messages a second sustained, a second's worth in a burst."""

    def __init__(self, rate: float, now=time.monotonic) -> None:
        self.rate, self._now = rate, now
        self.tokens, self.stamp = rate, now()

    def take(self) -> bool:
        t = self._now()
        self.tokens = min(self.rate, self.tokens + (t - self.stamp) * self.rate)
        self.stamp = t
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return True
        return False

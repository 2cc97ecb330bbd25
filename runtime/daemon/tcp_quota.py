"""What the holders of the TCP listener's token may use together (runtime/daemon/tcp_listener.py):
every remote client shares one token, so its limits are per token."""

from __future__ import annotations

import threading

from fpgashare.daemon.limits import RateLimiter


class TokenQuota:
    """What the holders of the token may use together (every remote client shares one token, so
    these are per token): connections (authenticated, and still in the handshake), pipelines,
    requests a second, and bytes of inline frames in flight (read and not yet answered) — a body
    is read only once its bytes fit, so a flood of frames waits in TCP's window, not in memory."""

    def __init__(self, connections: int, handshakes: int, pipelines: int, messages_per_s: float,
                 inline_bytes: int) -> None:
        self.connections, self.handshakes, self.pipelines = connections, handshakes, pipelines
        self.inline_bytes = inline_bytes
        self.rate = RateLimiter(messages_per_s)
        self._lock = threading.Condition()
        self.open = self.shaking = self.registered = self.in_flight = 0

    def enter(self) -> bool:
        with self._lock:
            if self.open >= self.connections or self.shaking >= self.handshakes:
                return False
            self.open += 1
            self.shaking += 1
            return True

    def shaken(self) -> None:
        with self._lock:
            self.shaking -= 1

    def leave(self, shaking: bool) -> None:
        with self._lock:
            self.open -= 1
            self.shaking -= shaking

    def take_rate(self) -> float:
        """0 if a request may go now, else how long to wait for one."""
        with self._lock:
            return 0.0 if self.rate.take() else max(self.rate.wait_s(), 1e-3)

    def reserve(self, nbytes: int, timeout: float) -> bool:
        with self._lock:
            return self._lock.wait_for(lambda: self.in_flight + nbytes <= self.inline_bytes, timeout) and \
                self._add(nbytes)

    def _add(self, nbytes: int) -> bool:
        self.in_flight += nbytes
        return True

    def release(self, nbytes: int) -> None:
        with self._lock:
            self.in_flight -= nbytes
            self._lock.notify_all()

    def add_pipeline(self) -> bool:
        with self._lock:
            if self.registered >= self.pipelines:
                return False
            self.registered += 1
            return True

    def drop_pipeline(self) -> None:
        with self._lock:
            self.registered -= 1


def default_quota() -> TokenQuota:
    """The token's limits: 32 connections (fewer if the descriptor limit is low: each holds its
    TCP socket, its daemon connection and its rings' mappings), 8 handshakes at once, 32
    pipelines, 2,000 requests a second, 256 MiB of inline frames in flight."""
    import resource

    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    connections = max(1, min(32, (soft - 64) // 8))
    return TokenQuota(connections, min(8, connections), 32, 2000.0, 256 << 20)

"""The configuration port as a resource: one load at a time, in request order, never preempted."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field


@dataclass
class LoadRequest:
    slot: int
    module: str
    reason: str = "demand"          #: "demand" (a job waits for it) or "prefetch"
    attempts: int = 0
    stamp: float = 0.0              #: when the work it serves was requested (a FIFO port orders by it)


@dataclass
class ConfigPort:
    """FIFO of pending loads; ``busy_until`` is when the load in flight ends (None when idle)."""

    queue: deque[LoadRequest] = field(default_factory=deque)
    current: LoadRequest | None = None
    busy_until: float | None = None
    busy_s: float = 0.0
    loads: int = 0

    def pending_for(self, slot: int) -> LoadRequest | None:
        if self.current is not None and self.current.slot == slot:
            return self.current
        return next((r for r in self.queue if r.slot == slot), None)

    def start(self, request: LoadRequest, now: float, seconds: float) -> None:
        assert self.current is None, "the port carries one load at a time"
        self.current, self.busy_until = request, now + seconds
        self.busy_s += seconds
        self.loads += 1

    def finish(self) -> LoadRequest:
        request, self.current, self.busy_until = self.current, None, None
        assert request is not None
        return request

"""One configuration port shared by several partitions of the fabric (runtime/sched/board/board.py):
loads are granted round-robin over the partitions that have one queued (``edf``), or in the order
of their requests' time stamps (``fifo``: FRED's reconfiguration queue, runtime/sched/policies/fred.py).

Why this bounds the wait: every partition keeps at most one load queued or in flight (``edf``
issues a committed frame's loads one at a time and a side load only onto an idle port), and the
grant goes to the next partition after the last one served. So between a partition's request and
its load's start, at most one load of every other partition runs: a load ends within its own
time plus ``partitions - 1`` of the board's longest, the load time the analysis of each partition
counts (``analysis.analyse(port_share=..., board_load_s=...)``). A side load (prefetch, pins,
lending) that must be hidden under a running job is issued only when no other partition waits and
the port is idle (``free_for``), so it starts at once and its own L is all it takes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fpgashare.sched.core.engine import Engine


class PortArbiter:
    """Round-robin grants of the one port to partition engines."""

    def __init__(self, order: str = "round-robin") -> None:
        if order not in ("round-robin", "fifo"):
            raise ValueError(f"unknown port order {order!r}: round-robin or fifo")
        self.order = order
        self.engines: list[Engine] = []
        self.owner: Engine | None = None
        self.busy_until: float | None = None
        self._next = 0

    def add(self, engine: Engine) -> None:
        self.engines.append(engine)
        engine.port.arbiter = self

    @staticmethod
    def _waiting(engine: Engine) -> bool:
        port = engine.slots.port
        return bool(port.queue) and port.current is None

    def _order(self) -> list[Engine]:
        n = len(self.engines)
        if n == 1:
            return self.engines
        rr = [self.engines[(self._next + k) % n] for k in range(n)]
        if self.order == "fifo":
            return sorted(rr, key=lambda e: e.slots.port.queue[0].stamp if e.slots.port.queue else float("inf"))
        return rr

    def may_start(self, engine: Engine) -> bool:
        """Whether ``engine``'s queued load may take the port now (it is idle and this is the first
        partition in round-robin order with a load waiting)."""
        if self.owner is not None:
            return False
        first = next((e for e in self._order() if self._waiting(e)), None)
        return first is engine

    def started(self, engine: Engine, end: float) -> None:
        self.owner, self.busy_until = engine, end
        self._next = (self.engines.index(engine) + 1) % len(self.engines)

    def finished(self, engine: Engine) -> None:
        if self.owner is engine:
            self.owner, self.busy_until = None, None

    def free_for(self, engine: Engine) -> bool:
        """Whether a load ``engine`` queues now would start at once: the port is idle and no other
        partition has a load waiting."""
        return self.owner is None and not any(self._waiting(e) for e in self.engines if e is not engine)

    def owed_elsewhere(self, engine: Engine, now: float) -> float:
        """Port time other partitions hold before ``engine``'s next load could start (estimated:
        the load in flight and one queued load of every other partition)."""
        owed = (self.busy_until - now) if self.owner is not None and self.owner is not engine else 0.0
        return owed + sum(e.port.longest_load_s() for e in self.engines if e is not engine and self._waiting(e))

    def grant(self) -> None:
        """Start the next waiting load if the port is idle (called after every step of the loop)."""
        while self.owner is None:
            first = next((e for e in self._order() if self._waiting(e)), None)
            if first is None:
                return
            first._advance(first.now)
            first.port.kick()
            if self.owner is None and self._waiting(first):
                return          # could not start (a fault path left it queued): next step retries


def step_partitions(engines: list[Engine], arbiter: PortArbiter, t: float) -> None:
    """One step of several partitions at ``t``: every engine with an event due takes its events,
    then the port goes to the next partition with a load waiting; if it fell idle, the partitions
    are asked again (a side load one of them held back may go now)."""
    port_was_busy = arbiter.owner is not None
    for engine in engines:
        nxt = engine.next_event_s()
        if nxt is not None and nxt <= t:
            engine.advance_to(t)
    if len(engines) > 1:            # one partition's own step already gave it the port
        arbiter.grant()
    if port_was_busy and arbiter.owner is None:
        for engine in engines:
            engine.poke()

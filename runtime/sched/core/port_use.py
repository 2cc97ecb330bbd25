"""The engine's use of the one configuration port (``PortDriver``, a part of the engine): starting
the next queued load when the port frees, taking a load's end, and what loads cost in port time."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from fpgashare.sched.core.jobs import LOAD_DONE, WAKE, TraceEvent
from fpgashare.sched.core.slots import SlotState

if TYPE_CHECKING:
    from fpgashare.sched.core.engine_state import EngineState

log = logging.getLogger("fpgashare.sched.core.engine")


class PortDriver:
    """Drives the loads of one engine's slots through the configuration port. ``arbiter`` is the
    shared port's round-robin grants when the engine runs one partition of the fabric
    (runtime/sched/board/port_share.py); None: the port is this engine's alone."""

    def __init__(self, engine: EngineState) -> None:
        self.engine = engine
        self.arbiter = None
        self.by_reason: dict[str, float] = {}    #: port seconds by load reason (demand, prefetch, ...)
        self.started: dict[int, float] = {}      #: slot -> when its load in flight started
        self._load_s: dict[int, float] = {}
        self._longest_load_s: float | None = None
        self._shortest_load_s: float | None = None

    def kick(self) -> None:
        """Start the next queued load if the port (and, when shared, the arbiter) lets it."""
        engine = self.engine
        slots = engine.slots
        if not slots.port.queue:
            return
        arbiter = self.arbiter
        if arbiter is not None and not arbiter.may_start(engine):
            return                  # another partition's load is on the port, or its turn is first
        now = engine.now
        request = slots.port.queue[0] if slots.port.queue else None
        quarantined = slots.quarantined
        end = slots.start_next(now)
        if slots.quarantined != quarantined:
            # A load that could not even start quarantined its slot: no completion will come, so
            # the engine takes it as an event now (frames and mode changes waiting on it move on).
            engine.push(now, WAKE, None)
        if end is not None and request is not None:
            self.started[request.slot] = now
            engine.when_done(slots.in_flight, end, LOAD_DONE, None)
            if arbiter is not None:
                arbiter.started(engine, end)

    def shared(self) -> bool:
        """Whether another partition may load through the same port after the first release (its
        loads may come between this one's; a quiet partition's never do)."""
        return self.arbiter is not None and any(e.loads_after_t0 for e in self.arbiter.engines
                                                if e is not self.engine)

    def free(self) -> bool:
        """Whether a load queued now would start at once (no load in flight or queued, here or, on a
        shared port, in another partition)."""
        port = self.engine.slots.port
        if port.current is not None or port.queue:
            return False
        return self.arbiter is None or self.arbiter.free_for(self.engine)

    def load_done(self) -> None:
        """The load in flight ended: count its port time and trace it."""
        engine = self.engine
        if self.arbiter is not None:
            self.arbiter.finished(engine)
        request, ok = engine.slots.finish(engine.now)
        now = engine.now
        started = self.started.pop(request.slot, now)
        self.by_reason[request.reason] = self.by_reason.get(request.reason, 0.0) + now - started
        engine.trace.append(TraceEvent("port", f"load {request.module} -> slot {request.slot}", started, now,
                                       {"ok": ok, "reason": request.reason}))
        if not ok and engine.slots.slots[request.slot].state == SlotState.FAILED:
            log.error("slot %d quarantined", request.slot)

    def backlog_s(self) -> float:
        """Port time still owed: the load in flight plus every queued one (estimated)."""
        engine = self.engine
        port = engine.slots.port
        owed = (port.busy_until - engine.now) if port.busy_until is not None else 0.0
        if self.arbiter is not None:
            owed += self.arbiter.owed_elsewhere(engine, engine.now)
        return owed + sum(self.load_seconds(r.slot) for r in port.queue) if port.queue else owed

    def load_seconds(self, slot: int) -> float:
        """Port time of one load into ``slot`` (a partial bitstream's length is set by its slot)."""
        if slot not in self._load_s:
            self._load_s[slot] = self.engine.backend.platform.slot_load_seconds(slot)
        return self._load_s[slot]

    def shortest_load_s(self) -> float:
        """Port time of the shortest load into any slot (a lower bound for any load)."""
        if self._shortest_load_s is None:
            self._shortest_load_s = min((self.load_seconds(s.index) for s in self.engine.slots.slots), default=0.0)
        return self._shortest_load_s

    def longest_load_s(self) -> float:
        """Port time of the longest load into any slot (an estimate when the slot is not chosen yet)."""
        if self._longest_load_s is None:
            self._longest_load_s = max((self.load_seconds(s.index) for s in self.engine.slots.slots), default=0.0)
        return self._longest_load_s

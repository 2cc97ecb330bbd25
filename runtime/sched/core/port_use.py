"""The engine's use of the one configuration port (a mixin of ``Engine``): starting the next
queued load when the port frees, taking a load's end, and what loads cost in port time."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from fpgashare.sched.core.jobs import LOAD_DONE, TraceEvent
from fpgashare.sched.core.slots import SlotState

if TYPE_CHECKING:
    from fpgashare.sched.core.engine import Engine

log = logging.getLogger("fpgashare.sched.core.engine")


class PortUse:
    def _kick_port(self: Engine) -> None:
        if not self.slots.port.queue:
            return
        arbiter = self.port_arbiter
        if arbiter is not None and not arbiter.may_start(self):
            return                  # another partition's load is on the port, or its turn is first
        now = self.now
        request = self.slots.port.queue[0] if self.slots.port.queue else None
        end = self.slots.start_next(now)
        if end is not None and request is not None:
            self._load_started[request.slot] = now
            self.when_done(self.slots.in_flight, end, LOAD_DONE, None)
            if arbiter is not None:
                arbiter.started(self, end)

    def port_free(self: Engine) -> bool:
        """Whether a load queued now would start at once (no load in flight or queued, here or, on a
        shared port, in another partition)."""
        port = self.slots.port
        if port.current is not None or port.queue:
            return False
        return self.port_arbiter is None or self.port_arbiter.free_for(self)

    def _load_done(self: Engine) -> None:
        if self.port_arbiter is not None:
            self.port_arbiter.finished(self)
        request, ok = self.slots.finish(self.now)
        started = self._load_started.pop(request.slot, self.now)
        self.port_by_reason[request.reason] = self.port_by_reason.get(request.reason, 0.0) + self.now - started
        self.trace.append(TraceEvent("port", f"load {request.module} -> slot {request.slot}", started, self.now,
                                     {"ok": ok, "reason": request.reason}))
        if not ok and self.slots.slots[request.slot].state == SlotState.FAILED:
            log.error("slot %d quarantined", request.slot)

    def port_backlog_s(self: Engine) -> float:
        """Port time still owed: the load in flight plus every queued one (estimated)."""
        port = self.slots.port
        owed = (port.busy_until - self.now) if port.busy_until is not None else 0.0
        if self.port_arbiter is not None:
            owed += self.port_arbiter.owed_elsewhere(self, self.now)
        return owed + sum(self.load_seconds(r.slot) for r in port.queue) if port.queue else owed

    def load_seconds(self: Engine, slot: int) -> float:
        """Port time of one load into ``slot`` (a partial bitstream's length is set by its slot)."""
        if slot not in self._load_s:
            self._load_s[slot] = self.backend.platform.slot_load_seconds(slot)
        return self._load_s[slot]

    def shortest_load_s(self: Engine) -> float:
        """Port time of the shortest load into any slot (a lower bound for any load)."""
        return min((self.load_seconds(s.index) for s in self.slots.slots), default=0.0)

    def longest_load_s(self: Engine) -> float:
        """Port time of the longest load into any slot (an estimate when the slot is not chosen yet)."""
        if self._longest_load_s is None:
            self._longest_load_s = max((self.load_seconds(s.index) for s in self.slots.slots), default=0.0)
        return self._longest_load_s

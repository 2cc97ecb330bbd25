"""When the host breaks the admission's assumption: the loop takes an engine event later than the
analysis allows, and which misses that explains.

The guarantee (docs/guarantee.md, "The host as a resource") holds for a host that starts every
fabric operation within ``Board.op_delay_s`` of the engine's event for it: the loop's busy-period
bound for the admitted set (0 for a host taken as free, ``--host-reserve-ms 0``). The engine
decides at the clock's now, so an event taken later than that (the process descheduled on a
loaded machine, swapped out, stopped in a debugger) starts its load or pass late, and a frame
admitted with no slack to spare for it may miss. That is not the schedule failing: it is the host
stepping outside the contract the schedule was proven under, and the daemon says so.

``HostOverruns`` is told how late the loop takes engine events (their time against the clock):
the first of each step, which its timer woke it for; once a simulated operation in the step
has held the loop longer than the admission allows, each event the step takes after it; and, once
the decision on each event is over, that event against the clock less what simulated operations
held it meanwhile (the operations the decision started began by then: a submit's step, owed no
timer, may start its frame's pass late). It keeps the overruns of the
recent past (board time) and, for a frame that missed while its pipeline was still admitted,
names the worst overrun in the frame's reach: from one longest period-plus-deadline of the set
before the frame came until it ended. The reason the app gets then says the host ran late, by how
much, and what the admission allowed; the daemon's status counts the overruns. A miss with no
overrun in reach is not labelled: it is the schedule's, and a bug (the soundness benchmarks look
for exactly those on a virtual clock).
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Iterable

log = logging.getLogger("fpgashare.daemon")

#: Overruns whose events lie within this much board time of each other are kept as one (their
#: worst): a stall makes every event due inside it late, and one record per stall is enough.
COALESCE_S = 1e-3
#: The daemon logs an overrun once per this many board seconds at most (a stall late by seconds would
#: otherwise log every event it delayed).
LOG_EVERY_S = 1.0
#: How a miss the host caused begins its reason (apps and tests look for it).
HOST_LATE = "the host ran the board's loop"


class HostOverruns:
    """Engine events the loop took later than the admission allows (module docstring)."""

    def __init__(self, dilation: float = 1.0) -> None:
        self.dilation = dilation
        self.count = 0                   #: overruns seen (coalesced: one per stall)
        self.worst_s = 0.0               #: the largest, board seconds beyond the event's time
        self.allowed_s = 0.0             #: what the admission allowed at the worst one
        self.recent: deque[tuple[float, float, float]] = deque()   #: (event due, late by, allowed)
        self._logged_at = float("-inf")

    def observe(self, due_s: float, now_s: float, allowed_s: float, horizon_s: float) -> None:
        """The earliest event due at ``due_s`` is taken at ``now_s`` (board seconds); the admission
        allows ``allowed_s``. Overruns older than ``horizon_s`` before now are forgotten."""
        late = now_s - due_s
        while self.recent and self.recent[0][0] < now_s - horizon_s:
            self.recent.popleft()
        if late <= allowed_s:
            return
        if self.recent and due_s - self.recent[-1][0] <= COALESCE_S:
            last_due, last_late, last_allowed = self.recent[-1]
            if late - allowed_s > last_late - last_allowed:
                self.recent[-1] = (last_due, late, allowed_s)
        else:
            self.count += 1
            self.recent.append((due_s, late, allowed_s))
        if late - allowed_s > self.worst_s - self.allowed_s:
            self.worst_s, self.allowed_s = late, allowed_s
        if now_s - self._logged_at >= LOG_EVERY_S:
            self._logged_at = now_s
            # Told at INFO: most overruns cost no frame (the slack absorbs them); a frame that
            # misses is told at WARNING with its overrun (``explain``'s caller).
            log.info(HOST_LATE + " %.3f ms late (%.1f ms of wall time); the admission "
                     "allows %.3f ms: frames due meanwhile are not covered by the guarantee",
                     late * 1e3, late * self.dilation * 1e3, allowed_s * 1e3)

    def explain(self, since_s: float, until_s: float) -> str | None:
        """Why a frame that missed, in reach from ``since_s`` to ``until_s`` (board seconds), is
        the host's doing: its worst overrun in that span, or None if there was none."""
        worst = max(((late, allowed) for due, late, allowed in self.recent if since_s <= due <= until_s),
                    default=None, key=lambda item: item[0] - item[1])
        if worst is None:
            return None
        late, allowed = worst
        wall_ms = late * self.dilation * 1e3
        return (f"{HOST_LATE} {late * 1e3:.3f} ms late meanwhile ({wall_ms:.1f} ms of wall time; "
                f"the admission allows {allowed * 1e3:.3f} ms)")

    def summary(self) -> dict:
        """For the daemon's status: how many overruns, the worst and what was allowed then (ms)."""
        return {"count": self.count, "worst_ms": round(self.worst_s * 1e3, 4),
                "allowed_ms": round(self.allowed_s * 1e3, 4)}


def reach_s(periods_and_deadlines: Iterable[tuple[float, float]]) -> float:
    """How far back before a frame came a late step can still make it miss, taken as the set's
    longest period plus deadline (a late load or pass delays the next frames of every pipeline
    sharing its slots within a busy period, which the admitted set keeps below that)."""
    return max((p + d for p, d in periods_and_deadlines), default=0.0)

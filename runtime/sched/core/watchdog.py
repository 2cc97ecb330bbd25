"""The watchdog: a load or a frame still not done well after its expected end is ended with a
``HardwareTimeout`` and its slots reset, so a hung module or DMA costs its own work, never the
board. Hardware completions are not waited for: at a load's or frame's expected end the engine
asks the backend whether it is done (``Pending.ready``) and, if not, looks again a little later
until the limit (a fraction of the expected time, plus a floor)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fpgashare.backends.base import Pending
from fpgashare.errors import HardwareTimeout
from fpgashare.sched.core.jobs import JOB_DONE, LOAD_DONE

if TYPE_CHECKING:
    from fpgashare.sched.core.engine_state import EngineState
    from fpgashare.sched.core.jobs import Frame

MARGIN = 1.0          #: allowed overrun, as a fraction of the expected time
FLOOR_S = 0.002       #: ... plus this
POLL_S = 0.0005       #: how often an overdue end is looked at again


class Watchdog:
    """Checks the engine's loads and frames at their expected ends (module docstring)."""

    def __init__(self, engine: EngineState, margin: float = MARGIN, floor_s: float = FLOOR_S) -> None:
        self.engine = engine
        self.margin, self.floor_s = margin, floor_s
        self.fired = 0                    #: loads and frames it ended

    def _limit(self, started: float, seconds: float) -> float:
        return started + seconds * (1.0 + self.margin) + self.floor_s

    def hold_load(self) -> bool:
        """At a load's expected end: True if it is not done and may still be (it is looked at
        again); past its limit it is ended as timed out (the port then takes it as failed)."""
        e = self.engine
        pending, request = e.slots._pending, e.slots.port.current
        if pending is None or request is None or pending.ready():
            return False
        limit = self._limit(e.port.started.get(request.slot, e.now), pending.seconds)
        if e.now < limit:
            e.push(min(limit, e.now + POLL_S), LOAD_DONE, None)
            return True
        self.fired += 1
        e.slots._pending = timed_out(f"load of {request.module} into slot {request.slot}", pending.seconds)
        return False

    def hold_frame(self, frame: Frame) -> bool:
        """At a frame's expected end: True if its DMA is not done and may still be (looked at
        again). Past its limit it ends as timed out here, its slots reset through the decoupler
        (and loaded again when needed); True then too."""
        e = self.engine
        work = e.stream.works.get(frame.key)
        if work is None or work.ready():
            return False
        limit = self._limit(frame.streamed[-1][0], work.seconds)
        if e.now < limit:
            frame.expected_end = min(limit, e.now + POLL_S)
            e.stream.changed()
            e.push(frame.expected_end, JOB_DONE, frame)
            return True
        self.fired += 1
        e.stream.works[frame.key] = timed_out(f"frame {frame.key} on slots {list(frame.slots)}", work.seconds)
        e.stream.job_done(frame)
        e.slots.reset(frame.slots, e.now)
        return True


def timed_out(what: str, seconds: float) -> Pending:
    """Work whose result raises the watchdog's ``HardwareTimeout``."""
    def overrun():
        raise HardwareTimeout(f"watchdog: {what} overran its expected {seconds * 1e3:.3f} ms; slot reset")
    return Pending(seconds, overrun)

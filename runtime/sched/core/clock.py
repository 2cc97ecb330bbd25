"""Injectable clocks: the same scheduler code runs under virtual time (simulation, benchmarks,
tests) and wall-clock time (the daemon on a board)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Protocol


class Clock(Protocol):
    def now(self) -> float:
        """Seconds since the clock's epoch."""
        ...

    def wait_until(self, t: float) -> None:
        """Return once now() >= t (virtual clocks jump, wall clocks sleep)."""
        ...


class VirtualClock:
    """Time that moves only when the engine says so: deterministic, as fast as the host allows."""

    def __init__(self, start: float = 0.0) -> None:
        self._now = start

    def now(self) -> float:
        return self._now

    def wait_until(self, t: float) -> None:
        if t < self._now:
            raise ValueError(f"virtual time cannot go back from {self._now} to {t}")
        self._now = t


class WallClock:
    """Monotonic host time from the moment the clock is made, optionally dilated: with
    ``dilation`` d, one second of this clock lasts d seconds of wall time (the simulated board is
    slower than the hardware it stands for, so a daemon on it runs time d times slower)."""

    def __init__(self, dilation: float = 1.0, monotonic: Callable[[], float] = time.monotonic) -> None:
        """``monotonic``: the host's time source (a test's fake one keeps the test off the wall clock)."""
        if not dilation > 0:
            raise ValueError(f"dilation must be > 0, got {dilation}")
        self.dilation = dilation
        self._monotonic = monotonic
        self._t0 = monotonic()
        self._held = 0.0                    # wall seconds the clock stood still
        self._frozen: float | None = None   # the reading while an operation is being simulated
        #: Clock seconds that passed while simulated operations held it, in all: the host computing
        #: them (below their hardware time), or their hardware time (beyond it). The loop could take
        #: no event meanwhile (the daemon's driver reads it: runtime/daemon/driver.py).
        self.simulated_s = 0.0

    def now(self) -> float:
        frozen = self._frozen
        if frozen is not None:
            return frozen
        return (self._monotonic() - self._t0 - self._held) / self.dilation

    def hold(self) -> None:
        """A simulated operation starts: the clock stands still until ``release``."""
        self._frozen = self.now()

    def release(self, wall_s: float, board_s: float) -> None:
        """The operation took ``wall_s`` of host time for ``board_s`` of hardware time: where the
        host was slower (a simulated board), the clock stays held back by the difference, so the
        operation lasts exactly its hardware time on this clock (time from cycles, not from the
        host's speed); a faster-than-hardware operation changes nothing."""
        excess = wall_s - board_s * self.dilation
        if excess > 0:
            self._held += excess
        frozen, self._frozen = self._frozen, None
        if frozen is not None:
            self.simulated_s += max(0.0, self.now() - frozen)

    def wait_until(self, t: float) -> None:
        delay = (t - self.now()) * self.dilation
        if delay > 0:
            time.sleep(delay)   # real waiting: this is the wall clock, not a simulated duration

"""The daemon loop's own latency: how late a callback runs after the time it was due (its
*dispatch delay*). Everything real-time in the daemon is such a callback — a frame's end, a
load's end, the next release are timers on the loop — so if the loop is busy (a request that
computes, a flood), this is where it shows, before any frame misses.

A probe timer every ``period_s`` wall seconds measures it, and so does every engine timer that
fires (driver.py). The newest WINDOW samples give the percentiles in ``status`` (``loop``) and
in the metrics (``fpgashare_loop_dispatch_delay_seconds``).
"""

from __future__ import annotations

import asyncio
from collections import deque

import numpy as np

WINDOW = 20_000            #: newest samples kept (at the default period: 100 s of probes)
PROBE_PERIOD_S = 0.005     #: wall seconds between probes


class LoopLatency:
    """Dispatch delays of the loop's timers, in wall seconds."""

    def __init__(self, period_s: float = PROBE_PERIOD_S) -> None:
        self.period_s = period_s
        self.samples: deque[float] = deque(maxlen=WINDOW)
        self.count, self.worst = 0, 0.0
        self._handle: asyncio.TimerHandle | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.observers: list = []       #: called with each sample (the metrics' histogram)

    def record(self, delay_s: float) -> None:
        delay_s = max(0.0, delay_s)
        self.samples.append(delay_s)
        self.count += 1
        self.worst = max(self.worst, delay_s)
        for observe in self.observers:
            observe(delay_s)

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._arm()

    def _arm(self) -> None:
        due = self._loop.time() + self.period_s
        self._handle = self._loop.call_at(due, self._fired, due)

    def _fired(self, due: float) -> None:
        self.record(self._loop.time() - due)
        self._arm()

    def stop(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def summary(self) -> dict:
        """p50, p99, p99.9 and the worst delay in milliseconds, over the newest samples."""
        return summarize(self.snapshot())

    def snapshot(self) -> tuple[list[float], int, float]:
        """What ``summary`` needs, copied (cheap, on the loop); ``summarize`` it anywhere."""
        return list(self.samples), self.count, self.worst


def summarize(snapshot: tuple[list[float], int, float]) -> dict:
    """``LoopLatency.summary`` of a ``snapshot`` (its percentiles: off the loop, in ``status``)."""
    samples, count, worst = snapshot
    if not samples:
        return {"samples": 0, "p50_ms": 0.0, "p99_ms": 0.0, "p999_ms": 0.0, "max_ms": 0.0}
    p50, p99, p999 = np.percentile(np.asarray(samples, dtype=np.float64), [50, 99, 99.9]) * 1e3
    return {"samples": count, "p50_ms": round(float(p50), 4), "p99_ms": round(float(p99), 4),
            "p999_ms": round(float(p999), 4), "max_ms": round(worst * 1e3, 4)}

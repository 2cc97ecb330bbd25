"""The arrival curve the admission analysis assumes for a pipeline's frames, kept per pipeline.

A pipeline declares a period T and a release jitter J: its frames may come up to J late against
a grid of period T, so any k frames span at least (k - 1) T - J. The demand bound counts no more
than that (runtime/sched/analysis/schedulability.py). The daemon's frames come when apps send them, so the
engine enforces the curve: frame k is released no earlier than max over released frames i of
r_i + (k - i) T - J, which is ``grid + k T - J`` with ``grid`` = max(r_i - i T). Frames that come
as declared are never held; a frame sent early is released at the earliest the curve allows.
"""

from __future__ import annotations

import math

from fpgashare.catalogue.workload import PipelineSpec


class ArrivalCurves:
    """Per pipeline: frames submitted, and the curve's state for releases decided and taken."""

    def __init__(self) -> None:
        self._counts: dict[str, int] = {}                    #: frames submitted so far
        self._reached: dict[str, int] = {}                   #: frames that reached the curve so far
        self._decided: dict[str, float] = {}                 #: max(r_i - i T) over releases decided
        self._taken: dict[str, tuple[float, int]] = {}       #: the same over releases taken, next index

    def next_index(self, name: str) -> int:
        """The index of pipeline ``name``'s next submitted frame (counted from 0)."""
        k = self._counts.get(name, 0)
        self._counts[name] = k + 1
        return k

    def reaching(self, name: str) -> int:
        """The curve's index ``k`` of the frame of pipeline ``name`` reaching it now (from 0)."""
        k = self._reached.get(name, 0)
        self._reached[name] = k + 1
        return k

    def earliest(self, p: PipelineSpec, k: int) -> float:
        """The earliest frame ``k`` of ``p`` may be released (-inf before its first)."""
        return self._decided.get(p.name, -math.inf) + k * p.period_s - p.jitter_s

    def decided(self, p: PipelineSpec, k: int, release: float) -> None:
        """Frame ``k`` of ``p`` will be released at ``release``."""
        self._decided[p.name] = max(self._decided.get(p.name, -math.inf), release - k * p.period_s)

    def taken(self, p: PipelineSpec, k: int, release: float) -> None:
        """Frame ``k`` of ``p`` was released at ``release``."""
        grid, _ = self._taken.get(p.name, (-math.inf, 0))
        self._taken[p.name] = (max(grid, release - k * p.period_s), k + 1)

    def next_release(self, p: PipelineSpec, now: float) -> float:
        """The earliest ``p``'s next frame may be released, from the releases taken (now before
        its first)."""
        if p.name not in self._taken:
            return now
        grid, k = self._taken[p.name]
        return max(now, grid + k * p.period_s - p.jitter_s)

    def forget(self, name: str) -> None:
        """Pipeline ``name`` left: its curve starts over if the name comes back (its count goes on)."""
        self._decided.pop(name, None)
        self._taken.pop(name, None)

    def state(self, name: str) -> tuple:
        """What moves with the pipeline to another partition (``restore``)."""
        return self._counts.get(name, 0), self._reached.get(name, 0), self._decided.get(name), self._taken.get(name)

    def restore(self, name: str, state: tuple) -> None:
        count, reached, decided, taken = state
        self._counts[name] = count
        self._reached[name] = reached
        if decided is not None:
            self._decided[name] = decided
        if taken is not None:
            self._taken[name] = taken

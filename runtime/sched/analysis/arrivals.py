"""The arrival curve the admission analysis assumes for a pipeline's frames, kept per pipeline.

A pipeline declares a period T and a release jitter J: its frames may come up to J late against
a grid of period T, so any k frames span at least (k - 1) T - J. The demand bound counts no more
than that (runtime/sched/analysis/schedulability.py). The daemon's frames come when apps send them, so the
engine enforces the curve: frame k is released no earlier than max over released frames i of
r_i + (k - i) T - J, which is ``grid + k T - J`` with ``grid`` = max(r_i - i T). Frames that come
as declared are never held; a frame sent early is released at the earliest the curve allows.

The index k is the frame's place in the order the app submitted it, and frames are released in
that order: a frame that reaches the curve after a later one did (its CPU prefix overran on one
host thread while the later frame's ran on another) is not released (``in_order``). Counting in
the order frames reach the curve instead would give every later frame an index one too low, and
so hold each of them T - J, for good. Skipped indices only loosen the curve: any two frames
released, k < k', are (k' - k) T - J >= (their distance in release order) T - J apart.
"""

from __future__ import annotations

import math

from fpgashare.catalogue.workload import PipelineSpec


class ArrivalCurves:
    """Per pipeline: frames submitted, and the curve's state for releases decided and taken."""

    def __init__(self) -> None:
        self._counts: dict[str, int] = {}                    #: frames submitted so far
        self._highest: dict[str, int] = {}                   #: the highest index decided so far
        self._decided: dict[str, float] = {}                 #: max(r_i - i T) over releases decided
        self._taken: dict[str, tuple[float, int]] = {}       #: the same over releases taken, next index

    def next_index(self, name: str) -> int:
        """The index of pipeline ``name``'s next submitted frame (counted from 0)."""
        k = self._counts.get(name, 0)
        self._counts[name] = k + 1
        return k

    def in_order(self, name: str, k: int) -> bool:
        """Whether frame ``k`` of pipeline ``name`` comes after every frame decided so far (only
        such a frame may be released: the curve's bound holds over the index order)."""
        return k > self._highest.get(name, -1)

    def grid(self, name: str) -> float:
        """max(r_i - i T) over the releases decided (-inf before the first): a release above it
        holds every later frame that comes at the grid's earliest by the difference."""
        return self._decided.get(name, -math.inf)

    def earliest(self, p: PipelineSpec, k: int) -> float:
        """The earliest frame ``k`` of ``p`` may be released (-inf before its first)."""
        return self._decided.get(p.name, -math.inf) + k * p.period_s - p.jitter_s

    def decided(self, p: PipelineSpec, k: int, release: float) -> None:
        """Frame ``k`` of ``p`` will be released at ``release``."""
        self._decided[p.name] = max(self._decided.get(p.name, -math.inf), release - k * p.period_s)
        self._highest[p.name] = max(self._highest.get(p.name, -1), k)

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
        self._highest.pop(name, None)

    def state(self, name: str) -> tuple:
        """What moves with the pipeline to another partition (``restore``)."""
        return self._counts.get(name, 0), self._highest.get(name), self._decided.get(name), self._taken.get(name)

    def restore(self, name: str, state: tuple) -> None:
        count, highest, decided, taken = state
        self._counts[name] = count
        if highest is not None:
            self._highest[name] = highest
        if decided is not None:
            self._decided[name] = decided
        if taken is not None:
            self._taken[name] = taken

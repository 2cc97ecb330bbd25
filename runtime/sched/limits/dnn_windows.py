"""DNN images that fit in the idle windows a real-time schedule leaves, after the chain's fill
latency, the tile loads and the reloads of the real-time modules the tiles evict.

A DNN batch streams one chain of n tiles (n slots holding ``dnn_tile``; fill latency f_n, then one
image every p_n: the partitioner's plan, runtime/dnn/planning.py) on a stream no real-time frame
uses, in slots no frame holds. In a window of length w where the chain can run:

    images(w) = 1 + floor((w - loads - f_n) / p_n)   if w >= loads + f_n, else 0,

best over n up to the free slots, where on one stream (the window is the gap between frames j-1
and j): loads = t_L x (max(0, n - (K - s_{j-1})) + max(0, s_j - (K - n))): tiles beyond the slots
frame j-1 left free load after it ends, and frame j's modules beyond the slots the tiles leave
load before it starts, both on the one port inside the window. On several streams the loads are
not charged (a looser bound). The DNN runs one chain at a time (fpgashare's DNN job), so the sum
over windows bounds the images of any schedule that keeps these real-time frames.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

from fpgashare.catalogue.platform import Platform


@dataclass(frozen=True)
class Window:
    start: float
    end: float
    free_slots: int          #: the most slots no frame holds during it
    before: int | None       #: slots the frame before it held (one stream), None: not charged
    after: int | None        #: slots the frame after it needs (one stream), None: not charged

    @property
    def length(self) -> float:
        return self.end - self.start


def idle_windows(busy: Sequence[tuple[float, float, int]], slots: int, streams: int, t0: float,
                 t1: float) -> list[Window]:
    """Maximal stretches of [t0, t1) with a stream free and a slot free, given the real-time jobs
    (start, end, slots held). On one stream each window carries its neighbours' slot counts."""
    events = sorted({t0, t1, *(max(t0, min(t1, t)) for s, e, _ in busy for t in (s, e))})
    out: list[Window] = []
    cur: list | None = None
    for a, b in itertools.pairwise(events):
        if b <= a:
            continue
        running = [j for j in busy if j[0] < b and a < j[1]]
        free = slots - sum(j[2] for j in running)
        ok = len(running) < streams and free > 0
        if ok and cur is not None and cur[1] == a:
            cur[1], cur[2] = b, max(cur[2], free)
        elif ok:
            cur = [a, b, free]
            out.append(cur)       # type: ignore[arg-type]
    windows = []
    for start, end, free in out:
        before = after = None
        if streams == 1:
            prev = [j for j in busy if j[1] <= start + 1e-12]
            nxt = [j for j in busy if j[0] >= end - 1e-12]
            before = max(prev, key=lambda j: j[1])[2] if prev else 0
            after = min(nxt, key=lambda j: j[0])[2] if nxt else 0
        windows.append(Window(start, end, free, before, after))
    return windows


def chain_timings(platform: Platform, model: str) -> dict[int, tuple[float, float]]:
    """n -> (fill latency, step) of ``model``'s fastest chain on n tiles, for every n the platform has."""
    from fpgashare.dnn.planning import dnn_plan, dnn_slot_count

    out = {}
    for n in range(1, dnn_slot_count(platform) + 1):
        plan = dnn_plan(platform, model, n)
        out[n] = (plan.latency_cycles / plan.clock_hz, plan.bottleneck_cycles / plan.clock_hz)
    return out


def fastest_timings(platform: Platform, models: Sequence[str]) -> dict[int, tuple[float, float]]:
    """n -> the least fill and the least step of any of ``models`` on n tiles (several DNN
    pipelines: a bound for whichever runs in a window)."""
    per = [chain_timings(platform, m) for m in models]
    return {n: (min(t[n][0] for t in per), min(t[n][1] for t in per)) for n in per[0]} if per else {}


def window_images(windows: Sequence[Window], timings: dict[int, tuple[float, float]], slots: int,
                  load_s: float) -> int:
    """Images the windows can hold (module docstring); ``load_s``: the shortest load."""
    total = 0
    for w in windows:
        best = 0
        for n, (fill, step) in timings.items():
            if n > w.free_slots:
                continue
            loads = 0
            if w.before is not None and w.after is not None:
                loads = max(0, n - (slots - w.before)) + max(0, w.after - (slots - n))
            room = w.length - loads * load_s - fill
            if room >= 0:
                best = max(best, 1 + math.floor(room / step + 1e-9))
        total += best
    return total

"""DNN images that fit in the idle windows a real-time schedule leaves, after the chain's fill
latency, the tile loads and the reloads of the real-time modules the tiles evict.

A DNN batch streams one chain of n tiles (n slots holding ``dnn_tile``; fill latency f_n, then one
image every p_n: the partitioner's plan, runtime/dnn/planning.py) on a stream no real-time frame
uses, in slots no frame holds. A batch of d seconds on n tiles finishes at most
1 + (d - f_n) / p_n <= 1 + (d - f_n) / q_n images, q_n = min(f_n, p_n).

Batches of several lengths: inside one window the DNN may run several batches one after another
(one chain at a time), a short chain while the port loads more tiles, a longer one after. The
most tiles a chain can hold at time t of a window [a, b) on one stream, between frames j-1 and j:

    n(t) <= min(free, (K - s_{j-1}) + floor((t - a) / t_L), (K - s_j) + floor((b - t) / t_L)),

tiles beyond the slots frame j-1 left free load after a, one per t_L on the one port, and frame j's
modules beyond the slots the tiles leave load after the chain lets them go and before b. The
window that opens the run is cold: every slot is empty, so n(t) <= floor((t - a) / t_L) on any
number of streams (the registration window, before the first release, is part of it: a DNN
batch may already run there). Elsewhere on several streams only the free slots limit n(t).
Summing the batch bound over the batches, with n* the longest chain that ran (each batch's
1 - f/q is <= 0, so their sum is at most n*'s):

    images <= floor(1 - f_{n*}/q_{n*} + integral over the window of max_{m <= min(n(t), n*)} 1/q_m dt),

best over the n* for which n(t) >= n* for at least f_{n*} (a batch of n* tiles ran); 0 when none.
With n(t) constant this is the single-chain count 1 + floor((w - loads - f_n) / p_n). The DNN runs
one chain at a time (fpgashare's DNN job), so the sum over windows bounds the images of any
schedule that keeps these real-time frames.

Every pass charged (``run_images``, what the limits report uses): on several streams a window
spans real-time passes, so "the free slots" alone let the chain keep slots the passes hold and
skip the reloads of their modules. For any schedule, with n tiles held by a batch running at t,
K slots, t_L the shortest load, and each real-time pass [s_j, e_j) holding k_j slots:

- n <= K - (the slots of the passes running at t), and 0 if they hold every stream;
- t < s_j: n <= K - k_j + floor((s_j - t) / t_L). At s_j the pass's modules sit in k_j distinct
  slots, at least k_j - (K - n) of them slots the batch held at t; each was loaded after t (the
  batch held it then) and before s_j, one at a time on the one port;
- t >= e_j: n <= K - k_j + floor((t - e_j) / t_L): a tile in a slot the pass held was loaded after
  the pass let it go;
- t >= the cold start r: n <= floor((t - r) / t_L).

Stretches where n(t) >= 1 are the windows (a batch cannot span an instant with n = 0), and each
takes the integral bound above. On one stream this is the bound of neighbouring windows with the
other passes' constraints added: never looser.
"""

from __future__ import annotations

import bisect
import itertools
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from fpgashare.catalogue.platform import Platform

#: The DNN's tile partial (runtime/dnn/): what a DNN chain's slots hold.
TILE = "dnn_tile"


@dataclass(frozen=True)
class Window:
    start: float
    end: float
    free_slots: int          #: the most slots no frame holds during it
    before: int | None       #: slots the frame before it held (one stream), None: not charged
    after: int | None        #: slots the frame after it needs (one stream), None: not charged
    #: the window opens the run: every slot is empty, so each tile loads inside it
    cold: bool = False

    @property
    def length(self) -> float:
        return self.end - self.start

    def ready(self, slots: int) -> int | None:
        """Tiles that may already be resident when the window opens (None: not limited)."""
        if self.cold:
            return 0
        return None if self.before is None else slots - self.before

    def tiles_at(self, t: float, slots: int, load_s: float) -> int:
        """The most tiles a chain can hold at ``t``: those resident at the start plus the loads
        that fit since, and no more than the next frame's reloads that fit before the end."""
        n = self.free_slots
        ready = self.ready(slots)
        if ready is not None:
            n = min(n, ready + _loads_in(t - self.start, load_s))
        if self.after is not None:
            n = min(n, slots - self.after + _loads_in(self.end - t, load_s))
        return max(0, n)


def _loads_in(span: float, load_s: float) -> int:
    return math.floor(span / load_s + 1e-9) if load_s > 0 else 10**9


def idle_windows(busy: Sequence[tuple[float, float, int]], slots: int, streams: int, t0: float,
                 t1: float, run_start: float | None = None) -> list[Window]:
    """Maximal stretches of [t0, t1) with a stream free and a slot free, given the real-time jobs
    (start, end, slots held). On one stream each window carries its neighbours' slot counts.
    ``run_start``: when the run began with every slot empty (the window opening there is cold);
    pass t0 = run_start so that the registration window, where a DNN batch may already run, counts."""
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
        cold = run_start is not None and start <= run_start + 1e-12
        if streams == 1:
            prev = [j for j in busy if j[1] <= start + 1e-12]
            nxt = [j for j in busy if j[0] >= end - 1e-12]
            before = max(prev, key=lambda j: j[1])[2] if prev else 0
            after = min(nxt, key=lambda j: j[0])[2] if nxt else 0
        windows.append(Window(start, end, free, before, after, cold))
    return windows


def run_images(busy: Sequence[tuple[float, float, int]], slots: int, streams: int, load_s: float,
               t0: float, t1: float, timings: dict[int, tuple[float, float]],
               run_start: float | None = None, modules: Sequence[Sequence[str]] | None = None) -> int:
    """The most DNN images any schedule keeping the real-time passes ``busy`` (start, end, slots
    held) can finish in [t0, t1), on any number of streams (module docstring, "Every pass
    charged"). ``run_start``: when every slot was empty (the cold start); ``modules``: each
    pass's modules (as ``busy``), to charge the first loads after the cold start on the one port
    beside the tiles' (``cold_port_caps``)."""
    return sum(stretch_images([(b - a, n) for a, b, n in p], timings)
               for p in run_stretches(busy, slots, streams, load_s, t0, t1, run_start, modules))


def cold_port_caps(busy: Sequence[tuple[float, float, int]], modules: Sequence[Sequence[str]], load_s: float,
                   run_start: float) -> list[tuple[float, int]]:
    """(s_j, the most tiles a chain may hold at any t < s_j) for the passes from a cold start r,
    by start. Every slot is empty at r, so before pass j starts, every copy of a module some
    pass up to j uses was loaded after r: U_j = sum over modules of the most copies one such pass
    uses (a pass's copies sit in distinct slots). A tile held at t < s_j was loaded after r and
    ended by t. They are distinct loads on the one port, at least t_L each: (U_j + n) t_L <=
    s_j - r, so n <= floor((s_j - r) / t_L) - U_j (negative: no tile before s_j)."""
    most: dict[str, int] = {}
    out = []
    for (start, _, _), mods in sorted(zip(busy, modules, strict=True), key=lambda p: p[0][0]):
        for m in set(mods):
            most[m] = max(most.get(m, 0), list(mods).count(m))
        out.append((start, _loads_in(start - run_start, load_s) - sum(most.values())))
    return out


class PassesAhead:
    """The reloads the passes after an instant t need together, on the one port.

    At t a batch holds n tiles, so at most K - n slots hold a real-time module. Passes j..j' that
    start after t use, together, at least u = sum over modules of the most copies one of them
    uses distinct (slot, module) pairs (a pass's copies sit in distinct slots); at most K - n of
    them were in place at t, and every other one is loaded after t and before s_{j'}, one at a
    time on the one port: (u - (K - n)) t_L <= s_{j'} - t, so n <= K - u + floor((s_{j'} - t) / t_L).
    With j' = j this is the one-pass term of ``_tiles_between``; passes further ahead add the
    reloads of copies the next pass does not use (a slot the tiles keep past it)."""

    def __init__(self, busy: Sequence[tuple[float, float, int]], modules: Sequence[Sequence[str]]) -> None:
        ordered = sorted(zip(busy, modules, strict=True), key=lambda p: p[0][0])
        self.starts = [b[0] for b, _ in ordered]
        self.copies = [Counter(m) for _, m in ordered]
        most: Counter = Counter()
        for c in self.copies:
            most |= c
        #: copies all the passes use together: no more reloads than that are ever charged
        self.total = sum(most.values())

    def cap(self, t: float, slots: int, load_s: float) -> int:
        """The most tiles a chain may hold at ``t`` by the passes after it (class docstring)."""
        best = slots
        most: Counter = Counter()
        for j in range(bisect.bisect_right(self.starts, t), len(self.starts)):
            room = _loads_in(self.starts[j] - t, load_s)
            if room >= self.total:
                break            # (u <= total: no pass from here on caps below K)
            most |= self.copies[j]
            best = min(best, slots - sum(most.values()) + room)
        return best


def run_stretches(busy: Sequence[tuple[float, float, int]], slots: int, streams: int, load_s: float,
                  t0: float, t1: float, run_start: float | None = None,
                  modules: Sequence[Sequence[str]] | None = None) -> list[list[tuple[float, float, int]]]:
    """``run_images``'s windows: the stretches where a batch may run (n(t) >= 1), each as
    consecutive pieces (start, end, the most tiles a chain can hold then)."""
    caps = cold_port_caps(busy, modules, load_s, run_start) if modules is not None and run_start is not None else []
    cap_starts = [s for s, _ in caps]
    # the cap at t is the least over the passes starting after t: a suffix minimum
    suffix = [c for _, c in caps]
    for i in range(len(suffix) - 2, -1, -1):
        suffix[i] = min(suffix[i], suffix[i + 1])
    passes = sorted(busy)
    starts = [p[0] for p in passes]
    longest = max((e - s for s, e, _ in passes), default=0.0)
    reach = (slots + 1) * load_s
    cuts = {t0, t1}
    marks = [(a, -1) for a, _, _ in passes] + [(b, 1) for _, b, _ in passes]
    if run_start is not None:
        marks.append((run_start, 1))
    for t, sign in marks:
        cuts.update(t + sign * k * load_s for k in range(slots + 1))
    ahead = PassesAhead(busy, modules) if modules is not None else None
    if ahead is not None:
        for start in ahead.starts:
            cuts.update(start - k * load_s for k in range(slots + 1, ahead.total + 2))
    cuts = sorted(t for t in cuts if t0 <= t <= t1)
    stretches: list[list[tuple[float, float, int]]] = []
    open_ = False
    for a, b in itertools.pairwise(cuts):
        if b <= a:
            continue
        t = (a + b) / 2
        lo, hi = bisect.bisect_left(starts, t - longest - reach), bisect.bisect_right(starts, t + reach)
        n = _tiles_between(passes[lo:hi], t, slots, streams, load_s, run_start)
        first = bisect.bisect_right(cap_starts, t)
        if first < len(suffix):
            n = min(n, suffix[first])
        if ahead is not None:
            n = min(n, ahead.cap(t, slots, load_s))
        if n < 1:
            open_ = False
            continue
        if not open_:
            stretches.append([])
            open_ = True
        stretches[-1].append((a, b, n))
    return stretches


def _tiles_between(near: Sequence[tuple[float, float, int]], t: float, slots: int, streams: int,
                   load_s: float, run_start: float | None) -> int:
    """The most tiles a chain can hold at ``t``: the slots the running passes leave (none if
    they hold every stream); for a pass ahead, its modules beyond the slots the tiles leave must
    load before it starts; for a pass behind, tiles beyond the slots it left load after it ends;
    from a cold start, every tile loads after it. ``near``: the passes close enough to matter."""
    running = [p for p in near if p[0] <= t < p[1]]
    if len(running) >= streams:
        return 0
    n = slots - sum(p[2] for p in running)
    if run_start is not None:
        n = min(n, _loads_in(t - run_start, load_s))
    for start, end, held in near:
        if t < start:
            n = min(n, slots - held + _loads_in(start - t, load_s))
        elif t >= end:
            n = min(n, slots - held + _loads_in(t - end, load_s))
    return max(0, n)


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
    return sum(images_in(w, timings, slots, load_s) for w in windows)


def images_in(window: Window, timings: dict[int, tuple[float, float]], slots: int, load_s: float) -> int:
    """The most images batches inside ``window`` can finish, the chain growing and shrinking
    with the tiles the port can put in place (module docstring, "Batches of several lengths")."""
    cuts = {window.start, window.end}
    for k in range(slots + 1):
        cuts.update(t for t in (window.start + k * load_s, window.end - k * load_s)
                    if window.start < t < window.end)
    pieces = [(b - a, window.tiles_at((a + b) / 2, slots, load_s)) for a, b in itertools.pairwise(sorted(cuts))]
    return stretch_images(pieces, timings)


def stretch_images(pieces: Sequence[tuple[float, int]], timings: dict[int, tuple[float, float]]) -> int:
    """The most images batches can finish in one stretch of time, given as consecutive pieces
    (duration, the most tiles a chain can hold then): the integral bound of the module docstring,
    best over the longest chain n* that ran."""
    quick = {n: min(fill, step) for n, (fill, step) in timings.items()}
    best = 0
    for top, (fill, _) in timings.items():
        if sum(d for d, n in pieces if n >= top) < fill - 1e-12:
            continue                  # no batch of ``top`` tiles fits: it cannot be the longest chain
        total = 1 - fill / quick[top]
        for span, n in pieces:
            rates = [1 / quick[m] for m in timings if m <= min(n, top)]
            total += span * max(rates, default=0.0)
        best = max(best, math.floor(total + 1e-9))
    return best

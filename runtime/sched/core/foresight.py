"""Look-ahead over the next releases: when real-time work will want each module, with the
releases played out on the one video stream as dispatch would run them (Belady replacement,
prefetch and lending read it through ``Foresight.module_needs``; ``Foresight`` is a part of the
engine, handed the engine's state and its port driver)."""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from typing import TYPE_CHECKING

from fpgashare.sched.core.demand import NeedOrder

if TYPE_CHECKING:
    from fpgashare.catalogue.workload import PipelineSpec
    from fpgashare.sched.core.engine_state import EngineState
    from fpgashare.sched.core.jobs import Frame
    from fpgashare.sched.core.port_use import PortDriver


def module_needs(engine: EngineState, longest_load_s: float, held: set[str] | None = None) -> dict[str, float]:
    """For each module real-time work will want: the earliest time it is wanted. A pending
    frame's modules are wanted now; otherwise a module is wanted at the next release of a
    pipeline that uses it, unless the stream allows a later time (``_stream_order``)."""
    now = engine.now
    needs: dict[str, float] = {}
    for frame in engine.pending:
        for module in frame.modules:
            needs[module] = now
    for frame, modules in next_passes(engine):     # wanted again when the pass on the stream ends
        for module in modules:
            needs[module] = min(needs.get(module, float("inf")), frame.expected_end)
    held = set(engine.slots.held_modules() if held is None else held)
    played = _stream_order(engine, longest_load_s, dict(needs), held)
    if played is not None:
        return played
    for p in engine.pipelines:
        t = engine.next_release_s(p)
        for module in p.modules:
            if t < needs.get(module, float("inf")):
                needs[module] = t
    return needs

def next_passes(engine: EngineState) -> list[tuple[Frame, tuple[str, ...]]]:
    """Frames on the stream with passes to go, each with the modules of its next pass: they are
    pending again, wanting those modules, as soon as their pass ends."""
    return [(f, f.pipeline.pass_modules[f.step + 1]) for f in engine.running.values()
            if f.step < len(f.pipeline.pass_stages) - 1]


def _stream_order(engine: EngineState, longest_load_s: float, needs: dict[str, float],
                  held: set[str]) -> dict[str, float] | None:
    """Module needs with the next releases played out on the one video stream, as dispatch
    would run them (``play_releases``); a frame's modules are wanted when it starts. So what the
    second frame of a burst lacks may be loaded while the first streams, in slots the stream
    leaves idle anyway. The guess of who goes first can be wrong (jitter): then the frame that
    does waits for the loads put off. None unless every frame would still meet its deadline
    after that wait."""
    loaded = set(held).union(*(f.modules for f in engine.pending), *(m for _, m in next_passes(engine)))
    played = play_releases(engine, held)           # (held grows as it plays)
    postponed = 0
    for start, _, release, p in played:
        for module in p.modules:
            if module not in needs:
                needs[module] = start
                postponed += module not in loaded and start > release
    wait = postponed * longest_load_s
    if all(start + wait + p.exec_s <= deadline for start, deadline, _, p in played):
        return needs
    return None


def play_releases(engine: EngineState, held: set[str]) -> list[tuple[float, float, float, PipelineSpec]]:
    """Every pipeline's next release played out on the one video stream, as dispatch would run
    them: after the pending frames and the passes to go, among the frames released by then, one
    whose modules are all held starts first, else the earliest deadline (nominal releases, ties
    by name). ``(start, deadline, release, pipeline)`` in start order; ``held`` (the modules
    resident) grows by what each played frame loads."""
    stream_at = engine.stream.free_at()
    for frame in engine.pending:
        held.update(frame.modules)
        stream_at += frame.remaining_s
    for frame, modules in next_passes(engine):
        held.update(modules)
        stream_at += frame.remaining_s - frame.exec_s
    pipelines, info = engine.pipelines, engine.stream_info
    inf = float("inf")
    upcoming = sorted((t, p.name, i) for i, p in enumerate(pipelines) if (t := engine.next_release_s(p)) != inf)
    position, count = 0, len(upcoming)
    ready: list[tuple[float, str, int, float]] = []    # released, every module held: a heap by deadline
    waiting: list[tuple[float, str, int, float]] = []  # released, some module not held
    played: list[tuple[float, float, float, PipelineSpec]] = []     # start, deadline, release, pipeline
    heappush, heappop, issuperset = heapq.heappush, heapq.heappop, held.issuperset
    while position < count or ready or waiting:
        if not ready and not waiting and upcoming[position][0] > stream_at:
            stream_at = upcoming[position][0]
        while position < count and upcoming[position][0] <= stream_at:
            t, name, i = upcoming[position]
            entry = (t + info[i][0], name, i, t)
            if issuperset(info[i][2]):
                heappush(ready, entry)
            else:
                waiting.append(entry)
            position += 1
        if ready:
            chosen = heappop(ready)
        else:
            chosen = min(waiting)
            waiting.remove(chosen)
        i = chosen[2]
        modules = info[i][2]
        played.append((stream_at, chosen[0], chosen[3], pipelines[i]))
        if waiting and not issuperset(modules):
            held |= modules
            for entry in [e for e in waiting if issuperset(info[e[2]][2])]:
                waiting.remove(entry)
                heappush(ready, entry)
        else:
            held |= modules
        stream_at += info[i][1]
    return played


class Foresight:
    """What the future holds, for Belady replacement, prefetch and lending (a part of the engine;
    the release forecasts are the engine's: the daemon's frames come when apps send them)."""

    def __init__(self, engine: EngineState, port: PortDriver) -> None:
        self.engine, self.port = engine, port

    def earliest_release_s(self) -> float:
        """The earliest a real-time frame not yet released may arrive (now if one may arrive any
        moment; inf if none will): a load or a DNN batch that ends by then delays no frame."""
        engine = self.engine
        now = engine.now
        return min((max(now, engine.next_release_s(p)) for p in engine.pipelines), default=float("inf"))

    def next_release_s(self, pipeline: PipelineSpec) -> float:
        """Earliest time the next unreleased frame of ``pipeline`` can arrive (the engine's
        forecast: nominal releases, or the daemon's arrival curves)."""
        return self.engine.next_release_s(pipeline)

    def stream_job_end(self) -> float | None:
        """When the frame or DNN batch on the stream ends (None if the stream is free)."""
        return None if self.engine.stream.free() else self.engine.stream.free_at()

    def next_passes(self) -> list[tuple[Frame, tuple[str, ...]]]:
        """Frames on the stream with passes to go, each with the modules of its next pass."""
        return next_passes(self.engine)

    def module_needs(self, held: set[str] | None = None) -> dict[str, float]:
        """For each module real-time work will want: the earliest time it is wanted
        (``module_needs`` above)."""
        return module_needs(self.engine, self.port.longest_load_s(), held)

    def wanted_held(self, first: Sequence[Frame] = ()) -> bool:
        """Whether a slot holds (has, runs or receives) every module ``need_order(first)`` could
        name: the given frames', the next passes', and every pipeline's (the demand's). Then no
        module of that order is missing, whatever the order. Cheap: a slot holds one module, so
        with more modules wanted than slots the answer is no without looking."""
        engine = self.engine
        wanted = engine.demand.modules()
        slots = engine.slots
        if len(wanted) > len(slots.slots):
            return False
        holds = slots.holds
        for module in wanted:                    # (loops, not all(): asked at every decision)
            if not holds(module):
                return False
        for frame in first:
            for module in frame.modules:
                if not holds(module):
                    return False
        for _, modules in next_passes(engine) if engine.running else ():
            for module in modules:
                if not holds(module):
                    return False
        return True

    def need_order(self, first: Sequence[Frame] = (), copies: bool = False) -> NeedOrder:
        """Modules in the order they will be needed: the given frames', the next passes of frames
        on the stream, then those of every pipeline's next release by deadline
        (runtime/sched/core/demand.py); ``copies``: each copy of a module ranked apart."""
        return NeedOrder([frame.modules for frame in first] + [m for _, m in next_passes(self.engine)],
                         self.engine.demand, copies)

    def played_order(self, first: Sequence[Frame] = ()) -> NeedOrder:
        """``need_order(first, copies=True)`` with the next releases in the order the stream would
        start them (``play_releases``), not by deadline: a frame released while the stream is free
        starts then, before a later release with an earlier deadline, and Belady's next use is its
        start. Each copy of a module is ranked apart. Costs a play-out of every pipeline's next
        release: for prefetch and warm-up, where a wrong guess costs a load."""
        engine = self.engine
        chains = [frame.modules for frame in first] + [m for _, m in next_passes(engine)]
        for _, _, _, p in play_releases(engine, set(engine.slots.held_modules())):
            chains.extend(p.pass_modules)
        return NeedOrder(chains, engine.demand, copies=True)

"""What edf loads while no frame owns the port: a module the next releases need (the prefetch
target, prefetch_target.py), hidden under the job on the stream where it can be, else just in time
(lookahead.py), never beyond what the contract allows (guard.py).

Just in time, not as early as possible, where an early load gains nothing: with DNN work (idle
slots may be lent), and in the gap after a period's frames (a load there has no frame to hide
under, while one put off may be hidden under the next period's first).
"""

from __future__ import annotations

from collections.abc import Callable

from fpgashare.sched.core.jobs import Frame
from fpgashare.sched.core.view import EngineView, NeedOrder
from fpgashare.sched.policies.backfill import DNN as DNN_TILE
from fpgashare.sched.policies.backfill import hidden_load_at
from fpgashare.sched.policies.edf_loads import may_load, prefetch_victim
from fpgashare.sched.policies.lookahead import reclaim_at

#: (the need order, the modules needed, the module to load), or None: prefetch_target.py
Target = tuple[NeedOrder, list[str], str]


class Prefetcher:
    """edf's prefetches, handed the policy's choice of target (a variant of edf may change it) and
    its priority key (the order the stream would start the waiting frames)."""

    def __init__(self, target: Callable[..., Target | None], priority: Callable[[Frame], object]) -> None:
        self.target, self.priority = target, priority

    def work(self, engine: EngineView, waiting: list[Frame]) -> Callable[[set[int]], None] | None:
        """The load to make now, given the slots ``reserved`` by the decision; None if none."""
        target = self.target(engine, waiting)
        dnn = bool(engine.dnn_pipelines and engine.runs_dnn)
        if target is None and not dnn:
            return None      # (what follows returns None too then: nothing to prefetch, no DNN)
        stream_end = engine.foresight.stream_job_end()
        if target is not None and stream_end is not None:
            # A load hidden under the job on the stream costs nothing: take it now, but not into
            # a tile the DNN can still use before the module is due, or before the last instant
            # the load still ends under the job (backfill.hidden_load_at).
            hidden_at = hidden_load_at(engine) if dnn else engine.now
            if hidden_at <= engine.now:
                return lambda reserved: self.prefetch(engine, reserved, target, hidden_only=True)
            if hidden_at != float("inf"):
                engine.wake(hidden_at)
            tiles = {s.index for s in engine.slots.slots if s.module == DNN_TILE}
            return lambda reserved: self.prefetch(engine, reserved | tiles, target, hidden_only=True) \
                or self.just_in_time(engine, waiting, reserved)
        if dnn:
            return lambda reserved: self.just_in_time(engine, waiting, reserved)
        if target is None:
            return None
        if not waiting and engine.stream.free():
            return lambda reserved: self.just_in_time(engine, waiting, reserved, target)
        return lambda reserved: self.prefetch(engine, reserved, target)

    def just_in_time(self, engine: EngineView, waiting: list[Frame], reserved: set[int],
                     target: Target | None = None) -> None:
        """Prefetch once the last instant comes that keeps the victim's use (a DNN tile) whole."""
        target = target or self.target(engine, waiting)
        if target is not None and engine.slots.holds(target[2]) and not engine.dnn_pipelines:
            self.prefetch(engine, reserved, target)     # a second copy, and no tile to keep meanwhile
            return
        due = reclaim_at(engine)
        if due > engine.now:
            if due != float("inf"):
                engine.wake(due)
            return
        if target is not None:
            self.prefetch(engine, reserved, target)

    def prefetch(self, engine: EngineView, reserved: set[int], target: Target, hidden_only: bool = False) -> bool:
        """Load the target module into a victim slot that no pending frame keeps and no module
        needed before it holds, if the load is hidden or the contract allows it (guard.py);
        ``hidden_only``: only if it ends before the job on the stream. Whether it loads.
        A load that would evict a resident module is decided again over the order the stream
        would start the next releases (``played_order``): a prefetch that evicts what a frame
        released sooner needs costs that frame a reload."""
        victim = prefetch_victim(engine, reserved, target)
        if victim is not None and engine.slots.slots[victim].module is not None \
                and may_load(engine, victim, hidden_only, target[2]):
            waiting = sorted((f for f in engine.pending if f.start is None), key=self.priority)
            target = self.target(engine, waiting, played=True)
            victim = None if target is None else prefetch_victim(engine, reserved, target)
        if victim is not None and may_load(engine, victim, hidden_only, target[2]):
            engine.load(victim, target[2], "prefetch")
            return True
        if victim is not None and not hidden_only and not engine.pending:
            # Not allowed now: look again when the stream's job or the next release comes.
            foresight = engine.foresight
            nxt = min(t for t in (foresight.stream_job_end(), foresight.earliest_release_s()) if t is not None)
            if nxt != float("inf"):
                engine.wake(nxt)
        return False

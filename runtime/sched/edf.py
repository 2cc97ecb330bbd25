"""``edf``: earliest deadline first over real-time frames, reconfiguration-aware.

After every event, pending frames are taken in deadline order. A frame whose modules are resident
in free slots starts once the video stream is free (the shell streams one frame at a time); until
then it keeps its slots. The most urgent frame that is blocked gets its missing modules loaded
(victims by lookahead over the known periodic demand); less urgent frames may only use what is
resident, so they never put loads on the port ahead of it. A frame that cannot finish by its
deadline even if it started as soon as it could (counting the stream, the port backlog and its own
loads) is dropped rather than run late. When the port is idle, the next releases' modules are
prefetched into idle slots, so reconfiguration overlaps computation; where an early load gains
nothing, prefetch waits until just in time (runtime/sched/lookahead.py): with best-effort DNN work
present, so idle slots can run DNN batches meanwhile (runtime/sched/backfill.py), and in the gap
after a period's frames, so the load runs under the next period's first frame.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from operator import attrgetter

from fpgashare.sched.backfill import backfill
from fpgashare.sched.demand import NeedOrder
from fpgashare.sched.engine import Engine, Frame
from fpgashare.sched.lookahead import reclaim_at
from fpgashare.sched.policy import PriorityPolicy


class EdfPolicy(PriorityPolicy):
    name = "edf"
    admission = True
    borrow = True

    priority = attrgetter("deadline", "seq")      # a C-level key: sorted() calls it for every pending frame

    def hopeless(self, engine: Engine, frame: Frame, missing: Sequence[str], stream_at: float) -> str | None:
        exec_s = frame.pipeline.exec_s
        if stream_at + exec_s > frame.deadline:
            return "cannot finish by its deadline"
        if not missing:
            return None
        # Each missing module comes from a load under way, a busy slot once its job ends, or a new load.
        now = engine.now
        slots = engine.slots
        new_loads, busy = 0, []
        for module in missing:
            if slots.coming_with(module):
                continue
            holders = slots.busy_with(module)
            if holders:
                busy.append(holders)
            else:
                new_loads += 1
        late = "cannot finish by its deadline (reconfiguration and port backlog included)"
        if now + engine.port_backlog_s() + engine.longest_load_s() * new_loads + exec_s > frame.deadline:
            return late
        # A busy copy frees when its job ends: only worth looking at if some job ends too late.
        if busy and engine.jobs_end_by() + exec_s > frame.deadline:
            freed = max(min(engine.free_at(s) or now for s in holders) for holders in busy)
            if freed + exec_s > frame.deadline:
                return late
        return None

    def dispatch(self, engine: Engine) -> None:
        super().dispatch(engine)
        backfill(engine)

    def port_idle_work(self, engine: Engine, waiting: list[Frame]) -> Callable[[set[int]], None] | None:
        # Just in time, not as early as possible, where an early load gains nothing: with DNN work
        # (idle slots may be lent), and in the gap after a period's frames (a load there has no
        # frame to hide under, while one put off may be hidden under the next period's first).
        if engine.dnn_pipelines and engine.backend.runs_dnn:
            return lambda reserved: self._just_in_time(engine, waiting, reserved)
        target = self._prefetch_target(engine, waiting)
        if target is None:
            return None
        if not waiting and engine.stream_free():
            return lambda reserved: self._just_in_time(engine, waiting, reserved, target)
        return lambda reserved: self._prefetch(engine, reserved, target)

    def _just_in_time(self, engine: Engine, waiting: list[Frame], reserved: set[int],
                      target: tuple[NeedOrder, list[str], str] | None = None) -> None:
        due = reclaim_at(engine)
        if due > engine.now:
            if due != float("inf"):
                engine.wake(due)
            return
        target = target or self._prefetch_target(engine, waiting)
        if target is not None:
            self._prefetch(engine, reserved, target)

    @staticmethod
    def _prefetch_target(engine: Engine, waiting: list[Frame]) -> tuple[NeedOrder, list[str], str] | None:
        """The module to prefetch next, with the need order: the first of the modules the next
        needs will want (as many as there are slots) that no slot holds, runs or receives.
        ``waiting``: the pending frames by deadline."""
        if not engine.slots.idle():
            return None                              # no slot could take a load
        future = engine.need_order(waiting)
        needed = future.head(len(engine.slots.slots))   # each module once, in order of first need
        module = next((m for m in needed if not engine.slots.holds(m)), None)
        return None if module is None else (future, needed, module)

    @staticmethod
    def _prefetch(engine: Engine, reserved: set[int], target: tuple[NeedOrder, list[str], str]) -> None:
        """Load the target module into a victim slot that no pending frame keeps and no module
        needed before it holds (one prefetch at a time keeps the port free for demand loads)."""
        future, needed, module = target
        victim = engine.slots.victim(module, future, keep=reserved | _holding(engine, needed, module))
        if victim is not None:
            engine.slots.request(victim, module, "prefetch")


def _holding(engine: Engine, needed: list[str], upto: str) -> set[int]:
    """Slots holding a module needed before ``upto``: prefetch must not evict them."""
    keep = set()
    for module in needed:
        if module == upto:
            break
        keep |= set(engine.slots.ready_with(module)) | set(engine.slots.busy_with(module))
    return keep

"""``edf``: earliest deadline first over real-time frames, reconfiguration-aware.

After every event, pending frames are taken in deadline order. A frame whose modules are resident
in free slots starts at once (several frames run side by side when slots allow). The most urgent
frame that is blocked gets its missing modules loaded (victims by lookahead over the known periodic
demand); less urgent frames may only use what is resident, so they never put loads on the port
ahead of it. A frame that cannot finish by its deadline even if it started now (counting the port
backlog and its own loads) is dropped rather than run late. When the port is idle, the next
release's modules are prefetched into idle slots, so reconfiguration overlaps computation; with
best-effort DNN work present, prefetch waits until just in time (runtime/sched/lookahead.py) so
idle slots can run DNN batches meanwhile (runtime/sched/backfill.py).
"""

from __future__ import annotations

from itertools import islice

from runtime.sched.backfill import backfill
from runtime.sched.engine import Engine, Frame
from runtime.sched.lookahead import reclaim_at
from runtime.sched.policy import PriorityPolicy


class EdfPolicy(PriorityPolicy):
    name = "edf"
    admission = True
    borrow = True

    def priority(self, frame: Frame) -> tuple:
        return (frame.deadline, frame.seq)

    def hopeless(self, engine: Engine, frame: Frame, missing: list[str]) -> str | None:
        exec_s = frame.pipeline.exec_s
        if engine.stream_free_at() + exec_s > frame.deadline:
            return "cannot finish by its deadline"
        if not missing:
            return None
        coming_with = engine.slots.coming_with
        new_loads = sum(1 for m in missing if not coming_with(m))
        if engine.now + engine.port_backlog_s() + engine.longest_load_s() * new_loads + exec_s > frame.deadline:
            return "cannot finish by its deadline (reconfiguration and port backlog included)"
        return None

    def dispatch(self, engine: Engine) -> None:
        super().dispatch(engine)
        backfill(engine)

    def when_port_idle(self, engine: Engine, reserved: set[int]) -> None:
        if engine.dnn_pipelines and engine.backend.runs_dnn:
            # Slots may be lent to DNN work: load just in time, not as early as possible.
            due = reclaim_at(engine)
            if due > engine.now:
                if due != float("inf"):
                    engine.wake(due)
                return
        self._prefetch(engine, reserved)

    @staticmethod
    def _prefetch(engine: Engine, reserved: set[int]) -> None:
        if not engine.slots.idle(exclude=reserved):
            return                                   # no slot could take a load
        future = engine.need_order(sorted(engine.pending, key=lambda f: (f.deadline, f.seq)))
        needed = list(islice(future, len(engine.slots.slots)))   # each module once, in order of first need
        for module in needed:
            if engine.slots.holds(module):
                continue
            victim = engine.slots.victim(module, future, keep=reserved | _holding(engine, needed, module))
            if victim is not None:
                engine.slots.request(victim, module, "prefetch")
            return                                   # one prefetch at a time keeps the port free


def _holding(engine: Engine, needed: list[str], upto: str) -> set[int]:
    """Slots holding a module needed before ``upto``: prefetch must not evict them."""
    keep = set()
    for module in needed:
        if module == upto:
            break
        keep |= set(engine.slots.ready_with(module)) | set(engine.slots.busy_with(module))
    return keep

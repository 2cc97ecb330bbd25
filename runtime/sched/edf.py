"""``edf``: earliest deadline first over real-time frames, reconfiguration-aware.

After every event, pending frames are taken in deadline order. A frame whose modules are resident
in free slots starts at once (several frames run side by side when slots allow). The most urgent
frame that is blocked gets its missing modules loaded (victims by lookahead over the known periodic
demand); less urgent frames may only use what is resident, so they never put loads on the port
ahead of it. A frame that cannot finish by its deadline even if it started now (counting the port
backlog and its own loads) is dropped rather than run late. When the port is idle, the next
release's modules are prefetched into idle slots, so reconfiguration overlaps computation.
"""

from __future__ import annotations

from runtime.sched.engine import Engine, Frame
from runtime.sched.policy import PriorityPolicy


class EdfPolicy(PriorityPolicy):
    name = "edf"
    admission = True

    def priority(self, frame: Frame) -> tuple:
        return (frame.deadline, frame.seq)

    def hopeless(self, engine: Engine, frame: Frame, missing: list[str]) -> str | None:
        if engine.now + frame.pipeline.exec_s > frame.deadline:
            return "cannot finish by its deadline"
        load_s = engine.longest_load_s() * sum(not engine.slots.coming_with(m) for m in missing)
        if missing and engine.now + engine.port_backlog_s() + load_s + frame.pipeline.exec_s > frame.deadline:
            return "cannot finish by its deadline (reconfiguration and port backlog included)"
        return None

    def dispatch(self, engine: Engine) -> None:
        super().dispatch(engine)
        backfill(engine)

    def when_port_idle(self, engine: Engine, reserved: set[int]) -> None:
        self._prefetch(engine, reserved)

    @staticmethod
    def _prefetch(engine: Engine, reserved: set[int]) -> None:
        future = engine.future_modules(sorted(engine.pending, key=lambda f: (f.deadline, f.seq)))
        needed = list(dict.fromkeys(future))   # each module once, in order of first need
        for module in needed[: len(engine.slots.slots)]:
            if engine.slots.ready_with(module) or engine.slots.coming_with(module) or \
                    engine.slots.busy_with(module):
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


#: A DNN batch is kept short so that the slots it holds come back soon if real-time work wants them.
DNN_BATCH_S = 1e-3


def backfill(engine: Engine) -> None:
    """Best-effort DNN pipelines on slots the admitted real-time pipelines never use: load dnn_tile
    there when the port is idle, then run short batches on as many tiles as the partitioner's plan
    for those slots uses."""
    if not engine.dnn_pipelines or not engine.backend.runs_dnn:
        return
    from runtime.dnn.planning import dnn_plan
    from runtime.slots import SlotState

    rt_modules = {m for p in engine.pipelines for m in p.modules}
    for p in engine.dnn_pipelines:
        if p.name in engine.dnn_running:
            continue
        spare = [s for s in engine.slots.slots if engine.slots.compatible(s.index, "dnn_tile")
                 and s.state in (SlotState.BLANK, SlotState.READY, SlotState.LOADING)
                 and (s.module is None or s.module not in rt_modules)]
        if not spare:
            continue
        ready = [s.index for s in spare if s.state == SlotState.READY and s.module == "dnn_tile"]
        plan = dnn_plan(engine.backend.platform, p.model, len(spare))
        want = len(plan.stages)
        if len(ready) < want:
            idle_port = engine.slots.port.current is None and not engine.slots.port.queue
            loadable = [s.index for s in spare if s.state in (SlotState.BLANK, SlotState.READY)
                        and s.module != "dnn_tile"]
            if idle_port and loadable:
                engine.slots.request(loadable[0], "dnn_tile", "dnn")
            if not ready:
                continue
            plan = dnn_plan(engine.backend.platform, p.model, len(ready))
            want = len(plan.stages)
        images = max(1, int(DNN_BATCH_S * plan.clock_hz // plan.bottleneck_cycles))
        engine.start_dnn(p, ready[:want], images)

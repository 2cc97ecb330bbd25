"""Best-effort DNN work in the slot time real-time pipelines leave idle.

Two moves, made after the real-time dispatch of every event:

- run: while no real-time frame waits, idle slots holding dnn_tile take short batches, in groups
  of the size whose plan gives the most images per slot-second (the partitioner decides the
  split; for the bundled models that is one tile per replica). A batch ends before its slot may
  be needed as the victim of a real-time load (``lookahead.victims_due``) and before the run
  ends.
- lend: when the port is idle and no real-time frame waits, one more idle slot is loaded with
  dnn_tile if the just-in-time plan for real-time loads, with that slot's module gone, still
  leaves room for the load, at least one image and DNN time worth the port time spent. A lent
  slot comes back through the ordinary prefetch, which evicts dnn_tile first (real-time work
  never needs it).
"""

from __future__ import annotations

from runtime.sched.engine import Engine
from runtime.sched.lookahead import reclaim_at, victims_due
from runtime.slots import SlotState

#: A batch is kept short so that the slots it holds come back soon if real-time work wants them.
DNN_BATCH_S = 1e-3
DNN = "dnn_tile"


def backfill(engine: Engine) -> None:
    if not engine.dnn_pipelines or not engine.backend.runs_dnn:
        return
    _run(engine)
    _lend(engine)


def _group_plan(engine: Engine, model: str):
    from runtime.dnn.planning import best_group_plan

    return best_group_plan(engine.backend.platform, model)


def _until(due: list[float], busy_ends: list[float], idle_others: int) -> float:
    """How long a slot may stay busy: until the k-th victim is due at a time by which fewer than
    k other slots (DNN jobs that have ended, idle DNN slots) would be free."""
    for k, t in enumerate(due, 1):
        if sum(e <= t for e in busy_ends) + idle_others < k:
            return t
    return float("inf")


def _run(engine: Engine) -> None:
    if engine.pending:
        return      # a waiting frame may want an idle slot for a copy of a module it shares
    now = engine.now
    due = victims_due(engine)
    busy_ends = [job.end for job in engine.dnn_running.values() for _ in job.slots]
    idle = [s.index for s in engine.slots.slots if s.state == SlotState.READY and s.module == DNN]
    while idle:
        waiting = [p for p in engine.dnn_pipelines if engine.dnn_backlog(p)]
        if not waiting:
            return
        pipeline = min(waiting, key=lambda p: (engine.dnn_images[p.name], p.name))
        plan = _group_plan(engine, pipeline.model)
        size = len(plan.stages)
        if len(idle) < size:
            return
        latency_s = plan.latency_cycles / plan.clock_hz
        room = min(_until(due, busy_ends, len(idle) - size), engine.end_s) - now
        if room < latency_s:
            return
        per_image_s = plan.bottleneck_cycles / plan.clock_hz
        images = 1 + max(0, int((min(DNN_BATCH_S, room) - latency_s) // per_image_s))
        job = engine.start_dnn(pipeline, idle[:size], images)
        busy_ends.extend(job.end for _ in job.slots)
        idle = idle[size:]


def _lend(engine: Engine) -> None:
    port = engine.slots.port
    if port.current is not None or port.queue or engine.pending \
            or not any(engine.dnn_backlog(p) for p in engine.dnn_pipelines):
        return
    now = engine.now
    plan = _group_plan(engine, min(engine.dnn_pipelines, key=lambda p: p.name).model)
    first_image_s = plan.latency_cycles / plan.clock_hz
    best: tuple[float, int] | None = None
    for s in engine.slots.slots:
        if s.state not in (SlotState.BLANK, SlotState.READY) or s.module == DNN \
                or not engine.slots.compatible(s.index, DNN):
            continue
        room = reclaim_at(engine, evicting=s.index) - now
        # Worth it only if the DNN work it makes room for outlasts the port time it costs.
        if room >= 2 * engine.load_seconds(s.index) + first_image_s and (best is None or room > best[0]):
            best = (room, s.index)
    if best is not None:
        engine.slots.request(best[1], DNN, "dnn")

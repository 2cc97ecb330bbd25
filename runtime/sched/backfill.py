"""Best-effort DNN work in the time real-time pipelines leave the shell.

The shell streams one thing at a time (one video input, one output), so a DNN batch runs only
while no frame runs or waits, and it ends before the next release still ahead (a frame already
overdue is not waited for). Two moves, made after the real-time dispatch of every event:

- run: one batch on the idle slots holding dnn_tile, split by the partitioner over as many of them
  as make it fastest. A batch ends before its slots may be needed as victims of real-time loads
  (``lookahead.victims_due``), before that release and before the run ends.
- lend: when the port is idle, no real-time frame waits and the DNN holds fewer slots than its
  fastest chain uses, one more idle slot is loaded with dnn_tile if the just-in-time plan for
  real-time loads, with that slot's module gone, still leaves room for the load, at least one
  image and DNN time worth the port time spent. A lent slot comes back through the ordinary
  prefetch, which evicts dnn_tile first (real-time work never needs it).
"""

from __future__ import annotations

from fpgashare.dnn.planning import dnn_plan, dnn_slot_count
from fpgashare.sched.engine import Engine
from fpgashare.sched.lookahead import reclaim_at, victims_due
from fpgashare.slots import SlotState

#: A batch is kept short so that the slots it holds come back soon if real-time work wants them.
DNN_BATCH_S = 1e-3
DNN = "dnn_tile"


def backfill(engine: Engine) -> None:
    if not engine.dnn_pipelines or not engine.backend.runs_dnn:
        return
    _run(engine)
    _lend(engine)


def _chain_plan(engine: Engine, model: str, tiles: int):
    return dnn_plan(engine.backend.platform, model, tiles)


def _until(due: list[float], idle_others: int) -> float:
    """How long a batch may hold its slots: until the k-th victim is due while fewer than k
    other idle DNN slots could serve."""
    for k, t in enumerate(due, 1):
        if idle_others < k:
            return t
    return float("inf")


def _next_release(engine: Engine) -> float:
    """The earliest release still ahead (inf if none); a release counts as ahead until its
    jitter has passed too. A frame overdue beyond that is not waited for: its app may have paused
    or stopped sending (the daemon's pipelines promise a period, not a frame)."""
    now = engine.now
    return min((t for p in engine.pipelines if (t := engine.next_release_s(p)) + p.jitter_s > now),
               default=float("inf"))


def _run(engine: Engine) -> None:
    if engine.pending or not engine.stream_free():
        return      # frames first, and the stream carries one thing at a time
    idle = [s.index for s in engine.slots.slots if s.state == SlotState.READY and s.module == DNN]
    waiting = [p for p in engine.dnn_pipelines if engine.dnn_backlog(p)]
    if not idle or not waiting:
        return
    pipeline = min(waiting, key=lambda p: (engine.dnn_images[p.name], p.name))
    plan = _chain_plan(engine, pipeline.model, len(idle))
    size = len(plan.stages)
    now = engine.now
    latency_s = plan.latency_cycles / plan.clock_hz
    room = min(_until(victims_due(engine), len(idle) - size), _next_release(engine), engine.end_s) - now
    if room < latency_s:
        return
    per_image_s = plan.bottleneck_cycles / plan.clock_hz
    images = 1 + max(0, int((min(DNN_BATCH_S, room) - latency_s) // per_image_s))
    engine.start_dnn(pipeline, idle[:size], images)


def _lend(engine: Engine) -> None:
    port = engine.slots.port
    if port.current is not None or port.queue or engine.pending \
            or not any(engine.dnn_backlog(p) for p in engine.dnn_pipelines):
        return
    model = min(engine.dnn_pipelines, key=lambda p: p.name).model
    # One batch at a time runs on one chain: a slot beyond the fastest chain's tiles adds nothing.
    held = sum(s.module == DNN and s.state != SlotState.FAILED for s in engine.slots.slots)
    if held >= len(_chain_plan(engine, model, dnn_slot_count(engine.backend.platform)).stages):
        return
    now = engine.now
    plan = _chain_plan(engine, model, 1)
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

"""What is read of a whole board: its slots and port as status shows them, its trace, and the
figures of a run (the one-stream summary per partition, plus what only the board knows: the port
busy while no slot of any partition computes)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from fpgashare.backends.slot_view import SlotView
from fpgashare.sched.core.engine import Engine
from fpgashare.sched.core.jobs import TraceEvent, arrived
from fpgashare.sched.core.port import LoadRequest
from fpgashare.sched.core.run_summary import summarize
from fpgashare.sched.core.slots import Slot, SlotState


@dataclass
class BoardPort:
    """The one port as status and metrics read it: every partition's loads together."""

    loads: int
    busy_s: float
    queue: list[LoadRequest] = field(default_factory=list)
    current: LoadRequest | None = None


@dataclass
class BoardSlots:
    """Every slot with its board index (a snapshot) and the port."""

    slots: list[Slot]
    port: BoardPort


def board_slots(board) -> BoardSlots:
    """The board's slots by board index, and its port over every layout it has had."""
    by_index: dict[int, Slot] = {}
    for view, engine in zip(board.views, board.parts, strict=True):
        for local, slot in enumerate(engine.slots.slots):
            by_index[view.global_slots[local]] = replace(slot, index=view.global_slots[local])
    ports = [e.slots.port for _, e in board.every()]
    port = BoardPort(sum(p.loads for p in ports), sum(p.busy_s for p in ports),
                     [r for p in ports for r in p.queue],
                     next((p.current for p in ports if p.current is not None), None))
    return BoardSlots([by_index[k] for k in sorted(by_index)], port)


def busy_by_slot(board) -> list[float]:
    """Seconds each board slot spent computing, over every layout."""
    out = [0.0] * len(board.platform.slots)
    for view, engine in board.every():
        for local, busy in enumerate(engine.busy_by_slot):
            out[view.global_slots[local]] += busy
    return out


def board_trace(views: list[SlotView], engines: list[Engine]) -> list[TraceEvent]:
    """The partitions' traces in one, in time order, with the board's slot numbers."""
    out = []
    for view, engine in zip(views, engines, strict=True):
        names = {f"slot {i}": f"slot {g}" for i, g in enumerate(view.global_slots)}
        for e in engine.trace:
            if e.track in names:
                e = replace(e, track=names[e.track])
            elif e.track == "port":
                local = int(e.name.rsplit(" ", 1)[1])
                e = replace(e, name=f"{e.name.rsplit(' ', 1)[0]} {view.global_slots[local]}")
            out.append(e)
    return sorted(out, key=lambda e: (e.start, e.track))


def account_port(board, t: float) -> None:
    """Board-wide port figures for [last step, t): states stand still between steps."""
    dt = t - board.accounted_to
    if dt <= 0:
        return
    owner = board.arbiter.owner
    if owner is not None and not any(s.state == SlotState.BUSY for e in board.parts for s in e.slots.slots):
        reason = owner.slots.port.current.reason if owner.slots.port.current else "demand"
        board.exposed_reconfig_s += dt
        board.exposed_by_reason[reason] = board.exposed_by_reason.get(reason, 0.0) + dt
        board.steady_exposed_s += max(0.0, t - max(board.accounted_to, board.t0))
        pending = [f for e in board.parts for f in e.pending]
        if pending:                 # from when the first of them came (``jobs.arrived``)
            board.stalled_reconfig_s += max(0.0, t - max(board.accounted_to, arrived(pending)))
    board.accounted_to = t


def _stream_busy_s(board, engine: Engine) -> float:
    """Time ``engine``'s stream carried frames or batches between the first release and the end."""
    return sum(max(0.0, min(t.end, board.end_s) - max(t.start, board.t0)) for t in engine.trace
               if t.track == f"stream {engine.stream_id}")


def summary(board, wall_s: float) -> dict:
    """The figures of ``Engine.summary`` for a workload run on the whole board, plus per-stream ones."""
    parts = [summarize(e, wall_s) for e in board.parts]
    pipelines = {name: p for s in parts for name, p in s["pipelines"].items()}
    totals = {k: sum(s["totals"][k] for s in parts)
              for k in ("reconfigurations", "port_busy_s", "steady_port_s", "dnn_images", "dnn_compute_s")}
    by_reason: dict[str, float] = {}
    for s in parts:
        for k, v in s["totals"]["port_s_by_reason"].items():
            by_reason[k] = by_reason.get(k, 0.0) + v
    sim_s = board.workload.duration_s
    busy = sum(sum(e.busy_by_slot) for e in board.parts)
    totals.update({
        "port_busy_s": round(totals["port_busy_s"], 6), "steady_port_s": round(totals["steady_port_s"], 6),
        "exposed_reconfig_s": round(board.exposed_reconfig_s, 6),
        "stalled_reconfig_s": round(board.stalled_reconfig_s, 6),
        "steady_exposed_s": round(board.steady_exposed_s, 6),
        "port_s_by_reason": {k: round(v, 6) for k, v in sorted(by_reason.items())},
        "exposed_s_by_reason": {k: round(v, 6) for k, v in sorted(board.exposed_by_reason.items())},
        "slot_utilization": round(busy / ((board.clock.now() or sim_s) * len(board.platform.slots)), 4),
        "dnn_images_per_s": round(totals["dnn_images"] / sim_s, 2),
        "sim_s": sim_s, "wall_s": round(wall_s, 3),
        "streams": [{"stream": e.stream_id, "slots": list(v.global_slots),
                     "pipelines": [p.name for p in e.pipelines], "dnn": bool(e.dnn_pipelines),
                     "stream_busy": round(_stream_busy_s(board, e) / sim_s, 4)}
                    for e, v in zip(board.parts, board.views, strict=True)]})
    return {"pipelines": pipelines, "totals": totals}

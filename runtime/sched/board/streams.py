"""Several video streams at once: one engine per partition of the fabric (a stream and its own
slots, runtime/sched/board/stream_plan.py), all on one clock and one configuration port.

Each partition's engine is the ordinary one-stream engine over a view of the board with only its
slots (backends/slot_view.py) and its own policy instance, so everything proved and tested for
one stream holds inside it. This loop takes the partitions' events in time order, and after each
step lets the port arbiter (port_share.py) start the next partition's load. Port figures that
only make sense for the whole board (exposed reconfiguration: the port busy while no slot of any
partition computes) are counted here.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace

from fpgashare.backends.base import Backend
from fpgashare.backends.slot_view import SlotView
from fpgashare.catalogue.workload import Workload
from fpgashare.sched.analysis.schedulability import UNCONSTRAINED, AdmissionContract, load_seconds
from fpgashare.sched.board.port_share import PortArbiter
from fpgashare.sched.board.stream_plan import StreamPlan
from fpgashare.sched.core.clock import Clock, VirtualClock
from fpgashare.sched.core.engine import Engine
from fpgashare.sched.core.jobs import TraceEvent
from fpgashare.sched.core.run_summary import summarize
from fpgashare.sched.core.slots import SlotState


class StreamsEngine:
    """Runs ``plan``'s partitions of ``workload`` side by side on ``backend``."""

    def __init__(self, workload: Workload, backend: Backend, plan: StreamPlan, make_policy: Callable[[], object],
                 clock: Clock | None = None, want_output: bool = False) -> None:
        self.workload, self.backend, self.plan = workload, backend, plan
        self.clock = clock or VirtualClock()
        probe = make_policy()
        self.arbiter = PortArbiter(getattr(probe, "port_order", "round-robin"))
        replacement = getattr(probe, "replacement", "belady")
        self.views: list[SlotView] = []
        self.parts: list[Engine] = []
        dnn = tuple(p for p in workload.pipelines if not p.realtime)
        for part in plan.partitions:
            view = SlotView(backend, part.slots)
            sub = replace(workload, platform=view.platform,
                          pipelines=(*part.pipelines, *(dnn if part.dnn else ())))
            contract = part.verdict.contract if part.verdict is not None else None
            engine = Engine(sub, view, make_policy(), clock=self.clock, want_output=want_output, contract=contract,
                            replacement=replacement)
            engine.stream_id = part.stream
            engine.loads_after_t0 = not part.quiet
            self.views.append(view)
            self.parts.append(engine)
            self.arbiter.add(engine)
        # One registration window for the board: every slot filled once through the one port.
        self.t0 = load_seconds(workload.platform) * len(workload.platform.slots)
        for engine in self.parts:
            engine.t0 = self.t0
        self.exposed_reconfig_s = self.stalled_reconfig_s = self.steady_exposed_s = 0.0
        self.exposed_by_reason: dict[str, float] = {}
        self._last = 0.0

    # ---- what bench and the trace read of a run, for the whole board
    @property
    def pipelines(self):
        return [p for e in self.parts for p in e.pipelines]

    @property
    def frames(self):
        return [f for e in self.parts for f in e.frames]

    @property
    def end_s(self) -> float:
        return self.t0 + self.workload.duration_s

    @property
    def contract(self) -> AdmissionContract:
        """Every partition's pins, by board slot."""
        pinned = {view.global_slots[s]: m for view, e in zip(self.views, self.parts, strict=True)
                  for s, m in e.contract.pinned.items()}
        return replace(UNCONSTRAINED, pinned=pinned)

    @property
    def trace(self) -> list[TraceEvent]:
        """Every partition's trace with board slot numbers."""
        return board_trace(self.views, self.parts)

    # ---- the loop
    def run(self) -> StreamsEngine:
        for engine in self.parts:
            engine._schedule_releases()
            engine.begin()
        self.arbiter.grant()
        horizon = max(e.horizon_s for e in self.parts)
        while True:
            # Hardware on this clock (the co-simulated board) first runs to the next event: an end of
            # work before it is then the next event.
            due = [t for t in (e.next_event_s() for e in self.parts) if t is not None]
            self.backend.run_hardware(min(min(due, default=horizon), horizon))
            due = [t for t in (e.next_event_s() for e in self.parts) if t is not None]
            t = min(due, default=None)
            if t is None or t > horizon:
                break
            self._account(t)
            step_partitions(self.parts, self.arbiter, t)
        self._account(max(self.clock.now(), min(horizon, self.end_s)))
        for engine in self.parts:
            engine.end_run()
        return self

    def _account(self, t: float) -> None:
        """Board-wide port figures for [last step, t): states stand still between steps."""
        dt = t - self._last
        if dt <= 0:
            return
        owner = self.arbiter.owner
        if owner is not None and not any(s.state == SlotState.BUSY for e in self.parts for s in e.slots.slots):
            reason = owner.slots.port.current.reason if owner.slots.port.current else "demand"
            self.exposed_reconfig_s += dt
            self.exposed_by_reason[reason] = self.exposed_by_reason.get(reason, 0.0) + dt
            self.steady_exposed_s += max(0.0, t - max(self._last, self.t0))
            if any(e.pending for e in self.parts):
                self.stalled_reconfig_s += dt
        self._last = t

    def _stream_busy_s(self, engine: Engine) -> float:
        """Time ``engine``'s stream carried frames or batches between the first release and the end."""
        return sum(max(0.0, min(t.end, self.end_s) - max(t.start, self.t0)) for t in engine.trace
                   if t.track == f"stream {engine.stream_id}")

    def summary(self, wall_s: float) -> dict:
        """The figures of ``Engine.summary`` for the whole board, plus per-stream ones."""
        parts = [summarize(e, wall_s) for e in self.parts]
        pipelines = {name: p for s in parts for name, p in s["pipelines"].items()}
        totals = {k: sum(s["totals"][k] for s in parts)
                  for k in ("reconfigurations", "port_busy_s", "steady_port_s", "dnn_images", "dnn_compute_s")}
        by_reason: dict[str, float] = {}
        for s in parts:
            for k, v in s["totals"]["port_s_by_reason"].items():
                by_reason[k] = by_reason.get(k, 0.0) + v
        sim_s = self.workload.duration_s
        busy = sum(sum(e.busy_by_slot) for e in self.parts)
        totals.update({
            "port_busy_s": round(totals["port_busy_s"], 6), "steady_port_s": round(totals["steady_port_s"], 6),
            "exposed_reconfig_s": round(self.exposed_reconfig_s, 6),
            "stalled_reconfig_s": round(self.stalled_reconfig_s, 6),
            "steady_exposed_s": round(self.steady_exposed_s, 6),
            "port_s_by_reason": {k: round(v, 6) for k, v in sorted(by_reason.items())},
            "exposed_s_by_reason": {k: round(v, 6) for k, v in sorted(self.exposed_by_reason.items())},
            "slot_utilization": round(busy / ((self.clock.now() or sim_s) * len(self.workload.platform.slots)), 4),
            "dnn_images_per_s": round(totals["dnn_images"] / sim_s, 2),
            "sim_s": sim_s, "wall_s": round(wall_s, 3),
            "streams": [{"stream": e.stream_id, "slots": list(v.global_slots),
                         "pipelines": [p.name for p in e.pipelines], "dnn": bool(e.dnn_pipelines),
                         "stream_busy": round(self._stream_busy_s(e) / sim_s, 4)}
                        for e, v in zip(self.parts, self.views, strict=True)]})
        return {"pipelines": pipelines, "totals": totals}


def step_partitions(engines: list[Engine], arbiter: PortArbiter, t: float) -> None:
    """One step of several partitions at ``t``: every engine with an event due takes its events,
    then the port goes to the next partition with a load waiting; if it fell idle, the partitions
    are asked again (a side load one of them held back may go now)."""
    port_was_busy = arbiter.owner is not None
    for engine in engines:
        nxt = engine.next_event_s()
        if nxt is not None and nxt <= t:
            engine.advance_to(t)
    arbiter.grant()
    if port_was_busy and arbiter.owner is None:
        for engine in engines:
            engine.poke()


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


def run_streams(workload: Workload, backend: Backend, plan: StreamPlan, make_policy: Callable[[], object],
                **kw) -> tuple[StreamsEngine, dict]:
    """``workload`` on ``plan``'s partitions; the engine and its summary."""
    start = time.perf_counter()
    engine = StreamsEngine(workload, backend, plan, make_policy, **kw).run()
    return engine, engine.summary(time.perf_counter() - start)

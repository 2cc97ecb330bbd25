"""A workload replayed as the daemon sees it: what ``fpgashare bench`` reports by default.

The daemon's board (``Board``: one partition, or partitioning itself as pipelines come,
runtime/sched/board/relayout.py) runs on a virtual clock over the chosen backend. Each real-time
pipeline registers at its first release, in file order, each once the previous registration has
returned (the daemon takes registrations one at a time); its app starts sending when its own
registration returns, frame k at the workload's release of frame k (jitter included), from the
first release not before that. Best-effort DNN pipelines register at the start and keep a backlog
of images queued. A frame counts on time when it ends by its arrival plus its deadline, as the app
sees it; frames the app never sent (before its registration returned) are counted apart.
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Sequence

import numpy as np
from fpgashare.backends.base import Backend
from fpgashare.catalogue.workload import PipelineSpec, Workload
from fpgashare.dnn.planning import network
from fpgashare.sched.board.board import Board
from fpgashare.sched.core.clock import VirtualClock
from fpgashare.sched.core.run_summary import OUTCOMES
from fpgashare.sched.policies.registry import make_policy

#: Images a DNN pipeline keeps queued: enough that the backfill never waits for a client.
DNN_BACKLOG = 64


def daemon_engine(workload: Workload, backend: Backend, streams: int, scheduler: str = "edf") -> Board:
    """The board a daemon with at most ``streams`` streams runs (runtime/daemon/server.py)."""
    platform, clock = workload.platform, VirtualClock()
    if streams <= 1 or not make_policy(scheduler).admission:
        return Board.whole(platform, backend, lambda: make_policy(scheduler), clock)
    return Board.whole(platform, backend, lambda: make_policy(scheduler), clock, cap=streams)


def replay(workload: Workload, backend: Backend, streams: int, scheduler: str = "edf") -> tuple[object, dict]:
    """``workload`` through the daemon's engine (module docstring); the engine and a result in
    ``bench``'s shape."""
    start = time.perf_counter()
    engine = daemon_engine(workload, backend, streams, scheduler)
    clock = engine.clock
    def parts() -> list:
        return [e for _, e in engine.every()]

    for part in parts():
        part.want_output = False
    engine.begin()
    realtime = [p for p in workload.pipelines if p.realtime]
    dnn = [p for p in workload.pipelines if not p.realtime]
    frames: dict[str, list] = {p.name: [] for p in realtime}
    unsent: dict[str, int] = {p.name: 0 for p in realtime}
    rejected: list[dict] = []
    images: list = []
    queue: list[tuple[float, int, int, str, object]] = []
    order = iter(range(1 << 62))

    def push(t: float, rank: int, kind: str, item) -> None:
        heapq.heappush(queue, (t, rank, next(order), kind, item))

    def run_to(t: float) -> None:
        while (due := engine.next_event_s()) is not None and due <= t:
            clock.wait_until(max(due, clock.now()))
            engine.advance_to(clock.now())
        clock.wait_until(max(t, clock.now()))
        engine.advance_to(clock.now())

    def ready(p: PipelineSpec) -> None:
        k = 0
        while (t := p.release_s(k, workload.seed)) < workload.duration_s:
            if t < clock.now():
                unsent[p.name] += 1
            else:
                push(t, 1, "frame", p)
            k += 1

    for p in dnn:
        engine.add_pipeline(p)
    pending = list(realtime)
    pixels = {p.name: np.zeros(p.stages[0].kind.input_shape(*p.frame), np.uint8) for p in realtime}
    dnn_input = {p.name: np.zeros(network(p.model).input_shape, np.uint8) for p in dnn}
    outstanding: dict[str, list] = {p.name: [] for p in dnn}
    waiting: dict = {}
    while pending or queue or waiting:
        if pending and not waiting:           # the next registration, at its first release
            p = pending.pop(0)
            run_to(max(clock.now(), p.offset_s))
            why = engine.admit(p)
            if why:
                rejected.append({"name": p.name, "reason": why})
                continue
            waiting = {"spec": p}
            engine.add_pipeline(p, admitted=True, on_ready=lambda w=waiting: w.update(ready=True),
                                on_refused=lambda why, w=waiting: w.update(refused=why))
        if waiting and ("ready" in waiting or "refused" in waiting):
            if "ready" in waiting:
                ready(waiting["spec"])
            else:
                rejected.append({"name": waiting["spec"].name, "reason": waiting["refused"]})
            waiting = {}
            continue
        nxt = queue[0][0] if queue else None
        due = engine.next_event_s()
        if waiting and (nxt is None or (due is not None and due < nxt)):
            if due is None:
                break                          # nothing can complete the registration
            run_to(due)
            continue
        if not queue:
            continue
        t, _, _, kind, item = heapq.heappop(queue)
        run_to(t)
        if kind == "frame":
            frames[item.name].append(engine.submit(item.name, pixels[item.name]))
        for p in dnn:                           # keep every DNN pipeline's backlog full
            outstanding[p.name] = [r for r in outstanding[p.name] if r.outcome is None]
            fresh = [engine.submit_dnn(p.name, dnn_input[p.name])
                     for _ in range(DNN_BACKLOG - len(outstanding[p.name]))]
            outstanding[p.name] += fresh
            images += fresh
    run_to(workload.duration_s)
    horizon = workload.duration_s + 1.0
    while (due := engine.next_event_s()) is not None and due <= horizon:
        run_to(due)
    for p in [*realtime, *dnn]:
        engine.remove_pipeline(p.name, "the run ended")
    while (due := engine.next_event_s()) is not None:
        run_to(due)
    return engine, _result(workload, engine, parts(), frames, unsent, rejected, images, time.perf_counter() - start)


def _result(workload: Workload, engine, parts: Sequence, frames: dict, unsent: dict, rejected: list,
            images: list, wall_s: float) -> dict:
    per = {}
    for name, fs in frames.items():
        if any(r["name"] == name for r in rejected):
            continue
        counts = dict.fromkeys(OUTCOMES, 0)
        for f in fs:
            late_for_app = f.outcome == "on_time" and f.end > f.origin + f.pipeline.due_s + 1e-9
            counts["late" if late_for_app else f.outcome] += 1
        lat = [1e3 * (f.end - f.origin) for f in fs if f.end is not None]
        per[name] = {"submitted": len(fs), "on_time": counts["on_time"], "late": counts["late"],
                     "dropped": counts["dropped"], "errors": counts["error"], "not_sent": unsent[name],
                     "latency_ms_p50": round(float(np.percentile(lat, 50)), 3) if lat else None,
                     "latency_ms_p99": round(float(np.percentile(lat, 99)), 3) if lat else None}
    port = engine.slots.port
    done = sum(1 for r in images if r.outcome == "done" and r.end is not None and r.end <= workload.duration_s)
    busy = sum(p.slot_busy_s for p in parts)
    return {"scheduler": "edf (daemon path)", "admitted": list(per), "rejected": rejected, "pipelines": per,
            "totals": {"reconfigurations": port.loads, "port_busy_s": round(port.busy_s, 6),
                       "exposed_reconfig_s": round(sum(p.exposed_reconfig_s for p in parts), 6),
                       "stalled_reconfig_s": round(sum(p.stalled_reconfig_s for p in parts), 6),
                       "slot_utilization": round(busy / (workload.duration_s * len(workload.platform.slots)), 4),
                       "dnn_images": done, "dnn_images_per_s": round(done / workload.duration_s, 2),
                       "relayouts": engine.relayouts,
                       "pins_given_back": sum(p.members.pins_given_back for p in parts),
                       "sim_s": workload.duration_s,
                       "wall_s": round(wall_s, 3)},
            "bound": {"dnn_images_per_s": 0.0}}

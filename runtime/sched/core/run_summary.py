"""What a run comes to: outcomes and latencies per pipeline, reconfiguration and port time (by
reason, and how much of it no slot computed under), slot utilization and DNN images."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from fpgashare.sched.core.engine import Engine

OUTCOMES = ("on_time", "late", "dropped", "error")


def summarize(engine: Engine, wall_s: float) -> dict:
    """The run's figures (``fpgashare bench`` prints them); ``wall_s``: the host time it took."""
    per: dict[str, dict] = {}
    for p in engine.pipelines:
        frames = [f for f in engine.frames if f.pipeline.name == p.name]
        lat = [1e3 * (f.end - f.origin) for f in frames if f.end is not None]
        counts = {o: sum(f.outcome == o for f in frames) for o in OUTCOMES}
        per[p.name] = {"submitted": len(frames), "on_time": counts["on_time"], "late": counts["late"],
                       "dropped": counts["dropped"], "errors": counts["error"],
                       "latency_ms_p50": round(float(np.percentile(lat, 50)), 3) if lat else None,
                       "latency_ms_p99": round(float(np.percentile(lat, 99)), 3) if lat else None}
    sim_s = engine.workload.duration_s
    port = engine.slots.port
    dnn = sum(engine.dnn_images.values())
    return {"pipelines": per, "totals": {
        "reconfigurations": port.loads, "port_busy_s": round(port.busy_s, 6),
        "exposed_reconfig_s": round(engine.exposed_reconfig_s, 6),
        "stalled_reconfig_s": round(engine.stalled_reconfig_s, 6),
        # From the first release on: before it, pipelines register and nothing can compute.
        "steady_port_s": round(sum(max(0.0, e.end - max(e.start, engine.t0)) for e in engine.trace
                                   if e.track == "port"), 6),
        "steady_exposed_s": round(engine.steady_exposed_s, 6),
        "port_s_by_reason": {k: round(v, 6) for k, v in sorted(engine.port_by_reason.items())},
        "exposed_s_by_reason": {k: round(v, 6) for k, v in sorted(engine.exposed_by_reason.items())},
        "slot_utilization": round(engine.slot_busy_s / ((engine.now or sim_s) * len(engine.slots.slots)), 4),
        "dnn_images": dnn, "dnn_images_per_s": round(dnn / sim_s, 2),
        "dnn_compute_s": round(engine.dnn_busy_s, 6),
        "sim_s": sim_s, "wall_s": round(wall_s, 3)}}

"""Run traces as Chrome/Perfetto trace-event JSON: a track per slot, one for the configuration
port, one per pipeline; frames and loads as complete ("X") slices in microseconds."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from runtime.sched.engine import TraceEvent


def trace_events(events: Sequence[TraceEvent], process: str = "fpgashare") -> dict:
    tracks = sorted({e.track for e in events}, key=lambda t: (not t.startswith("port"), t))
    tid = {t: i + 1 for i, t in enumerate(tracks)}
    out = [{"ph": "M", "name": "process_name", "pid": 1, "args": {"name": process}}]
    out += [{"ph": "M", "name": "thread_name", "pid": 1, "tid": tid[t], "args": {"name": t}} for t in tracks]
    for e in sorted(events, key=lambda e: (e.start, e.track, e.name)):
        out.append({"ph": "X", "name": e.name, "pid": 1, "tid": tid[e.track], "ts": round(e.start * 1e6, 3),
                    "dur": round((e.end - e.start) * 1e6, 3), "args": e.args})
    return {"traceEvents": out, "displayTimeUnit": "ms"}


def write_trace(events: Sequence[TraceEvent], path: str | Path, process: str = "fpgashare") -> None:
    Path(path).write_text(json.dumps(trace_events(events, process), indent=None, sort_keys=True))

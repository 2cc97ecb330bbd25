"""Run traces as Chrome/Perfetto trace-event JSON: a track per video stream, per slot, one for the
configuration port, one per pipeline; frames and loads as complete ("X") slices in microseconds."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from fpgashare.errors import FpgashareError
from fpgashare.sched.core.engine import TraceEvent


def trace_events(events: Sequence[TraceEvent], process: str = "fpgashare") -> dict:
    tracks = sorted({e.track for e in events}, key=lambda t: (not t.startswith("stream"), not t.startswith("port"), t))
    tid = {t: i + 1 for i, t in enumerate(tracks)}
    out = [{"ph": "M", "name": "process_name", "pid": 1, "args": {"name": process}}]
    out += [{"ph": "M", "name": "thread_name", "pid": 1, "tid": tid[t], "args": {"name": t}} for t in tracks]
    for e in sorted(events, key=lambda e: (e.start, e.track, e.name)):
        out.append({"ph": "X", "name": e.name, "pid": 1, "tid": tid[e.track], "ts": round(e.start * 1e6, 3),
                    "dur": round((e.end - e.start) * 1e6, 3), "args": e.args})
    return {"traceEvents": out, "displayTimeUnit": "ms"}


def write_trace(events: Sequence[TraceEvent], path: str | Path, process: str = "fpgashare") -> None:
    Path(path).write_text(json.dumps(trace_events(events, process), indent=None, sort_keys=True))


def write_gantt(events: Sequence[TraceEvent], path: str | Path, title: str = "",
                window: tuple[float, float] | None = None) -> None:
    """A Gantt chart (PNG): one row per video stream, per slot and one for the port; frames
    coloured by pipeline."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise FpgashareError("--gantt needs matplotlib: install 'fpgashare[plot]'") from None
    rows = sorted({e.track for e in events if e.track.startswith(("stream", "slot", "port"))},
                  key=lambda t: (not t.startswith("stream"), t != "port", t))
    shown = [e for e in events if e.track in rows and (window is None or (e.end >= window[0] and
                                                                           e.start <= window[1]))]
    names = sorted({e.args.get("pipeline", "load") for e in shown})
    colours = {n: plt.get_cmap("tab10")(i % 10) for i, n in enumerate(names)}
    colours["load"] = (0.55, 0.55, 0.55, 1.0)
    fig, ax = plt.subplots(figsize=(11, 0.5 * len(rows) + 1.5), dpi=110)
    for e in shown:
        name = e.args.get("pipeline", "load")
        ax.barh(rows.index(e.track), (e.end - e.start) * 1e3, left=e.start * 1e3, height=0.7,
                color=colours[name], edgecolor="black", linewidth=0.3)
    ax.set_yticks(range(len(rows)), rows)
    ax.invert_yaxis()
    ax.set_xlabel("simulated time (ms)")
    if window:
        ax.set_xlim(window[0] * 1e3, window[1] * 1e3)
    if names:
        ax.legend(handles=[plt.Rectangle((0, 0), 1, 1, color=colours[n]) for n in names], labels=names,
                  loc="upper right", fontsize=8, ncols=min(len(names), 5))
    ax.set_title(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)

"""What a demo run's trace says about the fabric: how busy the slots and the port were, which
streams carried what, and how many of its partial loads the workload itself needs.

Everything here reads only the trace (``TraceEvent``s: a frame pass or a DNN batch on its slots
and stream, a load on the port), because a daemon lets finished frames go once their apps are told.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from fpgashare.sched.core.jobs import TraceEvent
from fpgashare.sched.limits.belady import Ran, belady_loads

_LOAD = re.compile(r"load (\S+) -> slot (\d+)$")


def fabric_busy(events: Sequence[TraceEvent], slots: int) -> dict:
    """Busy fractions over the run's active span (first to last event on a slot or the port): the
    slots computing (frames and DNN batches), the port loading, and slots either computing or being
    loaded."""
    active = [e for e in events if e.track.startswith(("slot", "port"))]
    if not active:
        return {"span_s": 0.0, "slots_computing": 0.0, "port_loading": 0.0, "slots_computing_or_loading": 0.0}
    t0, t1 = min(e.start for e in active), max(e.end for e in active)
    span = max(t1 - t0, 1e-12)
    compute = sum(e.end - e.start for e in active if e.track.startswith("slot"))
    load = sum(e.end - e.start for e in active if e.track == "port")
    # A load blanks exactly one slot for its duration, so slot time computing or loading adds up.
    return {"span_s": round(span, 6), "slots_computing": round(compute / (span * slots), 4),
            "port_loading": round(load / span, 4),
            "slots_computing_or_loading": round((compute + load) / (span * slots), 4)}


def stream_use(events: Sequence[TraceEvent]) -> dict:
    """Which pipelines each video stream carried, and the board time two or more streams carried
    work at once (space sharing; 0 on one stream)."""
    spans = [e for e in events if e.track.startswith("stream")]
    carried: dict[str, set] = {}
    for e in spans:
        carried.setdefault(e.track, set()).add(e.args.get("pipeline"))
    edges = sorted([(e.start, 1) for e in spans] + [(e.end, -1) for e in spans])
    together, depth, last = 0.0, 0, 0.0
    for t, step in edges:
        if depth >= 2:
            together += t - last
        depth, last = depth + step, t
    return {"carried": {k: sorted(v) for k, v in sorted(carried.items())}, "together_s": round(together, 6)}


def realtime_passes(events: Sequence[TraceEvent], realtime: Iterable[str]) -> list[Ran] | None:
    """The passes of real-time frames in the order they streamed, each with the modules its slots
    held: the module the last successful load before the pass put in each of them. None when a
    pass ran on a slot the trace never loaded (a run that did not start from empty slots)."""
    realtime = set(realtime)
    ordered = sorted(events, key=lambda e: (e.start, e.end))
    held: dict[int, str] = {}
    pending: list[tuple[float, int, str]] = []      # loads that end later than the pass being read
    passes: dict[tuple[str, float], tuple[list[int], float]] = {}     # (frame, start) -> its slots, end
    for e in ordered:
        if e.track == "port" and e.args.get("ok", True):
            match = _LOAD.match(e.name)
            if match:
                pending.append((e.end, int(match.group(2)), match.group(1)))
        elif e.track.startswith("slot") and e.args.get("pipeline") in realtime:
            slots, _ = passes.setdefault((e.name, e.start), ([], e.end))
            slots.append(int(e.track.split()[1]))
    out = []
    pending.sort()
    for (_, start), (slots, end) in sorted(passes.items(), key=lambda kv: kv[0][1]):
        while pending and pending[0][0] <= start + 1e-12:
            _, slot, module = pending.pop(0)
            held[slot] = module
        if any(s not in held for s in slots):
            return None
        out.append(Ran(start, end, start, tuple(held[s] for s in sorted(slots))))
    return out


def load_figures(events: Sequence[TraceEvent], slots: int, realtime: Iterable[str]) -> dict:
    """The loads that lent slots to the DNN (``dnn`` in the trace), and the fewest loads any slot
    policy needs to run the real-time passes in the order they ran (Belady's MIN,
    sched/limits/belady.py; None if the trace cannot say): with more distinct modules than slots,
    what the workload itself costs in that order, whatever the scheduler. The run's loads beyond
    it are the DNN's lends, the reloads after them, and prefetches a later frame overtook."""
    lent = sum(1 for e in events if e.track == "port" and e.args.get("reason") == "dnn")
    order = realtime_passes(events, realtime)
    return {"loads_for_dnn": lent, "loads_order_floor": None if order is None else belady_loads(order, slots)}

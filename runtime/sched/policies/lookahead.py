"""Just-in-time loading: how long the port may wait before the next real-time load must start.

Real-time work wants modules at known times (``engine.foresight.module_needs``: now for a pending frame,
otherwise when the next nominal release of a pipeline using it can start on the one video stream).
The modules among them that no slot holds or is receiving must pass through the one port in order
of need, each finished by its need time. Walking that list
backwards gives the latest time the first of those loads may start; until then idle slots and the
port are free for other work (DNN batches, lending a slot to dnn_tile).
"""

from __future__ import annotations

from collections.abc import Sequence

from fpgashare.sched.core.view import EngineView


def missing_needs(engine: EngineView, evicting: int | None = None) -> list[tuple[float, str]]:
    """(need time, module) of every wanted module no slot holds or is receiving, earliest first;
    with ``evicting``, as if that slot's module were gone. A chain that uses a module k times needs
    k copies: the k-th copy, if no slot holds it, is missing too, wanted when a frame whose chain
    uses the module k times is pending (now) or may next be released."""
    slots = engine.slots
    held = slots.held_modules(excluding=evicting)
    out = [(t, module) for module, t in engine.foresight.module_needs(held).items() if module not in held]
    for module, copies in engine.placement.copies_needed().items():
        if copies < 2:
            continue        # (no copy held: the first is missing above, the others here)
        have = sum(1 for i in (*slots.ready_with(module), *slots.busy_with(module), *slots.coming_with(module))
                   if i != evicting)
        for k in range(max(2, have + 1), copies + 1):
            wanted = [engine.now for f in engine.pending if f.modules.count(module) >= k]
            wanted += [max(engine.now, engine.foresight.next_release_s(p)) for p in engine.pipelines
                       if p.modules.count(module) >= k]
            if wanted:
                out.append((min(wanted), module))
    return sorted(out)


def latest_load_starts(engine: EngineView, evicting: int | None = None, skip: Sequence[str] = ()) -> list[float]:
    """Latest start times of the missing real-time loads, in port order, such that every missing
    module is in by its need time. Loads are assumed to take the longest slot's load time, since
    the victim slots are not chosen yet. ``skip``: modules one missing copy of each is left out
    (loads timed by another rule: a lent pin's reload, pin_lend.back_by)."""
    load_s = engine.port.longest_load_s()
    starts = []
    finish = float("inf")
    needs = missing_needs(engine, evicting)
    for module in skip:
        first = next((i for i, (_, m) in enumerate(needs) if m == module), None)
        if first is not None:
            del needs[first]
    for t, _ in reversed(needs):
        finish = min(finish, t) - load_s
        starts.append(finish)
    return starts[::-1]


#: Slack kept before the latest start, as a fraction of one load.
SLACK_LOADS = 0.1


def victims_due(engine: EngineView, evicting: int | None = None, skip: Sequence[str] = ()) -> list[float]:
    """When the 1st, 2nd, ... idle victim slot must be available for real-time loads: each
    load's latest start, less some slack (``skip``: as ``latest_load_starts``)."""
    slack = SLACK_LOADS * engine.port.longest_load_s()
    return [t - slack for t in latest_load_starts(engine, evicting, skip)]


def reclaim_at(engine: EngineView, evicting: int | None = None) -> float:
    """When the first idle slot must be back for real-time loads (inf when nothing is missing)."""
    due = victims_due(engine, evicting)
    return due[0] if due else float("inf")

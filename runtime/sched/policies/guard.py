"""What ``edf`` may do besides serving the most urgent frame, so that the admission analysis
(runtime/sched/analysis/schedulability.py) holds: the rules that keep every other use of the port and the
stream inside time the analysis already counts.

- A load that serves no committed frame (a non-urgent frame's demand, prefetch, lending a slot
  to the DNN, a pin) is *hidden* if it ends before the frame or batch on the stream does: it
  then delays nothing the analysis counts. Otherwise, while real-time frames wait it may not
  start at all (the most urgent one owns the port), and while none waits it may start only if it
  ends before the earliest possible next release, or, while no real-time frame streams either
  (the stream free or carrying a DNN batch), if the contract budgets one such load as blocking
  (``idle_loads``). A prefetch of a real-time module may also end later than the earliest next
  release, if no frame that could wait for it is released before it ends: with every pin in its
  slot, a frame whose stages are all pinned never waits for the port, and a frame whose next
  load is this one waits for nothing its own loads do not count (``port_free_for_others_s``).
- A DNN batch starts only while no real-time frame waits, and ends before the earliest possible
  next release or is no longer than the blocking the contract leaves for it (``dnn_block_s``).
"""

from __future__ import annotations

from fpgashare.sched.core.view import EngineView, SlotState


def side_load_allowed(engine: EngineView, slot: int, module: str | None = None) -> bool:
    """Whether a load into ``slot`` that serves no committed frame may be queued now (a pin a
    mode change adds is loaded by the change itself: runtime/sched/analysis/mode_change.py).
    ``module``: the real-time module a prefetch loads (``port_free_for_others_s``)."""
    if engine.committed is not None:
        return False                      # the committed frame owns the port
    if not engine.loads_after_t0 and engine.now >= engine.t0:
        return False                      # a quiet partition: the others' analysis counts no load of it
    if not engine.port.free():
        return False                      # one load at a time: nothing queues behind another
    end = engine.now + engine.port.load_seconds(slot)
    stream_end = engine.foresight.stream_job_end()
    if stream_end is not None and end <= stream_end:
        return True                       # hidden under the job on the stream
    if engine.pending or engine.foresight.next_passes():
        return False                      # (a frame between passes is pending again when its pass ends)
    if end <= engine.foresight.earliest_release_s():
        return True
    if module is not None and end <= port_free_for_others_s(engine, module):
        return True
    # The one budgeted idle load straddles the start of a busy window only if it starts while no
    # real-time frame waits or streams: such an instant is at or before the window's start for
    # every deadline. Started under a frame, it could leave the stream idle after that frame
    # inside the window, once per frame (docs/guarantee.md, rule 3).
    return engine.contract.idle_loads and not engine.running


def batch_allowed(engine: EngineView, seconds: float) -> bool:
    """Whether a DNN batch of ``seconds`` may start now (the stream is free and no frame waits)."""
    if engine.pending or engine.committed is not None:
        return False
    return seconds <= engine.contract.dnn_block_s or engine.now + seconds <= engine.foresight.earliest_release_s()


def batch_room(engine: EngineView) -> float:
    """The longest DNN batch that may start now (0 if none)."""
    if engine.pending or engine.committed is not None:
        return 0.0
    return max(engine.contract.dnn_block_s, engine.foresight.earliest_release_s() - engine.now)


def port_free_for_others_s(engine: EngineView, module: str) -> float:
    """With no frame pending, committed or between passes: the earliest next release of a
    pipeline whose frame could wait for a prefetch of ``module`` started now (inf if none).

    A load that ends by then keeps every frame within the analysis's charges (docs/guarantee.md,
    rule 3), because a frame released while it runs is of one of two kinds. Its stages are all
    pinned, every pin in its slot: it never needs the port, and the stream is free for it (the
    load holds no slot it uses). Or its chain uses more copies of ``module`` than the slots hold
    or receive besides this load: then this load is one of the loads the analysis charges its
    frame (an unpinned stage, n_i), under way before it comes; the frame commits as usual and
    takes the copy being loaded, so from its release its loads and stream still take at most
    S_i. Any other frame's release bounds the load, as before. With a pin away (moved, lent,
    taken by an evictor, or not loaded yet) a pinned pipeline may need the port: every release
    bounds the load then. A frame in passes may wait for the port for an earlier pass than the
    one using ``module``: its releases bound the load too."""
    pinned = engine.contract.pinned
    slots = engine.slots
    if engine.planned_reloads or any(slots.slots[i].module != m or slots.slots[i].state
                                     not in (SlotState.READY, SlotState.BUSY) for i, m in pinned.items()):
        return engine.foresight.earliest_release_s()
    have_pins: dict[str, int] = {}
    for m in pinned.values():
        have_pins[m] = have_pins.get(m, 0) + 1
    copies = len(slots.ready_with(module)) + len(slots.busy_with(module)) + len(slots.coming_with(module))
    now, out = engine.now, float("inf")
    for p in engine.pipelines:
        if len(p.pass_module_counts) == 1 and p.module_counts.get(module, 0) > copies:
            continue          # its frame counts on this load (one pass: it takes it at its commit)
        if all(c <= have_pins.get(m, 0) for counts in p.pass_module_counts for m, c in counts.items()):
            continue          # every stage pinned: it never waits for the port
        out = min(out, max(now, engine.foresight.next_release_s(p)))
    return out

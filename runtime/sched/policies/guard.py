"""What ``edf`` may do besides serving the most urgent frame, so that the admission analysis
(runtime/sched/analysis/schedulability.py) holds: the rules that keep every other use of the port and the
stream inside time the analysis already counts.

- A load that serves no committed frame (a non-urgent frame's demand, prefetch, lending a slot
  to the DNN, a pin) is *hidden* if it ends before the frame or batch on the stream does: it
  then delays nothing the analysis counts. Otherwise, while real-time frames wait it may not
  start at all (the most urgent one owns the port), and while none waits it may start only if it
  ends before the earliest possible next release, or, while no real-time frame streams either
  (the stream free or carrying a DNN batch), if the contract budgets one such load as blocking
  (``idle_loads``).
- A DNN batch starts only while no real-time frame waits, and ends before the earliest possible
  next release or is no longer than the blocking the contract leaves for it (``dnn_block_s``).
"""

from __future__ import annotations

from fpgashare.sched.core.view import EngineView


def side_load_allowed(engine: EngineView, slot: int) -> bool:
    """Whether a load into ``slot`` that serves no committed frame may be queued now (a pin a
    mode change adds is loaded by the change itself: runtime/sched/analysis/mode_change.py)."""
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

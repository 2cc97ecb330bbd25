"""edf's pinned-first start: under a contract with ``pinned_first``
(runtime/sched/analysis/pinned_first.py; the argument is docs/guarantee.md, "Pinned frames
first"), a frame that loads nothing is not held behind a committed frame's loads."""

from __future__ import annotations

from collections.abc import Callable

from fpgashare.sched.core.jobs import Frame
from fpgashare.sched.core.view import EngineView


def start_pinned_first(engine: EngineView, committed: Frame, priority: Callable) -> None:
    """With the stream free and ``committed`` committed: start the most urgent pending frame
    before it if that frame is more urgent and every stage of it sits in a slot pinned for that
    module (it loads nothing, and the committed frame's loads go on)."""
    head = min(engine.pending, key=priority)
    if head is committed:
        return
    chosen, missing = engine.placement.find_slots(head, set())
    pinned = engine.contract.pinned
    if not missing and all(s is not None and pinned.get(s) == m for s, m in zip(chosen, head.modules, strict=True)):
        engine.start(head, chosen)

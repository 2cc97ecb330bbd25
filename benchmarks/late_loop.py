"""A board driven on a virtual clock the way the daemon's loop drives it: pipelines joined one by
one (the loop steps the board until the join's loads are done), and events taken late, each noticed
up to some delay after it is due (the host's response time R).

Shared by the benchmarks and tests that put the host's delay on the board's path
(``host_op_delay``, ``scheduler_cost``, the CPU-prefix and host-delay tests), so they drive it alike.
"""

from __future__ import annotations

from collections.abc import Callable

from fpgashare.catalogue.workload import PipelineSpec
from fpgashare.sched.board.board import Board


def step_to(board: Board, t: float) -> None:
    """Move the board's virtual clock to ``t`` (never back) and let the board act there."""
    board.clock.wait_until(max(t, board.clock.now()))
    board.advance_to(board.clock.now())


def join(board: Board, spec: PipelineSpec) -> bool:
    """Add ``spec`` (already admitted by the caller) and step the board until it is ready or
    refused; whether it joined."""
    ready: list[bool] = []
    board.add_pipeline(spec, admitted=True, on_ready=lambda: ready.append(True),
                       on_refused=lambda _why: ready.append(False))
    while not ready and (due := board.next_event_s()) is not None:
        step_to(board, due)
    return bool(ready and ready[0])


def take_events_until(board: Board, t: float, late: Callable[[], float]) -> None:
    """Take every event due by ``t``, each noticed ``late()`` seconds after it is due (at most at
    ``t``), as a loop that wakes late does."""
    while (due := board.next_event_s()) is not None and due <= t:
        step_to(board, min(due + late(), t))

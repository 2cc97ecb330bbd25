"""A workload's run on a plan's partitions (``bench``): one engine per partition of the plan, fed
by its pipelines' periodic releases, on one board, one clock and one port.

Each partition's engine is the ordinary one-stream engine over a view of the board with only its
slots, its contract the one the plan's verdict proved; the DNN work goes with the partitions the
plan gave it. Every engine counts the board's register traffic, not its view's (one stream, fewer
slots). One registration window serves the whole board: every slot filled once through the one
port, so every engine's run starts at the same ``t0``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace

from fpgashare.backends.base import Backend
from fpgashare.backends.slot_view import SlotView
from fpgashare.catalogue.workload import Workload
from fpgashare.sched.analysis.schedulability import load_seconds
from fpgashare.sched.board.board import Board
from fpgashare.sched.board.stream_plan import StreamPlan
from fpgashare.sched.core.clock import Clock, VirtualClock
from fpgashare.sched.core.engine import Engine
from fpgashare.sched.sources.periodic import PeriodicReleases


def for_workload(workload: Workload, backend: Backend, plan: StreamPlan, make_policy: Callable[[], object],
                 clock: Clock | None = None, want_output: bool = False) -> Board:
    """``plan``'s partitions of ``workload``, each fed by its pipelines' periodic releases."""
    probe = make_policy()
    board = Board.empty(workload, backend, make_policy, clock or VirtualClock(), probe)
    replacement = getattr(probe, "replacement", "belady")
    dnn = tuple(p for p in workload.pipelines if not p.realtime)
    for part in plan.partitions:
        view = SlotView(backend, part.slots)
        sub = replace(workload, platform=view.platform, pipelines=(*part.pipelines, *(dnn if part.dnn else ())))
        contract = part.verdict.contract if part.verdict is not None else None
        engine = Engine(sub, view, make_policy(), clock=board.clock, want_output=want_output, contract=contract,
                        replacement=replacement, source=PeriodicReleases(sub))
        engine.stream_id = part.stream
        engine.dnn_stream_id = part.dnn_stream if part.dnn else None
        engine.control_s = board.control_s      # the board's X, not its view's (one stream, fewer slots)
        engine.loads_after_t0 = not part.quiet
        board.views.append(view)
        board.parts.append(engine)
        board.arbiter.add(engine)
    # One registration window for the board: every slot filled once through the one port.
    board.t0 = (load_seconds(workload.platform) + board.control_s) * len(workload.platform.slots)
    for engine in board.parts:
        engine.t0 = board.t0
    return board


def run_board(workload: Workload, backend: Backend, plan: StreamPlan, make_policy: Callable[[], object],
              **kw) -> tuple[Board, dict]:
    """``workload`` on ``plan``'s partitions; the board and its summary."""
    start = time.perf_counter()
    board = for_workload(workload, backend, plan, make_policy, **kw).run()
    return board, board.summary(time.perf_counter() - start)

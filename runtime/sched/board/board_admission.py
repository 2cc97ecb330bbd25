"""Where a daemon's pipeline goes on the board: which partition admits it, or which re-layout.

A real-time pipeline goes to a partition that admits it, its chain cut into passes for that
partition's slots: the one whose frames then need the fewest loads per second (the port is what
partitions share), then one without DNN work, then the most slack; it stays there. When the board
may re-partition (``cap``), the planner's layout for the set with the newcomer is tried first, as
``bench`` plans it (relayout.py). Best-effort DNN work goes to a partition with tile slots, one
without real-time work first, else the one its frames leave most idle; a stream no partition
uses goes to it for its batches, as ``bench``'s plans give it (``give_spare_stream``). Host-only pipelines go
with partition 0 (they use no fabric). A policy without admission runs on a board of one: every
pipeline goes there unanalysed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from fpgashare.catalogue.platform import Platform
from fpgashare.catalogue.workload import PipelineSpec, on_platform
from fpgashare.errors import FpgashareError
from fpgashare.sched.board.partition_slots import consecutive_runs, ddr_refusal
from fpgashare.sched.board.relayout import replan_test
from fpgashare.sched.board.trials import forget, recall, remember
from fpgashare.sched.core.jobs import Frame
from fpgashare.sched.core.slots import SlotState
from fpgashare.sched.policies.backfill import DNN


def split_slots(platform: Platform, streams: int) -> list[tuple[int, ...]]:
    """The board's slots in ``streams`` runs of consecutive slots, as even as they go (the first
    ones one larger). Refused when the platform has fewer streams or slots."""
    most = min(platform.streams, len(platform.slots))
    if not 1 <= streams <= most:
        raise FpgashareError(f"{platform.path}: {streams} streams asked; platform.streams is {platform.streams} "
                             f"and it has {len(platform.slots)} slots (1..{most})")
    return consecutive_runs([s.index for s in platform.slots], streams)


def name_taken(board, name: str) -> str | None:
    relayout = board.relayout
    if relayout is not None and relayout.joining is not None and relayout.joining.name == name:
        return f"a pipeline named {name!r} is already registered"
    return next((why for e in board.parts if (why := e.members.name_taken(name))), None)


def admission_test(board, spec: PipelineSpec, replan: bool = True,
                   op_delay_s: float | None = None, budgets: bool = True) -> Callable[[], str | None]:
    """A callable that says why ``spec`` cannot join any partition now, or None (then it
    remembers in ``board.chosen`` which partition takes it, with the chain cut into passes for
    that partition's slots, or the re-layout that takes it). The planner's layout for the set with
    ``spec`` is tried first; else a partition in force that admits it; else an even split of the
    board. ``replan`` False: partitions in force only. ``op_delay_s``: how late the host may start
    an operation once ``spec`` runs (``Board.op_delay_s``); if later than the contracts in force
    were analysed for, each must still hold with it. ``budgets``: the chosen partition's verdict
    gets its hold budgets too (False where the test runs on the daemon's loop: they cost several
    tests more). Snapshots are taken now; the call may run off the loop's thread."""
    taken = name_taken(board, spec.name)
    if taken:
        return lambda: taken
    if not spec.realtime or spec.on_cpu_only:
        return lambda: None
    if board.relayout is not None:
        why = (f"the board is changing its partitions for {board.relayout.joining.name}: register again "
               "once that registration has returned")
        return lambda: why
    fitted, reasons = {}, []
    for k, engine in enumerate(board.parts):
        try:
            fitted[k] = on_platform(spec, engine.platform)
        except FpgashareError as exc:
            reasons.append(f"stream {k} (slots {list(board.views[k].global_slots)}): {exc}")
    delay = max(board.op_delay_s, op_delay_s or 0.0)
    control_s = board.control_for(delay)
    rechecks = [(k, e.members.recheck(control_s)) for k, e in enumerate(board.parts)
                if delay > board.op_delay_s and e.members.changes.target_pipelines] if board.admits else []
    if not board.admits:                    # a board of one, nothing analysed
        def unanalysed() -> str | None:
            if 0 not in fitted:
                return reasons[0]
            remember(board.chosen, spec, ("join", 0, fitted[0]))
            return None
        return unanalysed
    ddr = ddr_refusal(board.platform, sum(p.ddr_bytes_per_frame / p.period_s for p in (*board.pipelines, spec)))
    trials = [(k, e, e.members.admission_test(fitted[k], control_s), e.members.changes.target_pipelines,
               bool(e.dnn_pipelines)) for k, e in enumerate(board.parts) if k in fitted]
    # A quarantined slot is in no plan's reach: re-layouts wait until the board is whole again.
    quarantined = any(s.state is SlotState.FAILED for e in board.parts for s in e.slots.slots)
    can_replan = replan and board.cap is not None and board.relayout is None and not quarantined
    planned = replan_test(board, spec, True, control_s, budgets) if can_replan else None
    anyplan = replan_test(board, spec, False, control_s, budgets) if can_replan else None

    def test() -> str | None:
        if ddr:
            return ddr
        verdicts = []
        for k, recheck in rechecks:
            why, verdict = recheck()
            if why:
                return (f"the host: with it the daemon may start an operation {delay * 1e3:.3f} ms late, and "
                        f"stream {k}'s pipelines in force would not keep their deadlines: {why}")
            verdicts.append((k, verdict))
        remember(board.chosen_delay, spec, (delay, verdicts))
        if planned is not None and planned():
            return None
        best, why_not = None, list(reasons)
        for k, engine, trial, before, has_dnn in trials:
            why = trial()
            verdict = recall(engine.members.verdicts, fitted[k], (None, None))[1]
            if why or verdict is None:
                why_not.append(f"stream {k} (slots {list(board.views[k].global_slots)}): {why}")
                continue
            loads = sum(verdict.plan.loads.get(p.name, 0) / p.period_s for p in (*before, spec)) \
                if verdict.plan is not None else 0.0
            rank = (loads, has_dnn, -verdict.slack_s, k)
            if best is None or rank < best[0]:
                best = (rank, k)
        for k, engine, *_ in trials:
            if best is None or k != best[1]:
                recall(engine.members.verdicts, fitted[k], take=True)
        if best is None:
            # No partition in force takes it: the planner's layout may (a board-wide mode change).
            if anyplan is not None and anyplan():
                return None
            if len(board.parts) == 1 and board.cap is None:    # a board of one: its reason is the board's
                return why_not[0].split(": ", 1)[1]
            return "no stream admits it: " + "; ".join(why_not)
        if budgets:
            board.parts[best[1]].members.budget(fitted[best[1]])
        remember(board.chosen, spec, ("join", best[1], fitted[best[1]]))
        return None

    return test


def dnn_home(board) -> int:
    """The partition for best-effort DNN work (module docstring)."""
    options = []
    for k, engine in enumerate(board.parts):
        tiles = len(engine.working_platform().slots_for(DNN)) if DNN in engine.platform.modules else 0
        if tiles:
            members = engine.members.changes.target_pipelines       # joining ones too
            idle = 1.0 - sum(p.exec_s / p.period_s for p in members)
            options.append((not members, idle, tiles, k))
    if not options:
        raise FpgashareError(f"{board.platform.name} has no working dnn_tile slot in any partition")
    return max(options)[3]


def give_spare_stream(board) -> None:
    """The daemon's ``stream_plan.with_spare_stream``: a stream the board may use (up to ``cap``,
    as many as the platform has and the backend carries) that no partition uses goes to a
    partition hosting DNN work, whose batches then take it and may run beside its frames' passes
    (backfill.beside_pass; docs/guarantee.md, "On several streams", item 7). Called after every
    layout and DNN registration. A DNN partition with no real-time pipeline now takes it too:
    pipelines may join it later, and a batch's stream never changes under it (a partition's stream
    is given only while it runs no batch). It is taken back only by a re-layout, and only once the
    board is idle: from the moment one is pending every partition holds its DNN work back
    (``Board.hold_partitions``), and it is adopted when no batch runs (relayout.board_idle).
    A partition whose DNN work has left gives its stream back at the next call with no batch of it
    running."""
    most = min(board.cap or 1, board.platform.streams, getattr(board.backend, "concurrent_streams", 1))
    for engine in board.parts:
        if not engine.dnn_pipelines and not engine.dnn.running:
            engine.dnn_stream_id = None
    taken = {e.stream_id for e in board.parts} | {e.dnn_stream_id for e in board.parts}
    spare = [s for s in range(most) if s not in taken]
    for engine in board.parts:
        if spare and engine.dnn_pipelines and engine.dnn_stream_id is None and not engine.dnn.running:
            engine.dnn_stream_id = spare.pop(0)


def add_pipeline(board, spec: PipelineSpec, admitted: bool = False,
                 on_ready: Callable[[], None] | None = None,
                 on_refused: Callable[[str], None] | None = None) -> None:
    """Register ``spec`` in its partition (``Board.add_pipeline``)."""
    taken = name_taken(board, spec.name)
    if taken:
        raise FpgashareError(taken)
    if spec.on_cpu_only:
        k = 0
    elif not spec.realtime:
        k = dnn_home(board) if DNN in board.platform.modules else 0
    else:
        choice = recall(board.chosen, spec, take=True) if admitted else None
        if choice is None:
            # Not tested by the caller (then it pays for the budgets), or its trial was overtaken:
            # tested here, on a daemon's loop then, without the budgets.
            why = admission_test(board, spec, budgets=not admitted)()
            if why:
                raise FpgashareError(why)
            choice = recall(board.chosen, spec, take=True)
        delay, rechecked = recall(board.chosen_delay, spec, (board.op_delay_s, []), take=True)
        if delay > board.op_delay_s:
            on_ready = _longer_delay(board, delay, rechecked, choice, on_ready)
        board.order.append(spec)
        if choice[0] == "relayout":
            board.relayout = replace(choice[1], on_ready=on_ready, on_refused=on_refused,
                                     asked_at=board.clock.now())
            board.step_relayout()
            return
        _, k, spec = choice
    board.home[spec.name] = k
    try:
        board.parts[k].members.add_pipeline(spec, admitted=True, on_ready=on_ready)
    except BaseException:               # all or nothing: nothing of it stays behind
        board.home.pop(spec.name, None)
        board.order = [p for p in board.order if p.name != spec.name]
        raise
    if not spec.realtime:
        give_spare_stream(board)
    board.arbiter.grant()


def _longer_delay(board, delay: float, rechecked: list, choice: tuple,
                  on_ready: Callable[[], None] | None) -> Callable[[], None] | None:
    """The newcomer makes the host's delay of an operation ``delay``, longer than the contracts in
    force were made for: every other partition changes to its contract re-analysed with it (a
    mode change: same pipelines, pins as the analysis keeps them), and the newcomer is ready only
    once all have switched (its own frames are what makes the loop later). A re-layout's
    partitions are all analysed with it already."""
    board.op_delay_s = delay
    home = choice[1] if choice[0] == "join" else None
    changes = [(k, v) for k, v in rechecked if choice[0] == "join" and k != home]
    if not changes:
        return on_ready
    left = {"n": len(changes) + 1}

    def one_ready() -> None:
        left["n"] -= 1
        if left["n"] == 0 and on_ready is not None:
            on_ready()

    for k, verdict in changes:
        members = board.parts[k].members
        members.changes.ask(verdict, members.changes.target_pipelines, None, one_ready)
    return one_ready


def trial_current(board, spec: PipelineSpec) -> bool:
    """Whether the trial's choice for ``spec`` still stands for the set as it is: False once a
    change (a departure) was asked in the partition it chose since (``add_pipeline`` would then test
    it again where it is called: on a daemon's loop)."""
    choice = recall(board.chosen, spec)
    if choice is None or choice[0] != "join":
        return True
    members = board.parts[choice[1]].members
    entry = recall(members.verdicts, choice[2])
    return entry is None or entry[0] == members.changes.version


def forget_trials(board, name: str) -> None:
    """Drop what admission trials for ``name`` left (trials.py): its registration ended."""
    forget(board.chosen, name)
    forget(board.chosen_delay, name)
    for engine in board.parts:
        forget(engine.members.verdicts, name)


def remove_pipeline(board, name: str, reason: str) -> list[Frame]:
    """End pipeline ``name`` in its partition (``Registrations.remove_pipeline``)."""
    forget_trials(board, name)
    board.order = [p for p in board.order if p.name != name]
    relayout = board.relayout
    if relayout is not None and relayout.joining is not None and relayout.joining.name == name:
        board.relayout = None            # it never ran: nothing to undo
        board.hold_partitions(False)
    k = board.home.pop(name, None)
    if k is None:
        return []
    dropped = board.parts[k].members.remove_pipeline(name, reason)
    give_spare_stream(board)            # a DNN that left may leave a stream to another partition's
    if not any(e.members.changes.target_pipelines or e.pipelines for e in board.parts):
        board.op_delay_s = 0.0              # no contract in force: the next set starts afresh
    board.arbiter.grant()
    return dropped

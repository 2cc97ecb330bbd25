"""Best-effort DNN work in the time real-time pipelines leave the shell, with a cost model.

The shell streams one thing at a time (one video input, one output), so a DNN batch runs only
while no frame runs or waits, and it either ends before the earliest possible next release or is
no longer than the blocking the admission analysis left for it (``guard.batch_room``). Two moves,
made after the real-time dispatch of every event:

- run: one batch on the idle slots holding dnn_tile, split by the partitioner over as many of them
  as make it fastest. A batch is at least the chain's fill latency long (its first image), ends at
  an image boundary, and ends before its slots may be needed as victims of real-time loads
  (``lookahead.victims_due``), before the run ends, and, while another tile is being loaded, once
  it is in (the next batch then runs on the faster chain). Where the DNN has a stream of its own
  (a spare stream the planner gave the partition: ``stream.dnn_apart``), a batch may also run
  *beside* a frame's pass, on tiles no pin holds, ending by the pass's end (``beside_pass``).
- lend: when the port is idle, no real-time frame waits and the DNN holds fewer slots than its
  fastest chain uses, one more idle slot is loaded with dnn_tile if it pays: the DNN compute time
  the extra tile buys before the slot must be back (the stream time real-time frames leave in that
  window, less the chain's fill latency per gap, at the chain's real rate) must be at least
  ``WORTH`` times the port time of the loads it costs (the lend, and the reload of the copy it
  evicts unless an optimal replacement evicts that copy first anyway: ``lend_loads``). A lent slot
  comes back through the ordinary prefetch or demand loads, which evict dnn_tile first (real-time
  work never needs it). When the idle slots hold modules wanted soon, the tile may load hidden
  into one of them while its module moves into a slot the job on the stream frees
  (``pin_move.lend_moves``); and inside an idle gap a pinned slot may be lent, its pin back
  before the next release (``pin_lend``).

A platform with no slot for dnn_tile gives the DNN nothing (``refusal`` says why); never an error.
"""

from __future__ import annotations

from collections import Counter

from fpgashare.dnn.planning import dnn_plan, dnn_slot_count, misfit
from fpgashare.sched.core.view import EngineView, SlotState
from fpgashare.sched.policies import pin_lend
from fpgashare.sched.policies.copy_order import future_items, kept_until_used
from fpgashare.sched.policies.guard import batch_room, side_load_allowed
from fpgashare.sched.policies.lookahead import SLACK_LOADS, reclaim_at, victims_due
from fpgashare.sched.policies.pin_move import lend_moves

#: The longest batch: the stream is free for real-time work again sooner, and a client's images
#: wait less; never shorter than the chain's fill latency (one image).
DNN_BATCH_MAX_S = 10e-3
#: A lend must buy at least this many times the port time of its two loads in DNN compute time.
WORTH = 1.0
#: How far ahead a lend's gain is counted (a slot nobody needs back is judged over this).
LEND_HORIZON_S = 0.1
DNN = "dnn_tile"


def refusal(platform, models=()) -> str | None:
    """Why ``platform`` gives best-effort DNN work nothing, or None if it can run it: no slot holds
    dnn_tile, or one of ``models`` does not fit the platform's tile variant."""
    if DNN not in platform.modules or dnn_slot_count(platform) == 0:
        return f"{platform.name} has no slot that fits dnn_tile: the DNN gets no fabric time"
    return next(filter(None, (misfit(platform, m) for m in models)), None)


def backfill(engine: EngineView, until: float | None = None) -> None:
    """Lend and run (module docstring). ``until``: a cold lend is under way (cold_lend.py): no
    lend, and batches end by then, when the setup's loads start."""
    if not engine.dnn_pipelines or not engine.runs_dnn or engine.changing \
            or refusal(engine.platform, [p.model for p in engine.dnn_pipelines]):
        return      # (during a mode change only real-time work and its pins use the stream and port)
    if until is None:
        _lend(engine)
    _run(engine, until)


def _chain_plan(engine: EngineView, model: str, tiles: int):
    return dnn_plan(engine.platform, model, tiles)


def _until(due: list[float], idle_others: int) -> float:
    """How long a batch may hold its slots: until the k-th victim is due while fewer than k
    other idle DNN slots could serve."""
    for k, t in enumerate(due, 1):
        if idle_others < k:
            return t
    return float("inf")


def beside_pass(engine: EngineView) -> bool:
    """Whether a batch would run beside a real-time pass: the DNN has a stream of its own and a
    frame's pass is on the partition's stream (a batch then ends by that pass's end, on slots no
    pin holds; docs/guarantee.md, "On several streams", item 7)."""
    # (not while a frame is committed: a frame may stream in its load time, and the committed
    # frame's next victim must not wait for a batch)
    return engine.stream.dnn_apart() and not engine.stream.free() and bool(engine.running) \
        and engine.committed is None and not engine.contract.pinned_first


def hidden_load_at(engine: EngineView) -> float:
    """When edf's next real-time load, hidden under the job on the stream, must start (inf: none
    due before that job ends): its just-in-time start (``lookahead.reclaim_at``) if that is
    before the job ends, but no later than the last instant a load still ends under the job.
    Until then the slot it will take may keep a tile (a batch beside the pass runs on it); the
    load, started then, is as hidden as one started at once if the port is free then. On a port
    shared by partitions another partition's load may hold it: the load no longer ends under the
    job, so it is not made then at all (edf's prefetch takes only hidden loads here) and the
    frame that needs the module loads it when it commits. A lent pin's reload is not counted:
    pin_lend.back_by times it."""
    end = engine.foresight.stream_job_end()
    if end is None:
        return float("inf")
    due = victims_due(engine, skip=_lent_pins(engine))
    if not due or due[0] > end:
        return float("inf")
    return min(due[0], end - engine.port.longest_load_s())


def _lent_pins(engine: EngineView) -> list[str]:
    """The modules of the pins lent to the DNN: their reloads are timed by pin_lend.back_by."""
    return [engine.contract.pinned[i] for i in pin_lend.lent(engine)]


def _victims_due(engine: EngineView) -> tuple[list[float], bool]:
    """When the idle victim slots must be back for real-time loads (``lookahead.victims_due``),
    and whether some were due already. With the DNN on a stream of its own, a load already due
    that edf did not start with the port free (the guard allowed no side load) is not made
    before a frame commits: its victim is not held back for it (the batch ends by the next
    release, or with the pass beside it, before any frame commits)."""
    # A lent pin's reload is timed by pin_lend.back_by, which every batch on the lent slots ends
    # by (``_run``): its missing copy is not a victim the batch must give back sooner.
    due = victims_due(engine, skip=_lent_pins(engine))
    hidden = hidden_load_at(engine)
    if due and hidden < due[0]:
        due[0] = hidden          # edf makes that load hidden under the job on the stream, then
    # The k-th of those loads cannot start before the port has done what it has queued and the
    # k-1 before it (one load at a time): its victim is not needed sooner.
    load_s = engine.port.longest_load_s()
    free_at = engine.now + engine.port.backlog_s() - SLACK_LOADS * load_s
    due = [max(t, free_at + k * load_s) for k, t in enumerate(due)]
    now = engine.now
    if not engine.stream.dnn_apart() or not engine.port.free() or not due or due[0] > now:
        return due, False
    return [t for t in due if t > now], True


def _run(engine: EngineView, until: float | None = None) -> None:
    if not engine.stream.dnn_free():
        return      # the DNN's stream carries one batch at a time
    beside = beside_pass(engine)
    if not beside and (engine.pending or not engine.stream.free()):
        return      # frames first, and the stream carries one thing at a time
    # Beside a pass, no pinned slot but one lent for the idle gap (pin_lend.py: the batch ends by
    # ``back_by`` as any batch on a lent pin does, below).
    lent = pin_lend.lent(engine) if beside else ()
    idle = [s.index for s in engine.slots.slots if s.state == SlotState.READY and s.module == DNN
            and not (beside and s.index in engine.contract.pinned and s.index not in lent)]
    waiting = [p for p in engine.dnn_pipelines if engine.dnn.backlog(p)]
    if not idle or not waiting:
        return
    pipeline = min(waiting, key=lambda p: (engine.dnn_images[p.name], p.name))
    plan = _chain_plan(engine, pipeline.model, len(idle))
    size = len(plan.stages)
    now = engine.now
    # Tiles new to their layers are programmed first: the batch is that much longer.
    latency_s = plan.latency_cycles / plan.clock_hz + engine.dnn.setup_s(idle[:size], pipeline.model, plan)
    if until is not None:
        # A cold lend (cold_lend.py): no frame exists before the setup's loads start, at ``until``,
        # and none of them waits for a tile before then (less X: a batch's register traffic may
        # run it over its cycle estimate by that much).
        room = min(until - engine.dnn.overrun_s(), engine.end_s) - now
    elif beside:      # invisible to the real-time work: over by the end of the pass on the stream
        # (less X: its register traffic may run a batch over its cycle estimate by that much, as
        # on the co-simulated board, and the next frame's victim may be one of its tiles)
        due, _ = _victims_due(engine)
        limit = engine.foresight.stream_job_end()
        room = min(_until(due, len(idle) - size) - now, engine.end_s - now,
                   (limit if limit is not None else now) - engine.dnn.overrun_s() - now)
    else:
        due, late = _victims_due(engine)
        room = min(_until(due, len(idle) - size) - now, batch_room(engine), engine.end_s - now)
        if late:    # the late loads go at the next frame's commit: the batch ends before it is released
            room = min(room, engine.foresight.earliest_release_s() - now)
    if pin_lend.lent(engine):
        room = min(room, pin_lend.back_by(engine) - now)     # the lent pins go back before the next release
    if engine.slots.coming_with(DNN):
        # A tile is on its way: end this batch when it is in, so the next runs on the faster chain.
        room = min(room, max(engine.port.backlog_s(), latency_s))
    if room < latency_s:
        return
    per_image_s = plan.bottleneck_cycles / plan.clock_hz
    images = 1 + max(0, int((min(room, max(DNN_BATCH_MAX_S, latency_s)) - latency_s) // per_image_s))
    engine.start_dnn(pipeline, idle[:size], images)


def stream_gaps(engine: EngineView, horizon_s: float) -> list[tuple[float, float]]:
    """The stream's idle intervals from now to ``horizon_s`` from now if the real-time frames
    pending and due in that window (nominal releases) run back to back in release order."""
    now = engine.now
    end = now + horizon_s
    jobs = [(now, f.remaining_s) for f in engine.pending]
    for p in engine.pipelines:
        t = engine.foresight.next_release_s(p)
        while t < end:
            jobs.append((max(t, now), p.exec_s))
            t += p.period_s
    gaps, t = [], engine.stream.free_at()
    for release, exec_s in sorted(jobs):
        if release > t:
            gaps.append((t, release))
        t = max(t, release) + exec_s
    if t < end:
        gaps.append((t, end))
    return gaps


def lend_gain_s(engine: EngineView, model: str, held: int, gaps: list[tuple[float, float]], ready_s: float,
                until_s: float) -> float:
    """DNN compute time one more tile buys: in the stream's idle ``gaps`` between the tile's
    arrival (``ready_s``) and its return (``until_s``), each less the chain's fill latency, at the
    chain's rate with ``held + 1`` tiles against ``held`` tiles."""
    more = _chain_plan(engine, model, held + 1)
    fill = more.latency_cycles / more.clock_hz
    usable = sum(max(0.0, min(b, until_s) - max(a, ready_s) - fill) for a, b in gaps if b > ready_s and a < until_s)
    if held == 0:
        return usable
    # The extra tile speeds the chain up: the images it adds, at the faster chain's pace.
    fewer = _chain_plan(engine, model, held)
    return max(0.0, usable * (fewer.bottleneck_cycles / more.bottleneck_cycles - 1.0))


def _unpinned_copies(engine: EngineView) -> list[tuple[str, int] | None]:
    """The copies the slots no pin holds hold (or receive), as items (module, k): a module's
    copies past those its pins hold, numbered on; None for a tile, a blank or a failed slot."""
    pinned = engine.contract.pinned
    seen = Counter(pinned.values())
    out: list[tuple[str, int] | None] = []
    for s in engine.slots.slots:
        if s.index in pinned:
            continue
        if s.module is None or s.module == DNN or s.state == SlotState.FAILED:
            out.append(None)
            continue
        out.append((s.module, seen[s.module]))
        seen[s.module] += 1
    return out


def lend_loads(cache: list[tuple[str, int] | None], module: str | None,
               accesses: list[tuple[str, int]]) -> int:
    """Loads a lend of an unpinned slot holding ``module`` costs: the tile's, and the reload of
    the copy it evicts unless an optimal replacement evicts that copy before its next use anyway
    (``copy_order.kept_until_used``: Belady's MIN over the copies the next passes and releases
    use, ``accesses``, from the unpinned slots' ``cache``). Losing one of n copies loses the n-th.
    If MIN evicts it first, the same loads with the tile in its place (real-time work never
    needs dnn_tile, so MIN evicts the tile there) serve every access: no real-time load is added."""
    if module is None:
        return 1
    last = max((c for c in cache if c is not None and c[0] == module), key=lambda c: c[1], default=None)
    return 1 if last is None or not kept_until_used(cache, last, accesses) else 2


def _taken_back_at_once(engine: EngineView, ready_s: float, reclaim_s: float) -> bool:
    """Whether a tile ready at ``ready_s`` would be evicted as soon as it is in: the job on the
    stream is still running then and the first real-time load is due (``reclaim_s``, with the
    lent slot's module gone) before that job ends, so edf prefetches it hidden under the job
    at once, into the tile first (real-time work never needs dnn_tile). Such a lend buys no
    image and costs its load and a reload."""
    end = engine.foresight.stream_job_end()
    return end is not None and ready_s < end and reclaim_s <= end


def _lend(engine: EngineView) -> None:
    if not engine.port.free() or engine.pending or engine.committed is not None \
            or not any(engine.dnn.backlog(p) for p in engine.dnn_pipelines):
        return
    model = min(engine.dnn_pipelines, key=lambda p: p.name).model
    platform = engine.platform
    # One batch at a time runs on one chain: a slot beyond the fastest chain's tiles adds nothing.
    held = sum(s.module == DNN and s.state != SlotState.FAILED for s in engine.slots.slots)
    if held >= len(_chain_plan(engine, model, dnn_slot_count(platform)).stages):
        return
    now = engine.now
    # On a stream of its own the DNN also runs beside the frames' passes: its tile is usable
    # whenever it is in (until it is reclaimed), not only in the stream's gaps.
    gaps = stream_gaps(engine, LEND_HORIZON_S) if not engine.stream.dnn_apart() else [(now, now + LEND_HORIZON_S)]
    best: tuple[float, int] | None = None
    room = pin_lend.back_by(engine)        # while pins are lent, every load ends before their reloads
    future: list = []       # computed only when a lend's cost decides it (a play-out)

    def cost(module: str | None) -> int:
        if module is None:
            return 1
        if not future:
            future.extend((_unpinned_copies(engine), future_items(engine)))
        return lend_loads(future[0], module, future[1])
    for s in engine.slots.slots:
        if s.state not in (SlotState.BLANK, SlotState.READY) or s.module == DNN or s.index in engine.slots.pinned \
                or not engine.slots.compatible(s.index, DNN) or not engine.slots.can_take(s.index, DNN):
            continue
        load_s = engine.port.load_seconds(s.index)
        ready = now + engine.port.backlog_s() + load_s
        reclaim = reclaim_at(engine, evicting=s.index)
        until = min(reclaim, engine.end_s, now + LEND_HORIZON_S, room)
        gain = lend_gain_s(engine, model, held, gaps, ready, until) \
            if ready <= room and not _taken_back_at_once(engine, ready, reclaim) else 0.0
        if (best is None or gain > best[0]) and gain >= WORTH * load_s \
                and (gain >= WORTH * 2 * load_s or gain >= WORTH * cost(s.module) * load_s):
            best = (gain, s.index)
    # Or a pinned slot, for the idle gap only: its pin back before the next release (pin_lend.py).
    if pin_lend.may_lend(engine):
        room = pin_lend.back_by(engine, extra=1)
        for slot in pin_lend.candidates(engine):
            load_s = engine.port.load_seconds(slot)
            ready = now + engine.port.backlog_s() + load_s
            if ready > room:
                continue
            gain = lend_gain_s(engine, model, held, gaps, ready, min(room, engine.end_s, now + LEND_HORIZON_S))
            if gain >= WORTH * 2 * load_s and (best is None or gain > best[0]):
                best = (gain, slot)
    # Or a slot whose module goes, hidden, into a slot the job on the stream frees (pin_move.py):
    # the tile then displaces a module wanted later.
    moved = None
    for move in lend_moves(engine, DNN) if not pin_lend.lent(engine) else ():
        reclaim = reclaim_at(engine, evicting=move.to)
        until = min(reclaim, engine.end_s, now + LEND_HORIZON_S)
        load_s = engine.port.load_seconds(move.into)
        gain = lend_gain_s(engine, model, held, gaps, now + load_s, until) \
            if not _taken_back_at_once(engine, now + load_s, reclaim) else 0.0
        if gain >= WORTH * 2 * load_s and (best is None or gain > best[0]):
            best, moved = (gain, move.into), move
    if best is not None and side_load_allowed(engine, best[1]):
        if moved is not None:
            if moved.into in engine.slots.pinned:
                engine.move_pin(moved.into, moved.to)
            else:
                engine.plan_reload(moved.to, moved.held, engine.foresight.earliest_release_s())
        engine.load(best[1], DNN, "dnn-pin" if best[1] in engine.contract.pinned else "dnn")

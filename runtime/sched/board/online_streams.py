"""The daemon on several video streams: the board cut into fixed partitions (a stream and slots of
its own each), one online engine per partition, one configuration port between them.

Why it holds (the same argument as for a workload's partitions, runtime/sched/board/stream_plan.py):
a partition's frames and DNN batches use only its own stream and slots, so inside it the
one-stream analysis holds as it is; what partitions share is the port, granted round-robin with
at most one load queued or in flight per partition (port_share.py), so every partition is analysed
with ``port_share`` = the number of partitions (fixed while the daemon runs: a pipeline that comes
later never lengthens the waits counted for one admitted earlier) and the board's longest load and
register traffic. The frames of every stream share the DDR: admission checks them all together.

A real-time pipeline goes to a partition that admits it, its chain cut into passes for that
partition's slots: the one whose frames then need the fewest loads per second (the port is what
partitions share), then one without DNN work, then the most slack; it stays there. Best-effort DNN
work goes to a partition with tile slots, one without real-time work first, else the one its frames
leave most idle. Host-only pipelines go with partition 0 (they use no fabric).

The daemon sees this object as it sees one ``OnlineEngine`` (the same calls and figures, slots
numbered as on the board).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from dataclasses import replace as dc_replace

import numpy as np
from fpgashare.backends.base import Backend
from fpgashare.backends.slot_view import SlotView
from fpgashare.catalogue.platform import Platform
from fpgashare.catalogue.workload import PipelineSpec, on_platform
from fpgashare.errors import FpgashareError
from fpgashare.sched.analysis.control_traffic import control_seconds
from fpgashare.sched.analysis.schedulability import load_seconds
from fpgashare.sched.board.online import OnlineEngine
from fpgashare.sched.board.port_share import PortArbiter
from fpgashare.sched.board.relayout import Relayout, replan_test, step_relayout
from fpgashare.sched.board.stream_plan import consecutive_runs, ddr_refusal
from fpgashare.sched.board.streams import board_trace, step_partitions
from fpgashare.sched.core.clock import Clock
from fpgashare.sched.core.engine import DnnRequest, Frame
from fpgashare.sched.core.jobs import TraceEvent
from fpgashare.sched.core.port import LoadRequest
from fpgashare.sched.core.slots import Slot, SlotState
from fpgashare.sched.policies.backfill import DNN


def split_slots(platform: Platform, streams: int) -> list[tuple[int, ...]]:
    """The board's slots in ``streams`` runs of consecutive slots, as even as they go (the first
    ones one larger). Refused when the platform has fewer streams or slots."""
    most = min(platform.streams, len(platform.slots))
    if not 1 <= streams <= most:
        raise FpgashareError(f"{platform.path}: {streams} streams asked; platform.streams is {platform.streams} "
                             f"and it has {len(platform.slots)} slots (1..{most})")
    return consecutive_runs([s.index for s in platform.slots], streams)


@dataclass
class BoardPort:
    """The one port as status and metrics read it: every partition's loads together."""

    loads: int
    busy_s: float
    queue: list[LoadRequest] = field(default_factory=list)
    current: LoadRequest | None = None


@dataclass
class BoardSlots:
    """Every slot with its board index (a snapshot) and the port."""

    slots: list[Slot]
    port: BoardPort


class OnlineStreams:
    """``OnlineEngine``'s interface over fixed partitions of the board (module docstring)."""

    def __init__(self, platform: Platform, backend: Backend, make_policy: Callable[[], object], clock: Clock,
                 partitions: list[tuple[int, ...]], cap: int | None = None) -> None:
        """``partitions``: the board's slots by stream at the start; ``cap``: the most streams
        the board may be re-partitioned into as pipelines come (runtime/sched/board/relayout.py), None:
        the partitions stay as given."""
        covered = sorted(s for part in partitions for s in part)
        if covered != sorted(s.index for s in platform.slots):
            raise FpgashareError(f"partitions {[list(p) for p in partitions]} must cover every slot of "
                                 f"{platform.name} once")
        self.platform, self.backend, self.clock = platform, backend, clock
        probe = make_policy()
        if not getattr(probe, "admission", False):
            raise FpgashareError("partitions of the board need a policy whose admission places pipelines (edf)")
        self._make_policy, self._port_order = make_policy, getattr(probe, "port_order", "round-robin")
        self.cap = cap
        self._shared: dict = {}               # what the daemon sets on every partition (on_finish, cpu, ...)
        self._retired: list[tuple[SlotView, OnlineEngine]] = []   # partitions of earlier layouts
        self._build(partitions)
        self._home: dict[str, int] = {}       # pipeline -> its partition
        self._order: list[PipelineSpec] = []  # real-time pipelines as registered (before fitting), in order
        #: admission's choice, for add_pipeline: ("join", partition, fitted spec) or ("relayout", Relayout)
        self._chosen: dict[str, tuple] = {}
        self._relayout: Relayout | None = None
        self.relayouts = 0                    #: layouts adopted

    def _build(self, partitions: list[tuple[int, ...]]) -> None:
        """One engine per partition, on one port (round-robin between them)."""
        self.views = [SlotView(self.backend, part) for part in partitions]
        self.parts: list[OnlineEngine] = []
        self.arbiter = PortArbiter(self._port_order)
        shared = {"port_share": len(partitions), "board_load_s": load_seconds(self.platform),
                  "control_s": control_seconds(self.platform), "check_ddr": False}
        for k, view in enumerate(self.views):
            engine = OnlineEngine(view.platform, view, self._make_policy(), self.clock)
            engine.stream_id = k
            engine.analysis_kw = dict(shared)
            engine.afford_share = max(self.cap or 1, len(partitions))
            for name, value in self._shared.items():
                setattr(engine, name, value)
            self.arbiter.add(engine)
            self.parts.append(engine)

    # ---- what the daemon sets on its engine: every partition shares it
    def _set_all(self, name: str, value) -> None:
        self._shared[name] = value
        for engine in self.parts:
            setattr(engine, name, value)

    on_finish = property(lambda self: self.parts[0].on_finish, lambda self, v: self._set_all("on_finish", v))
    cpu = property(lambda self: self.parts[0].cpu, lambda self, v: self._set_all("cpu", v))
    cpu_besteffort = property(lambda self: self.parts[0].cpu_besteffort,
                              lambda self, v: self._set_all("cpu_besteffort", v))
    watchdog_margin = property(lambda self: self.parts[0].watchdog_margin,
                               lambda self, v: self._set_all("watchdog_margin", v))

    # ---- what the daemon reads, for the whole board
    @property
    def pipelines(self) -> list[PipelineSpec]:
        return [p for e in self.parts for p in e.pipelines]

    @property
    def dnn_pipelines(self) -> list[PipelineSpec]:
        return [p for e in self.parts for p in e.dnn_pipelines]

    @property
    def cpu_pipelines(self) -> list[PipelineSpec]:
        return [p for e in self.parts for p in e.cpu_pipelines]

    @property
    def frames(self) -> list[Frame]:
        return [f for e in self.parts for f in e.frames]

    @property
    def on_cpu(self) -> dict:
        """Frames and images on the host, every partition's."""
        return {k: v for e in self.parts for k, v in e.cpu_jobs.running.items()}

    @property
    def dnn_queue(self) -> dict[str, list[DnnRequest]]:
        return {k: v for e in self.parts for k, v in e.dnn_queue.items()}

    @property
    def dnn_images(self) -> dict[str, int]:
        return {k: v for e in self.parts for k, v in e.dnn_images.items()}

    def _every(self) -> list[tuple[SlotView, OnlineEngine]]:
        """Every partition the board has had: the figures of a run count earlier layouts too."""
        return [*self._retired, *zip(self.views, self.parts, strict=True)]

    @property
    def watchdog_fired(self) -> int:
        return sum(e.watchdog_fired for _, e in self._every())

    @property
    def busy_by_slot(self) -> list[float]:
        out = [0.0] * len(self.platform.slots)
        for view, engine in self._every():
            for local, busy in enumerate(engine.busy_by_slot):
                out[view.global_slots[local]] += busy
        return out

    @property
    def slot_busy_s(self) -> float:
        return sum(e.slot_busy_s for _, e in self._every())

    @property
    def slots(self) -> BoardSlots:
        by_index: dict[int, Slot] = {}
        for view, engine in zip(self.views, self.parts, strict=True):
            for local, slot in enumerate(engine.slots.slots):
                by_index[view.global_slots[local]] = dc_replace(slot, index=view.global_slots[local])
        ports = [e.slots.port for _, e in self._every()]
        port = BoardPort(sum(p.loads for p in ports), sum(p.busy_s for p in ports),
                         [r for p in ports for r in p.queue],
                         next((p.current for p in ports if p.current is not None), None))
        return BoardSlots([by_index[k] for k in sorted(by_index)], port)

    @property
    def trace(self) -> list[TraceEvent]:
        every = self._every()
        return board_trace([v for v, _ in every], [e for _, e in every])

    def slot_streams(self) -> list[int]:
        """The video stream each board slot belongs to."""
        out = [0] * len(self.platform.slots)
        for k, view in enumerate(self.views):
            for g in view.global_slots:
                out[g] = k
        return out

    def partition_of(self, name: str) -> tuple[int, tuple[int, ...]]:
        """The stream and the board's slots pipeline ``name`` runs on."""
        if name not in self._home:
            raise FpgashareError(f"no pipeline {name!r}")
        k = self._home[name]
        return k, self.views[k].global_slots

    # ---- the loop
    def begin(self) -> None:
        for engine in self.parts:
            engine.begin()
        self.arbiter.grant()

    def next_event_s(self) -> float | None:
        due = [t for t in (e.next_event_s() for e in self.parts) if t is not None]
        return min(due, default=None)

    def advance_to(self, horizon: float) -> None:
        """Every partition's events due by ``horizon``, in time order across partitions; after
        each step the port goes to the next partition with a load waiting, and a re-layout
        waiting for a board-idle instant looks for one."""
        self._step_relayout()
        while (t := self.next_event_s()) is not None and t <= horizon:
            step_partitions(self.parts, self.arbiter, t)
            self._step_relayout()
        self.arbiter.grant()

    def _replan_test(self, spec: PipelineSpec):
        return replan_test(self, spec)

    def _hold_partitions(self, held: bool) -> None:
        """While a re-layout waits, every partition holds back best-effort work (mode_change.py)."""
        for engine in self.parts:
            engine.held_by_board = held

    def _step_relayout(self) -> None:
        """Adopt the waiting re-layout at a board-idle instant, or give it up (relayout.py)."""
        step_relayout(self)

    @property
    def busy(self) -> bool:
        """Whether a re-layout waits for its board-idle instant (registrations wait for it)."""
        return self._relayout is not None

    # ---- pipelines
    def _name_taken(self, name: str) -> str | None:
        if self._relayout is not None and self._relayout.joining is not None and self._relayout.joining.name == name:
            return f"a pipeline named {name!r} is already registered"
        return next((why for e in self.parts if (why := e._name_taken(name))), None)

    def admission_test(self, spec: PipelineSpec, replan: bool = True):
        """A callable that says why ``spec`` cannot join any partition now, or None (then it
        remembers which partition takes it, with the chain cut into passes for that partition's
        slots, or the re-layout that takes it). The planner's layout for the set with ``spec`` is
        tried first, as ``bench`` plans it (relayout.py); else a partition in force that admits it;
        else an even split of the board. ``replan`` False: partitions in force only. Snapshots
        are taken now; the call may run off the loop's thread."""
        taken = self._name_taken(spec.name)
        if taken:
            return lambda: taken
        if not spec.realtime or spec.on_cpu_only:
            return lambda: None
        if self._relayout is not None:
            why = (f"the board is changing its partitions for {self._relayout.joining.name}: register again "
                   "once that registration has returned")
            return lambda: why
        fitted, reasons = {}, []
        for k, engine in enumerate(self.parts):
            try:
                fitted[k] = on_platform(spec, engine.platform)
            except FpgashareError as exc:
                reasons.append(f"stream {k} (slots {list(self.views[k].global_slots)}): {exc}")
        ddr = ddr_refusal(self.platform, sum(p.ddr_bytes_per_frame / p.period_s for p in (*self.pipelines, spec)))
        trials = [(k, e, e.admission_test(fitted[k]), e.changes.target_pipelines, bool(e.dnn_pipelines))
                  for k, e in enumerate(self.parts) if k in fitted]
        # A quarantined slot is in no plan's reach: re-layouts wait until the board is whole again.
        quarantined = any(s.state is SlotState.FAILED for e in self.parts for s in e.slots.slots)
        can_replan = replan and self.cap is not None and self._relayout is None and not quarantined
        planned = replan_test(self, spec, planner_only=True) if can_replan else None
        replan = self._replan_test(spec) if can_replan else None

        def test() -> str | None:
            if ddr:
                return ddr
            if planned is not None and planned():
                return None
            best, why_not = None, list(reasons)
            for k, engine, trial, before, has_dnn in trials:
                why = trial()
                verdict = engine._verdicts.get(spec.name, (None, None))[1]
                if why or verdict is None:
                    why_not.append(f"stream {k} (slots {list(self.views[k].global_slots)}): {why}")
                    continue
                loads = sum(verdict.plan.loads.get(p.name, 0) / p.period_s for p in (*before, spec)) \
                    if verdict.plan is not None else 0.0
                rank = (loads, has_dnn, -verdict.slack_s, k)
                if best is None or rank < best[0]:
                    best = (rank, k)
            for k, engine, *_ in trials:
                if best is None or k != best[1]:
                    engine._verdicts.pop(spec.name, None)
            if best is None:
                # No partition in force takes it: the planner's layout may (a board-wide mode change).
                if replan is not None and replan():
                    return None
                return "no stream admits it: " + "; ".join(why_not)
            self._chosen[spec.name] = ("join", best[1], fitted[best[1]])
            return None

        return test

    def admit(self, spec: PipelineSpec) -> str | None:
        """Why ``spec`` cannot join the admitted set, or None if it can."""
        return self.admission_test(spec)()

    def _dnn_home(self) -> int:
        """The partition for best-effort DNN work (module docstring)."""
        options = []
        for k, engine in enumerate(self.parts):
            tiles = len(engine.working_platform().slots_for(DNN)) if DNN in engine.platform.modules else 0
            if tiles:
                members = engine.changes.target_pipelines       # joining ones too
                idle = 1.0 - sum(p.exec_s / p.period_s for p in members)
                options.append((not members, idle, tiles, k))
        if not options:
            raise FpgashareError(f"{self.platform.name} has no working dnn_tile slot in any partition")
        return max(options)[3]

    def add_pipeline(self, spec: PipelineSpec, admitted: bool = False,
                     on_ready: Callable[[], None] | None = None,
                     on_refused: Callable[[str], None] | None = None) -> None:
        """Register ``spec`` in its partition; ``admitted``: the caller ran ``admission_test``;
        ``on_ready``: as ``OnlineEngine.add_pipeline``; ``on_refused``: called with the reason if
        a re-layout it needs cannot find its board-idle instant in time (runtime/sched/board/relayout.py)."""
        taken = self._name_taken(spec.name)
        if taken:
            raise FpgashareError(taken)
        if spec.on_cpu_only:
            k = 0
        elif not spec.realtime:
            k = self._dnn_home() if DNN in self.platform.modules else 0
        else:
            if not admitted or spec.name not in self._chosen:
                why = self.admission_test(spec)()
                if why:
                    raise FpgashareError(why)
            choice = self._chosen.pop(spec.name)
            self._order.append(spec)
            if choice[0] == "relayout":
                self._relayout = dc_replace(choice[1], on_ready=on_ready, on_refused=on_refused,
                                            asked_at=self.clock.now())
                self._step_relayout()
                return
            _, k, spec = choice
        self._home[spec.name] = k
        try:
            self.parts[k].add_pipeline(spec, admitted=True, on_ready=on_ready)
        except BaseException:               # all or nothing: nothing of it stays behind
            self._home.pop(spec.name, None)
            self._order = [p for p in self._order if p.name != spec.name]
            raise
        self.arbiter.grant()

    def remove_pipeline(self, name: str, reason: str) -> list[Frame]:
        """End pipeline ``name`` in its partition (``OnlineEngine.remove_pipeline``)."""
        self._chosen.pop(name, None)
        self._order = [p for p in self._order if p.name != name]
        if self._relayout is not None and self._relayout.joining is not None and self._relayout.joining.name == name:
            self._relayout = None            # it never ran: nothing to undo
            self._hold_partitions(False)
        k = self._home.pop(name, None)
        if k is None:
            return []
        dropped = self.parts[k].remove_pipeline(name, reason)
        self.arbiter.grant()
        return dropped

    # ---- frames
    def _engine_of(self, name: str) -> OnlineEngine:
        k = self._home.get(name)
        if k is None:
            raise FpgashareError(f"no pipeline {name!r}")
        return self.parts[k]

    def submit(self, name: str, pixels: np.ndarray) -> Frame:
        """A frame of pipeline ``name``, to its partition (``OnlineEngine.submit``)."""
        return self._engine_of(name).submit(name, pixels)

    def submit_dnn(self, name: str, image: np.ndarray) -> DnnRequest:
        """An image for DNN pipeline ``name``, to its partition (``OnlineEngine.submit_dnn``)."""
        return self._engine_of(name).submit_dnn(name, image)

"""One board: its partitions (a video stream and slots of its own each), one engine per partition,
all on one event loop over one clock and one configuration port.

Each partition's engine is the ordinary one-stream engine over a view of the board with only its
slots (backends/slot_view.py) and its own policy instance, so everything proved and tested for one
stream holds inside it. What partitions share is the port, granted round-robin with at most one
load queued or in flight per partition (port_share.py), so every partition is analysed with the
port shared by all of them and the board's longest load and register traffic; and the DDR, which
admission checks over every stream at once. A board of one is a board whose one partition has
every slot.

Frames come from a *release source* (runtime/sched/sources/):
- ``workload_run.for_workload``: a workload's periodic releases on a plan's partitions (``bench``);
- ``Board(...)``: the frames apps submit to the daemon, pipelines registering and leaving as they
  come (board_admission.py places them; with ``cap`` the board re-partitions itself through a
  board-wide mode change, relayout.py).

This loop takes the partitions' events in time order, and after each step lets the port arbiter
start the next partition's load. Port figures that only make sense for the whole board (exposed
reconfiguration: the port busy while no slot of any partition computes) are counted here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import numpy as np
from fpgashare.backends.base import Backend
from fpgashare.backends.slot_view import SlotView
from fpgashare.catalogue.platform import Platform
from fpgashare.catalogue.workload import PipelineSpec, Workload
from fpgashare.errors import FpgashareError
from fpgashare.sched.analysis.control_traffic import control_seconds
from fpgashare.sched.analysis.schedulability import UNCONSTRAINED, AdmissionContract, load_seconds
from fpgashare.sched.board import board_admission, board_figures
from fpgashare.sched.board.dnn_queue import QueuedDnnJobs
from fpgashare.sched.board.port_share import PortArbiter, step_partitions
from fpgashare.sched.board.registrations import Registrations
from fpgashare.sched.board.relayout import Relayout, step_relayout
from fpgashare.sched.board.trials import Store
from fpgashare.sched.core.clock import Clock
from fpgashare.sched.core.engine import DnnRequest, Engine, Frame
from fpgashare.sched.core.jobs import TraceEvent
from fpgashare.sched.sources.submitted import Submissions

#: Trace slices a daemon's partition keeps (the newest): a daemon runs for days; the demo's whole
#: run fits easily.
TRACE_LIMIT = 100_000


class Board:
    """A daemon's board: fixed ``partitions`` (the board's slots by stream at the start) fed by
    submits; ``cap``: the most streams the board may re-partition into as pipelines come
    (relayout.py), None: the partitions stay as given. ``workload_run.for_workload``: a workload's run."""

    def __init__(self, platform: Platform, backend: Backend, make_policy: Callable[[], object], clock: Clock,
                 partitions: list[tuple[int, ...]], cap: int | None = None) -> None:
        covered = sorted(s for part in partitions for s in part)
        if covered != sorted(s.index for s in platform.slots):
            raise FpgashareError(f"partitions {[list(p) for p in partitions]} must cover every slot of "
                                 f"{platform.name} once")
        probe = make_policy()
        self.admits = bool(getattr(probe, "admission", False))
        if not self.admits and (len(partitions) > 1 or (cap or 1) > 1):
            raise FpgashareError("partitions of the board need a policy whose admission places pipelines (edf)")
        self._setup(platform, backend, make_policy, clock, probe, None)
        self.cap = cap if cap is not None and cap > 1 else None     # one stream: nothing to re-partition
        self.build(partitions)

    @classmethod
    def whole(cls, platform: Platform, backend: Backend, make_policy: Callable[[], object], clock: Clock,
              cap: int | None = None) -> Board:
        """A daemon's board that starts as one partition of every slot (a board of one unless
        ``cap`` lets it re-partition)."""
        return cls(platform, backend, make_policy, clock, [tuple(s.index for s in platform.slots)], cap)

    def _setup(self, platform: Platform, backend: Backend, make_policy: Callable[[], object], clock: Clock,
               probe, workload: Workload | None) -> None:
        self.platform, self.backend, self.clock, self.workload = platform, backend, clock, workload
        #: whether the backend's hardware keeps time with this clock (the co-simulated board):
        #: only then is it run up to each event
        self._keeps_time = type(backend).run_hardware is not Backend.run_hardware
        self._held = False                    # whether partitions hold back for a re-layout
        self._op_delay_s = 0.0
        self._make_policy, self._port_order = make_policy, getattr(probe, "port_order", "round-robin")
        self._shared: dict = {}               # what the daemon sets on every partition (on_finish, cpu, ...)
        self.retired: list[tuple[SlotView, Engine]] = []   #: partitions of earlier layouts
        self.home: dict[str, int] = {}        #: pipeline -> its partition
        self.order: list[PipelineSpec] = []   #: real-time pipelines as registered (before fitting), in order
        #: admission's choice, for add_pipeline: ("join", partition, fitted spec) or ("relayout", Relayout),
        #: per spec object (trials.py), as is the host's delay each admitted newcomer was checked with
        self.chosen: Store = {}
        self.chosen_delay: Store = {}
        self.relayout: Relayout | None = None
        self.relayouts = 0                    #: layouts adopted
        self.cap: int | None = None
        self.t0 = 0.0
        self.exposed_reconfig_s = self.stalled_reconfig_s = self.steady_exposed_s = 0.0
        self.exposed_by_reason: dict[str, float] = {}
        self.accounted_to = 0.0   #: board time the port figures are counted to

    @classmethod
    def empty(cls, workload: Workload, backend: Backend, make_policy: Callable[[], object], clock: Clock,
              probe: object) -> Board:
        """A board for ``workload``'s run with no partition yet (workload_run.py gives it a plan's);
        ``probe``: one of ``make_policy``'s policies, read for what the board runs them with."""
        board = cls.__new__(cls)
        board.admits = bool(getattr(probe, "admission", False))
        board._setup(workload.platform, backend, make_policy, clock, probe, workload)
        board.views, board.parts, board.arbiter = [], [], PortArbiter(board._port_order)
        return board

    def build(self, partitions: list[tuple[int, ...]]) -> None:
        """One engine per partition, fed by submits, on one port (round-robin between them)."""
        self.views = [SlotView(self.backend, part) for part in partitions]
        self.parts: list[Engine] = []
        self.arbiter = PortArbiter(self._port_order)
        shared = {"port_share": len(partitions), "board_load_s": load_seconds(self.platform),
                  "control_s": self.control_s, "check_ddr": False}
        empty = Workload(Path("<daemon>"), self.platform, 0, float("inf"), ())
        for k, view in enumerate(self.views):
            source = Submissions()
            engine = Engine(replace(empty, platform=view.platform), view, self._make_policy(), self.clock,
                            want_output=True, dnn_jobs=QueuedDnnJobs, source=source, watchdog=True,
                            trace_limit=TRACE_LIMIT)
            engine.members = Registrations(engine, source)
            engine.stream_id = k
            engine.control_s = self.control_s       # the board's X, not its view's (one stream, fewer slots)
            engine.members.analysis_kw = dict(shared)
            engine.members.afford_share = max(self.cap or 1, len(partitions))
            for name, value in self._shared.items():
                _share(engine, name, value)
            self.arbiter.add(engine)
            self.parts.append(engine)

    # ---- the host's delay of every fabric operation
    @property
    def op_delay_s(self) -> float:
        """How late the daemon's loop may start a frame's pass or a load after its event (the
        host's response bound, runtime/sched/host/host_cost.py); 0 where the host is free."""
        return self._op_delay_s

    @op_delay_s.setter
    def op_delay_s(self, seconds: float) -> None:
        self._op_delay_s = seconds
        for engine in self.parts:
            engine.control_s = self.control_s
            if engine.members is not None:
                engine.members.analysis_kw["control_s"] = self.control_s

    @property
    def control_s(self) -> float:
        """What every operation costs the analysis beyond its cycles: the shell's register traffic
        plus the host's delay of it (a late start is as much stream or port time lost)."""
        return self.control_for(self._op_delay_s)

    def control_for(self, op_delay_s: float) -> float:
        """``control_s`` were the host's delay ``op_delay_s``."""
        return control_seconds(self.platform) + op_delay_s

    # ---- what the daemon sets on its engine: every partition shares it
    def _set_all(self, name: str, value) -> None:
        self._shared[name] = value
        for engine in self.parts:
            _share(engine, name, value)

    on_finish = property(lambda self: self.parts[0].on_finish, lambda self, v: self._set_all("on_finish", v))
    on_event_taken = property(lambda self: self.parts[0].on_event_taken,
                              lambda self, v: self._set_all("on_event_taken", v))
    cpu = property(lambda self: self.parts[0].cpu, lambda self, v: self._set_all("cpu", v))
    cpu_besteffort = property(lambda self: self.parts[0].cpu_besteffort,
                              lambda self, v: self._set_all("cpu_besteffort", v))
    watchdog_margin = property(lambda self: self.parts[0].watchdog.margin,
                               lambda self, v: self._set_all("watchdog_margin", v))

    # ---- what is read of the whole board
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
        return {k: v for e in self.parts for k, v in getattr(e.dnn, "queue", {}).items()}

    @property
    def dnn_images(self) -> dict[str, int]:
        return {k: v for e in self.parts for k, v in e.dnn_images.items()}

    def every(self) -> list[tuple[SlotView, Engine]]:
        """Every partition the board has had: the figures of a run count earlier layouts too."""
        return [*self.retired, *zip(self.views, self.parts, strict=True)]

    @property
    def watchdog_fired(self) -> int:
        return sum(e.watchdog.fired for _, e in self.every() if e.watchdog is not None)

    @property
    def busy_by_slot(self) -> list[float]:
        return board_figures.busy_by_slot(self)

    @property
    def slot_busy_s(self) -> float:
        return sum(e.slot_busy_s for _, e in self.every())

    @property
    def slots(self) -> board_figures.BoardSlots:
        return board_figures.board_slots(self)

    @property
    def trace(self) -> list[TraceEvent]:
        every = self.every()
        return board_figures.board_trace([v for v, _ in every], [e for _, e in every])

    @property
    def contract(self) -> AdmissionContract:
        """Every partition's pins, by board slot."""
        pinned = {view.global_slots[s]: m for view, e in zip(self.views, self.parts, strict=True)
                  for s, m in e.contract.pinned.items()}
        return replace(UNCONSTRAINED, pinned=pinned)

    @property
    def end_s(self) -> float:
        return self.t0 + self.workload.duration_s

    def slot_streams(self) -> list[int]:
        """The video stream each board slot belongs to."""
        out = [0] * len(self.platform.slots)
        for k, view in enumerate(self.views):
            for g in view.global_slots:
                out[g] = k
        return out

    def partition_of(self, name: str) -> tuple[int, tuple[int, ...]]:
        """The stream and the board's slots pipeline ``name`` runs on."""
        if name not in self.home:
            raise FpgashareError(f"no pipeline {name!r}")
        k = self.home[name]
        return k, self.views[k].global_slots

    def summary(self, wall_s: float) -> dict:
        """A workload run's figures for the whole board (board_figures.py)."""
        return board_figures.summary(self, wall_s)

    # ---- the loop
    def begin(self) -> None:
        for engine in self.parts:
            engine.begin()
        self.arbiter.grant()

    def next_event_s(self) -> float | None:
        if len(self.parts) == 1:
            return self.parts[0].next_event_s()
        return min((t for e in self.parts if (t := e.next_event_s()) is not None), default=None)

    def _take_events(self, horizon: float) -> None:
        """Every partition's events due by ``horizon``, in time order across partitions. Hardware
        on this clock (a co-simulated board) first runs to the next event: an end of work before it
        is then the next event. After each step the port goes to the next partition with a load
        waiting, and a re-layout waiting for a board-idle instant looks for one."""
        self.step_relayout()
        while True:
            t = self.next_event_s()
            if self._keeps_time:
                self.backend.run_hardware(horizon if t is None else min(t, horizon))
                t = self.next_event_s()
            if t is None or t > horizon:
                return
            board_figures.account_port(self, t)
            step_partitions(self.parts, self.arbiter, t)
            self.step_relayout()

    def advance_to(self, horizon: float) -> None:
        """The daemon's step: every event due by ``horizon`` (``_take_events``)."""
        self._take_events(horizon)
        if len(self.parts) > 1:
            self.arbiter.grant()

    def run(self) -> Board:
        """A workload's whole run (``workload_run.for_workload``), then every unfinished frame dropped."""
        for engine in self.parts:
            engine.source.schedule()
        self.begin()
        horizon = max(e.horizon_s for e in self.parts)
        self._take_events(horizon)
        board_figures.account_port(self, max(self.clock.now(), min(horizon, self.end_s)))
        for engine in self.parts:
            engine.end_run()
        return self

    def hold_partitions(self, held: bool) -> None:
        """While a re-layout waits, every partition holds back best-effort work (mode_change.py)."""
        if held == self._held:
            return
        self._held = held
        for engine in self.parts:
            if engine.members is not None:
                engine.members.held_by_board = held

    def step_relayout(self) -> None:
        """Adopt the waiting re-layout at a board-idle instant, or give it up (relayout.py)."""
        if self.relayout is not None or self._held:
            step_relayout(self)

    @property
    def busy(self) -> bool:
        """Whether a re-layout waits for its board-idle instant (registrations wait for it)."""
        return self.relayout is not None

    # ---- pipelines (board_admission.py)
    def admission_test(self, spec: PipelineSpec, replan: bool = True, op_delay_s: float | None = None,
                       budgets: bool = True) -> Callable[[], str | None]:
        """A callable that says why ``spec`` cannot join the board now, or None (it remembers where
        it goes); it may run off the loop's thread. ``op_delay_s``: how late the host may start an
        operation once ``spec`` runs; ``budgets``: with the hold budgets (board_admission.py)."""
        return board_admission.admission_test(self, spec, replan, op_delay_s, budgets)

    def admit(self, spec: PipelineSpec) -> str | None:
        """Why ``spec`` cannot join the admitted set, or None if it can."""
        return self.admission_test(spec)()

    def dnn_home(self) -> int:
        """The partition for best-effort DNN work."""
        return board_admission.dnn_home(self)

    def give_spare_stream(self) -> None:
        """A stream no partition uses to the partition hosting the DNN (board_admission.py)."""
        board_admission.give_spare_stream(self)

    def add_pipeline(self, spec: PipelineSpec, admitted: bool = False,
                     on_ready: Callable[[], None] | None = None,
                     on_refused: Callable[[str], None] | None = None) -> None:
        """Register ``spec``; ``admitted``: the caller ran ``admission_test``. ``on_ready`` is
        called once its frames can run under the guarantee (registrations.py); ``on_refused``
        with the reason if a re-layout it needs cannot find its board-idle instant in time."""
        board_admission.add_pipeline(self, spec, admitted, on_ready, on_refused)

    def trial_current(self, spec: PipelineSpec) -> bool:
        """Whether ``spec``'s trial still stands for the set in force (board_admission.py)."""
        return board_admission.trial_current(self, spec)

    def forget_trials(self, name: str) -> None:
        """Drop what trials for ``name`` left once its registration ended (trials.py)."""
        board_admission.forget_trials(self, name)

    def remove_pipeline(self, name: str, reason: str) -> list[Frame]:
        """End pipeline ``name``: its waiting frames are dropped with ``reason`` (returned)."""
        return board_admission.remove_pipeline(self, name, reason)

    # ---- frames
    def _engine_of(self, name: str) -> Engine:
        k = self.home.get(name)
        if k is None:
            raise FpgashareError(f"no pipeline {name!r}")
        return self.parts[k]

    def submit(self, name: str, pixels: np.ndarray) -> Frame:
        """A frame of pipeline ``name`` arrives now (``Submissions.submit``)."""
        return self._engine_of(name).source.submit(name, pixels)

    def submit_dnn(self, name: str, image: np.ndarray) -> DnnRequest:
        """An image for DNN pipeline ``name`` (``Submissions.submit_dnn``)."""
        return self._engine_of(name).source.submit_dnn(name, image)


def _share(engine: Engine, name: str, value) -> None:
    if name == "watchdog_margin":
        engine.watchdog.margin = value
    else:
        setattr(engine, name, value)

"""``fpgashare daemon``: owns the FPGA and serves apps over a Unix socket.

One thread of control, an asyncio loop (runtime/daemon/eventloop.py: timers to the microsecond). It
reads requests (runtime/wire/protocol.py), checks every field (checks.py) and the client's quotas
(limits.py), and hands them to the engine (a ``Board``, runtime/sched/board/board.py), which it then advances to the
clock's now; a timer on the loop wakes it when the next event is due. A frame that ends is
answered at once: its output goes into the client's ring and the reply onto its socket. The
real-time path (a frame's submit, the engine's timer, their replies) runs as soon as it is ready;
every other request waits for its turn in the control lane (control_lane.py), which gives out one
turn per turn of the loop, after the real-time items ready in it.

Rings are private to their client (runtime/wire/shm.py): an anonymous memory file whose descriptor
goes to the client with the registration's reply and nowhere else. Pipeline names are per client:
the engine knows a pipeline by a name unique across clients (the client's own unless another
client holds it, then ``name@client``).

A frame whose pipeline closes while it is on the fabric ends ``dropped`` with the reason: its
output is never written into a ring that is going away, and never answered as a result.

The daemon, by role: this module (lifecycle), and the parts it owns, each handed its collaborators:
connections.py (each client's requests in and replies out), ops.py (one method per request),
driver.py (the engine on this loop), sessions.py (clients and their pipelines, how they and their
frames end), tenants.py, stats.py, limits.py, checks.py, lock.py.

Failures: a request the daemon cannot take is a typed error reply; an exception out of the engine
is a bug that would leave slots and frames in an unknown state, so the daemon logs it and stops
(systemd restarts it) rather than carry on.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import signal
import sys
import time
from pathlib import Path

import numpy as np
from fpgashare.backends.base import Backend
from fpgashare.daemon.acceptor import Acceptor, listen_unix
from fpgashare.daemon.connections import SHUTDOWN_GRACE_S, SHUTTING_DOWN, Connections
from fpgashare.daemon.control_lane import ControlLane
from fpgashare.daemon.driver import Driver
from fpgashare.daemon.eventloop import SWITCH_INTERVAL_S, shorten_switch_interval, tighten_timer_slack
from fpgashare.daemon.limits import DescriptorBudget, Limits
from fpgashare.daemon.lock import BoardLock, sweep_stale_rings
from fpgashare.daemon.loop_latency import LoopLatency
from fpgashare.daemon.off_loop import OffLoop
from fpgashare.daemon.ops import Ops
from fpgashare.daemon.sessions import Client, PipelineState, Sessions
from fpgashare.daemon.stats import Stats, status, summaries_off_loop
from fpgashare.daemon.tenants import Tenants
from fpgashare.errors import FpgashareError
from fpgashare.sched.board.board import Board
from fpgashare.sched.board.board_admission import split_slots
from fpgashare.sched.core.clock import WallClock
from fpgashare.sched.core.engine import DnnRequest, Frame
from fpgashare.sched.host.cpu_work import CpuCost, CpuExecutor, ModelledCpuCost
from fpgashare.sched.host.host_cost import FREE, HostBudget, HostCost, HostWatch
from fpgashare.sched.policies.registry import make_policy
from fpgashare.wire.protocol import DEFAULT_SOCKET

log = logging.getLogger("fpgashare.daemon")

CPU_WORKERS = 2           #: threads running CPU stages of fallback="cpu" pipelines (one per core here)


class Daemon:
    """The daemon: its lifecycle; the work is done by parts it owns and hands their collaborators:
    ``connections`` (requests in, replies out), ``driver`` (the engine on the loop), ``sessions``
    (clients, pipelines, frames ending), ``ops`` (the requests, once it starts), ``tenants``,
    ``stats``."""

    def __init__(self, backend: Backend, socket_path: str | Path = DEFAULT_SOCKET, dilation: float = 1.0,
                 scheduler: str = "edf", metrics_port: int | None = None, limits: Limits | None = None,
                 socket_group: str | None = None, clock=None, watchdog_margin: float | None = None,
                 cpu_cost: CpuCost | None = None, streams: int | None = None, fixed_split: bool = False,
                 host_cost: HostCost | None = None, host_reserve_s: float | None = None,
                 switch_interval_s: float | None = SWITCH_INTERVAL_S) -> None:
        """``metrics_port``: serve Prometheus metrics on 127.0.0.1 at that port (0: any free one);
        ``socket_group``: the group the socket (mode 0660) belongs to (default: the daemon's);
        ``clock``: a VirtualClock for tests (no timers: the test moves time with ``run_until``),
        else a WallClock at ``dilation``; ``watchdog_margin``: how far past its expected time (a
        fraction of it) a load or frame may run before the watchdog ends it (sched/core/watchdog.py);
        ``cpu_cost``: the bounds of stages run on the host for ``fallback="cpu"`` pipelines (default:
        measured here; a virtual clock's daemon uses a fixed-rate model, the same on every machine);
        ``streams``: the most video streams used at once (default: every stream the shell and the
        backend carry, with a scheduler whose admission places pipelines; 1: every slot on one
        stream). The board is partitioned as pipelines come, with the planner ``bench`` uses
        (runtime/sched/board/relayout.py); ``fixed_split``: cut it into ``streams`` even partitions at the
        start instead, for good (what ``benchmarks/online_admission.py`` compares against).
        ``host_cost``: the daemon's own work per frame and per load on this host
        (runtime/sched/host/host_cost.py; default: measured here at start, with a margin; a virtual
        clock's daemon: none, unless given); ``host_reserve_s``: the host's response bound it
        commits to for every pipeline, board seconds (default: each pipeline's share of its
        slack, ``host_cost.SLACK_SHARE``); ``switch_interval_s``: the interpreter's switch interval
        while it serves, and the objects alive at start frozen out of the collector's reach
        (eventloop.py; None: leave the interpreter as it is)."""
        self.backend, self.platform = backend, backend.platform
        self.socket_path = Path(socket_path)
        self.socket_group = socket_group
        self.limits = limits or Limits()
        self.clock = clock if clock is not None else WallClock(dilation)
        self.dilation = getattr(self.clock, "dilation", 1.0)
        self.virtual = not isinstance(self.clock, WallClock)
        # A simulated board's slowness must not pass for board time: its clock stands still meanwhile.
        if not backend.runs_in_real_time and not self.virtual:
            backend.held_clock = self.clock
        carried = backend.streams_carried(self.platform)
        if scheduler == "planned":     # its table is made before a run, for a set that never changes
            raise FpgashareError("the planned scheduler runs a table made for a fixed set of pipelines "
                                 "(fpgashare bench); the daemon, whose pipelines come and go, runs edf")
        if streams is None:
            most = min(self.platform.streams, len(self.platform.slots), carried)
            streams = most if make_policy(scheduler).admission else 1
        split_slots(self.platform, streams)                  # refuses counts the manifest does not allow
        if streams > 1 and streams > carried:
            raise FpgashareError(f"the {backend.name} backend carries {carried} video stream(s) of "
                                 f"{self.platform.name} at once; {streams} asked")
        if streams > 1 and not make_policy(scheduler).admission:
            raise FpgashareError(f"{streams} streams need a scheduler whose admission partitions the board "
                                 f"(edf); {scheduler} runs on one stream")
        # The board starts whole and re-partitions itself as pipelines come, up to ``streams``
        # partitions; ``fixed_split`` cuts it evenly at the start instead, for good.
        layout = split_slots(self.platform, streams) if fixed_split else [tuple(s.index for s in self.platform.slots)]
        self.engine = Board(self.platform, backend, lambda: make_policy(scheduler), self.clock,
                            layout, cap=None if fixed_split else streams)
        self.streams = streams
        if watchdog_margin is not None:
            self.engine.watchdog_margin = watchdog_margin
        self.cpu_cost = cpu_cost or (ModelledCpuCost() if self.virtual else CpuCost())
        if not self.virtual:            # CPU stages compute on worker threads while the loop goes on
            self.engine.cpu = CpuExecutor(CPU_WORKERS)
            self.engine.cpu_besteffort = CpuExecutor(1)
        if host_cost is None and not self.virtual:
            from fpgashare.daemon.host_calibration import measure_host_cost

            host_cost = measure_host_cost(backend)
            log.info("host cost measured: %.3f ms a frame, %.3f ms a load, %.2f ns a byte (margin included)",
                     host_cost.per_frame_s * 1e3, host_cost.per_load_s * 1e3, host_cost.per_byte_s * 1e9)
        #: the host as a resource: admission's host check and the fabric's deadlines (ops.py),
        #: its cost re-checked against the frames' (``_answer``)
        self.host_watch = HostWatch(HostBudget(host_cost or FREE, self.dilation, host_reserve_s))
        self.host_spent: dict[tuple[str, int], float] = {}   #: (pipeline, seq) -> host s its submit took
        self.stats = Stats()
        self.loop_latency = LoopLatency()     #: how late the loop runs what is due (status, metrics)
        self.off_loop = OffLoop()             #: slow work of a request (measurements, admission trials)
        self.failure: BaseException | None = None     #: what stopped the daemon, if a bug did
        self._stopping: asyncio.Future | None = None
        self.shutting_down = False    #: once stop() begins: requests are refused ``gone``
        # Items that end during an engine call are answered once it returns, never from inside it.
        self.driver = Driver(self.engine, self.clock, self.loop_latency, self._answer, self._failed)
        self.sessions = Sessions(self.driver, self.stats, self.limits)
        self.tenants: Tenants | None = None    # at start: the descriptor budget is the process's
        self.ops: Ops | None = None            # at start, with the tenants
        self.connections: Connections | None = None    #: at start, with the ops
        self._loop: asyncio.AbstractEventLoop | None = None
        self.lane: ControlLane | None = None   #: control work's turns, behind the real-time path (at start)
        self.switch_interval_s = switch_interval_s
        self._switch_interval: float | None = None   # the interpreter's, restored at stop
        self._frozen = False                          # gc.freeze() at start, undone at stop
        self._server: Acceptor | None = None
        self._stopped = asyncio.Event()
        self.lock = BoardLock(self.socket_path)
        self.metrics_port = metrics_port
        self.metrics = None

    @property
    def clients(self) -> dict[int, Client]:
        return self.sessions.clients

    @property
    def states(self) -> dict[str, tuple[Client, PipelineState]]:
        """Every pipeline by its engine name: its owner and its state."""
        return self.sessions.states

    @property
    def shm_bytes(self) -> int:
        return self.sessions.shm_bytes

    def is_admin(self, client: Client) -> bool:
        return self.sessions.is_admin(client)

    def run_until(self, t: float) -> None:
        """A virtual clock's daemon: move time to ``t`` (on the loop) and take every event due."""
        self.driver.run_until(t)

    def _answer(self, item: Frame | DnnRequest) -> None:
        started = time.perf_counter()
        self.sessions.frame_done(item)
        spent = self.host_spent.pop((item.pipeline.name, item.seq), None)
        if spent is not None and not self.virtual:    # the re-check of the host's cost (host_cost.py)
            self.host_watch.record(item.pipeline, spent + time.perf_counter() - started)

    async def _status(self, client: Client, own: bool) -> dict:
        return status(self, client, own=own, summaries=await summaries_off_loop(self))

    def _realtime_due(self) -> None:
        """The engine's events already due, taken before any control work starts."""
        if self.driver.overdue():
            self.driver.advance()

    def _failed(self, exc: BaseException) -> None:
        self.failure = exc
        self._stopping = asyncio.ensure_future(self.stop())

    @property
    def outcomes(self) -> dict[str, int]:
        return self.stats.outcomes

    @property
    def per_pipeline(self) -> dict[str, dict]:
        return self.stats.per_pipeline

    def registered(self) -> set[str]:
        """The clients' names of the pipelines registered now (a snapshot, safe from any thread)."""
        for _ in range(5):
            try:
                return {state.name for _, state in list(self.states.values())}
            except RuntimeError:        # the loop thread changed the dict while it was copied
                continue
        return set()

    # ---- lifecycle
    async def start(self) -> None:
        """Take the board (refused with DaemonRunningError if another daemon has it), sweep what a dead
        daemon left, and listen."""
        self._loop = asyncio.get_running_loop()
        self.driver.attach(self._loop)
        self.lane = self.off_loop.lane = ControlLane(self._loop, self._realtime_due)
        self.socket_path.parent.mkdir(parents=True, exist_ok=True)
        self.lock.acquire()
        try:
            self.tenants = Tenants(self.limits, self.clients, DescriptorBudget.of_process(self.limits))
            self.ops = Ops(self.backend, self.driver, self.sessions, self.tenants, self.limits, self.off_loop,
                           self.cpu_cost, self._status,
                           host_watch=self.host_watch, host_spent=self.host_spent, streams=self.streams,
                           lane=self.lane)
            sweep_stale_rings()
            listener = listen_unix(self.socket_path, self.socket_group)
            self.connections = Connections(self.sessions, self.tenants, self.ops, self.lane, self.limits,
                                           self._realtime_due, lambda: self.shutting_down)
            self._server = Acceptor(self._loop, listener, self.tenants.admit, self.connections.serve, lane=self.lane)
            if self.metrics_port is not None:
                from fpgashare.daemon.metrics import DaemonMetrics

                self.metrics = self.sessions.metrics = DaemonMetrics(self.engine, self.clock)
                self.loop_latency.observers.append(self.metrics.loop_delay.observe)
                self.metrics_port = self.metrics.serve(self.metrics_port)
                log.info("metrics on http://127.0.0.1:%d/metrics", self.metrics_port)
        except BaseException:
            self.lock.release()
            raise
        tighten_timer_slack()                 # a frame's end is a timer: wake within microseconds
        if not self.virtual and self.switch_interval_s is not None:
            # a worker's Python yields the loop the interpreter's lock within this
            self._switch_interval = shorten_switch_interval(self.switch_interval_s)
        self.loop_latency.start(self._loop)
        _warm_up()                            # first-call costs (OpenCV's init) must not land on a frame
        if not self.virtual and self.switch_interval_s is not None:
            # Everything alive now (the imports, the catalogue, the calibration) out of the
            # collector's reach: a full collection walks only what the daemon made since, not
            # tens of milliseconds' worth of objects, on the loop (eventloop.py).
            gc.freeze()
            self._frozen = True
        self.driver.step(self.engine.begin)
        log.info("serving %s on %s (%s backend, dilation %g)", self.platform.name, self.socket_path,
                 self.backend.name, self.dilation)

    async def serve_forever(self) -> None:
        await self.start()
        for sig in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                self._loop.add_signal_handler(sig, lambda: asyncio.ensure_future(self.stop()))
        await self._stopped.wait()
        if self.failure is not None:
            raise FpgashareError(f"the daemon stopped on an internal error: {self.failure!r}")

    async def stop(self) -> None:
        """Stop taking requests (those still arriving get ``gone``); every client's pipelines end:
        waiting frames are answered dropped at once, frames on the fabric dropped when they end
        (within SHUTDOWN_GRACE_S), and only then do the clients' sockets close, so each frame's
        answer reaches its client. Rings are unmapped, the socket file goes."""
        if self._stopped.is_set():
            return
        self.shutting_down = True
        if self._server is not None:
            self._server.close()
        if self.lane is not None:
            self.lane.close()               # waiting control work is answered ``gone`` now
        leaving = list(self.clients.values())
        for client in leaving:
            self.sessions.client_gone(client, SHUTTING_DOWN)
        # Frames on the fabric end first, each answered dropped with the reason, then the sockets close.
        deadline = time.monotonic() + SHUTDOWN_GRACE_S
        while self.states and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        for client, state in list(self.states.values()):
            self.sessions.retire(client, state)
        for client in leaving:
            client.writer.close()           # its reader sees the end and its task finishes
        self.driver.close()
        self.loop_latency.stop()
        self.off_loop.close()
        if self.metrics is not None:
            self.metrics.close()
        with contextlib.suppress(FileNotFoundError):
            self.socket_path.unlink()
        self.engine.cpu.close()
        self.engine.cpu_besteffort.close()
        self.lock.release()
        if self._switch_interval is not None:
            sys.setswitchinterval(self._switch_interval)
            self._switch_interval = None
        if self._frozen:
            gc.unfreeze()
            self._frozen = False
        self.driver.halted = self.failure is not None
        self._stopped.set()


def _warm_up() -> None:
    from fpgashare.backends.simrun import resolve_chain
    from fpgashare.catalogue.vision_ref import chain_reference

    chain_reference(resolve_chain(["gauss3x3", "threshold"], {}), np.zeros((8, 8), np.uint8))

"""A fleet on this machine: a Ray head and N simulated boards, each a daemon (``model`` or ``sim``
backend, its own socket) joined by a Ray node of its own, as on real boards. For ``fpgashare fleet
up``, the fleet tests and the fleet benchmark. Every process it starts it stops by its pid (never
``ray stop``, which would end every Ray process on the host)."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from fpgashare.errors import FpgashareError
from fpgashare.fleet.board import node_labels, node_resources

log = logging.getLogger(__name__)

DAEMON_START_S = 60.0


@dataclass
class SimBoard:
    name: str
    platform: str = "zcu104"
    cameras: tuple[str, ...] = ()
    socket: Path | None = None
    daemon: subprocess.Popen | None = None
    node: object = None
    log_path: Path | None = None
    dilation: float | None = None       #: this board's own dilation (a slower board), else the fleet's


@dataclass
class LocalFleet:
    """``with LocalFleet([SimBoard("b1"), SimBoard("b2", "pynq-z2")]) as fleet:`` — a head and the
    boards, the controller started, this process connected as a Ray driver."""

    boards: list[SimBoard]
    backend: str = "model"
    dilation: float = 20.0
    health_period_ms: int = 500         # Ray's node health check: a dead node is declared after
    health_failures: int = 3            # period x failures (1.5 s; the default is 5 s x 5)
    #: each daemon's --host-reserve-ms (None: its default, from the host cost it measures; 0: the
    #: host taken as free, for tests that are not about it)
    host_reserve_ms: float | None = None
    run_dir: Path | None = None
    cluster: object = None
    _tmp: object = field(default=None, repr=False)

    def start(self) -> LocalFleet:
        import ray
        from fpgashare.fleet.controller import NAMESPACE, ensure_controller
        from ray.cluster_utils import Cluster

        if self.run_dir is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="fpgashare-fleet-")
            self.run_dir = Path(self._tmp.name)
        started = time.monotonic()
        try:
            for board in self.boards:
                self._start_daemon(board)
            self.cluster = Cluster(initialize_head=True, head_node_args={
                "num_cpus": 1, "include_dashboard": False,
                "_system_config": {"health_check_period_ms": self.health_period_ms,
                                   "health_check_failure_threshold": self.health_failures,
                                   "health_check_initial_delay_ms": 0}})
            for board in self.boards:
                self._add_node(board)
            ray.init(address=self.cluster.address, namespace=NAMESPACE, log_to_driver=False,
                     logging_level=logging.WARNING)
            self.controller = ensure_controller()
            deadline = time.monotonic() + DAEMON_START_S
            while ray.get(self.controller.refresh.remote()) < len(self.boards):
                if time.monotonic() > deadline:
                    raise FpgashareError(f"the boards did not all join within {DAEMON_START_S:.0f} s")
                time.sleep(0.2)           # real waiting: nodes joining
        except BaseException:
            self.shutdown()
            raise
        self.start_s = time.monotonic() - started
        log.info("fleet of %d boards up in %.1f s at %s", len(self.boards), self.start_s, self.address)
        return self

    @property
    def address(self) -> str:
        return self.cluster.address

    def _start_daemon(self, board: SimBoard) -> None:
        board.socket = self.run_dir / f"{board.name}.sock"
        board.log_path = self.run_dir / f"{board.name}.log"
        cmd = [sys.executable, "-m", "fpgashare.cli", "daemon", "--board", self.backend, "--platform",
               board.platform, "--socket", str(board.socket), "--dilation", str(board.dilation or self.dilation)]
        if self.host_reserve_ms is not None:
            cmd += ["--host-reserve-ms", str(self.host_reserve_ms)]
        with open(board.log_path, "wb") as out:
            board.daemon = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, preexec_fn=_die_with_parent)
        deadline = time.monotonic() + DAEMON_START_S
        while not board.socket.exists():
            if board.daemon.poll() is not None or time.monotonic() > deadline:
                raise FpgashareError(f"board {board.name}: its daemon did not start (log: {board.log_path})")
            time.sleep(0.05)              # real waiting: a process starting

    def _add_node(self, board: SimBoard) -> None:
        # The node's workers (the board's agent) inherit the raylet's environment: that is how the
        # agent finds its daemon's socket, as FPGASHARE_SOCKET in a board's unit does.
        saved = os.environ.get("FPGASHARE_SOCKET")
        os.environ["FPGASHARE_SOCKET"] = str(board.socket)
        try:
            board.node = self.cluster.add_node(num_cpus=0, resources=node_resources(board.name),
                                               labels=node_labels(board.name, board.platform, board.cameras))
        finally:
            if saved is None:
                del os.environ["FPGASHARE_SOCKET"]
            else:
                os.environ["FPGASHARE_SOCKET"] = saved

    def board(self, name: str) -> SimBoard:
        for board in self.boards:
            if board.name == name:
                return board
        raise FpgashareError(f"no board {name!r} in this fleet")

    def kill_board(self, name: str) -> None:
        """SIGKILL the board's daemon and its Ray node, as a power cut would."""
        board = self.board(name)
        if board.daemon is not None and board.daemon.poll() is None:
            board.daemon.send_signal(signal.SIGKILL)
            board.daemon.wait(10)
        if board.node is not None:
            self.cluster.remove_node(board.node, allow_graceful=False)   # SIGKILL of the raylet and its workers
            board.node = None

    def node_rss_mb(self) -> dict[str, float]:
        """Resident memory of each board's Ray node processes (raylet and its children, the agent
        among them) and of its daemon, in MB."""
        out = {}
        for board in self.boards:
            if board.node is None:
                continue
            pids = [p.process.pid for procs in board.node.all_processes.values() for p in procs]
            node_mb = sum(_rss_mb(pid) + sum(_rss_mb(c) for c in _children(pid)) for pid in pids)
            out[board.name] = {"node_mb": round(node_mb, 1), "daemon_mb": round(_rss_mb(board.daemon.pid), 1)}
        return out

    def shutdown(self) -> None:
        """Daemons first (by pid), then Ray: a thread still inside Ray at ``ray.shutdown`` can end this
        process there, and the daemons must not outlive it."""
        import ray

        for board in self.boards:
            if board.daemon is not None and board.daemon.poll() is None:
                board.daemon.terminate()
        for board in self.boards:
            if board.daemon is not None:
                try:
                    board.daemon.wait(10)
                except subprocess.TimeoutExpired:
                    board.daemon.kill()
                    board.daemon.wait(10)
        with contextlib.suppress(Exception):
            ray.shutdown()
        if self.cluster is not None:
            with contextlib.suppress(Exception):
                self.cluster.shutdown()
            self.cluster = None
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    def __enter__(self) -> LocalFleet:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.shutdown()


def _die_with_parent() -> None:
    """In the daemon's child process: SIGTERM when the process that started it dies (Linux), so a
    crashed or killed fleet leaves no daemon behind."""
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)    # PR_SET_PDEATHSIG = 1


def _rss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def _children(pid: int) -> list[int]:
    try:
        kids = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return []
    out = [int(k) for k in kids]
    for k in list(out):
        out.extend(_children(k))
    return out

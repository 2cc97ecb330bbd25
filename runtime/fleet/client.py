"""``fpgashare.fleet.connect(address)``: the client API of ``fpgashare.connect()`` over a fleet.

    from fpgashare import fleet
    with fleet.connect("ray://head:10001") as fpga:        # or "auto", or "HOST:6379"
        edges = fpga.pipeline("edges", stages=["gauss3x3", "sobel_mag"], period_ms=33.3,
                              frame_shape=(480, 640), camera="cam0")    # camera: stays on its board
        out = edges.submit(frame).result(timeout=1.0)
        for event in fpga.poll_events():                  # PipelineMoved / PipelineLost
            ...
        digits = fpga.dnn("digits", model="digits_cnn")    # spread over every board that has tiles

Frames travel as Ray objects to the board's agent (zero copy when the agent is on the same node),
which writes them into the daemon's shared-memory ring. A frame in flight on a board that dies ends
``BoardLost`` (a ``FrameFailed``, reason 'board lost'); the pipeline's next frames go to the board
the controller moved it to, and a pipeline that fits nowhere ends: its later frames are dropped with
the reason.
"""

from __future__ import annotations

import concurrent.futures
import logging
import queue
import socket
import threading
import uuid

import numpy as np
from fpgashare.client import AdmissionRejected, DaemonError, DeadlineMissed, FrameDropped, FrameFailed
from fpgashare.errors import FpgashareError
from fpgashare.fleet.dnn import FleetDnn
from fpgashare.fleet.events import (
    BOARD_LOST,
    INSTALL_HINT,
    BoardLost,
    FleetRejected,
    FleetUnavailable,
    PipelineLost,
    PipelineMoved,
    event_from_wire,
)

log = logging.getLogger(__name__)

EVENT_POLL_S = 1.0


def _ray():
    try:
        import ray
    except ImportError:
        raise FleetUnavailable(INSTALL_HINT) from None
    return ray


PROBE_S = 5.0     #: how long an explicit head address gets to accept a TCP connection


def _probe(address: str, timeout: float) -> None:
    """Fail fast when nothing listens at an explicit ``HOST:PORT`` (Ray itself retries for
    minutes); "auto" and ``ray://`` addresses are left to Ray."""
    if not address or address == "auto" or "://" in address:
        return
    host, sep, port = address.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit() or not 1 <= int(port) <= 65535:
        raise FleetUnavailable(f"Ray address {address!r}: expected HOST:PORT with a port in 1..65535")
    try:
        socket.create_connection((host, int(port)), timeout=timeout).close()
    except OSError as exc:
        raise FleetUnavailable(f"no Ray head answers at {address} ({exc.strerror or exc})") from None


def connect(address: str = "auto", timeout: float = 30.0) -> FleetFpga:
    """A connection to the fleet whose Ray head is at ``address`` (started by ``fpgashare fleet up``
    or by the head host's unit)."""
    ray = _ray()
    from fpgashare.fleet.controller import CONTROLLER, NAMESPACE

    if not ray.is_initialized():
        _probe(address, min(timeout, PROBE_S))
        ray.init(address=address, namespace=NAMESPACE, log_to_driver=False, logging_level=logging.WARNING)
    try:
        controller = ray.get_actor(CONTROLLER, namespace=NAMESPACE)
    except ValueError:
        raise FleetUnavailable(f"no fpgashare fleet controller in the Ray cluster at {address}") from None
    return FleetFpga(controller, timeout)


class FleetFpga:
    """One client of the fleet. ``events`` is a queue of PipelineMoved / PipelineLost; ``on_event``
    (if set) is called with each, on the event thread."""

    def __init__(self, controller, timeout: float) -> None:
        ray = _ray()
        self.ray, self.controller, self.timeout = ray, controller, timeout
        self.client_id = uuid.uuid4().hex[:12]
        self.node_id = ray.get_runtime_context().get_node_id()
        self.pipelines: dict[str, FleetPipeline | FleetDnn] = {}
        self.events: queue.Queue = queue.Queue()
        self.on_event = None
        self._agents: dict[str, object] = {}
        self._local: dict[str, object] = {}          # daemon socket -> connection, for boards on this node
        self.same_board_shm = True                   # a pipeline placed on this node's board skips Ray
        self._closed = threading.Event()
        self._watcher = threading.Thread(target=self._watch_events, name="fleet-events", daemon=True)
        self._watcher.start()

    def agent(self, name: str):
        if name not in self._agents:
            from fpgashare.fleet.controller import NAMESPACE

            self._agents[name] = self.ray.get_actor(name, namespace=NAMESPACE)
        return self._agents[name]

    def _call(self, method, *args, **kwargs):
        return self.ray.get(method.remote(*args, **kwargs), timeout=self.timeout)

    def pipeline(self, name: str, stages: list[str], period_ms: float, frame_shape: tuple[int, int],
                 deadline_ms: float | None = None, params: dict | None = None,
                 camera: str | None = None, boards: list[str] | None = None) -> FleetPipeline:
        """Place a real-time pipeline on a board that admits it (on ``camera``'s board if given; among
        ``boards`` if given); raises FleetRejected (an AdmissionRejected) naming each board's reason."""
        fields = {"stages": list(stages), "period_ms": float(period_ms),
                  "frame_shape": [int(v) for v in frame_shape], "params": params or {}}
        if deadline_ms is not None:
            fields["deadline_ms"] = float(deadline_ms)
        tried: dict[str, str] = {}
        local = None
        while True:
            answer = self._call(self.controller.place, self.client_id, name, fields, camera, boards,
                                self.node_id if self.same_board_shm else None, tried)
            if "try_local" not in answer:
                break
            board = answer["try_local"]       # a candidate on this node: its daemon admits us directly
            try:
                local = self._local_daemon(answer["socket"]).pipeline(name, **fields)
            except AdmissionRejected as exc:
                tried[board] = str(exc)
                continue
            except (OSError, FpgashareError) as exc:
                tried[board] = f"{BOARD_LOST}: {exc}"
                continue
            answer = self._call(self.controller.adopt, self.client_id, name, fields, camera, board)
            break
        if "error" in answer:
            if local is not None:
                local.close()
            raise DaemonError("bad_request", answer["error"])
        if "rejected" in answer:
            raise FleetRejected(name, answer["rejected"])
        pipe = FleetPipeline(self, name, answer["board"], answer["agent"], local)
        self.pipelines[name] = pipe
        return pipe

    def _local_daemon(self, socket_path: str):
        """This node's board daemon, connected once (frames through its shared-memory rings)."""
        if socket_path not in self._local:
            from fpgashare.client import connect as connect_daemon

            self._local[socket_path] = connect_daemon(socket_path, timeout=self.timeout)
        return self._local[socket_path]

    def dnn(self, name: str, model: str, boards: list[str] | None = None) -> FleetDnn:
        """A best-effort DNN pipeline on every board with DNN tiles: images go to the board with the
        shortest queue, so a slow board does not hold the rest back."""
        answer = self._call(self.controller.place_dnn, self.client_id, name, model, boards)
        if "error" in answer:
            raise DaemonError("bad_request", answer["error"])
        if "rejected" in answer:
            raise FleetRejected(name, answer["rejected"])
        pipe = FleetDnn(self, name, answer["boards"])
        self.pipelines[name] = pipe
        return pipe

    def status(self) -> dict:
        return self._call(self.controller.status)

    def poll_events(self) -> list[PipelineMoved | PipelineLost]:
        """Every event not taken yet, without waiting."""
        out = []
        while True:
            try:
                out.append(self.events.get_nowait())
            except queue.Empty:
                return out

    def _watch_events(self) -> None:
        cursor = 0
        while not self._closed.is_set():
            try:
                batch = self.ray.get(self.controller.wait_events.remote(self.client_id, cursor, EVENT_POLL_S),
                                     timeout=EVENT_POLL_S + self.timeout)
            except Exception as exc:             # the controller or Ray went away: nothing more will come
                if not self._closed.is_set():
                    log.warning("fleet events stopped: %s", exc)
                return
            cursor += len(batch)
            for wire in batch:
                event = event_from_wire(wire)
                pipe = self.pipelines.get(event.pipeline)
                if pipe is not None:
                    pipe._on_event(event)
                self.events.put(event)
                if self.on_event is not None:
                    self.on_event(event)

    def close(self) -> None:
        self._closed.set()
        for pipe in list(self.pipelines.values()):
            pipe.stop()
        try:
            self._call(self.controller.client_gone, self.client_id)
        except Exception as exc:                 # the fleet is already gone: nothing to close there
            log.info("closing fleet client: %s", exc)
        self.pipelines.clear()
        for conn in self._local.values():
            conn.close()
        # No thread of ours may be inside Ray when the caller shuts Ray down.
        self._watcher.join(EVENT_POLL_S + self.timeout)

    def __enter__(self) -> FleetFpga:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class FleetPipeline:
    """A real-time pipeline on one board of the fleet (which may change: see PipelineMoved)."""

    def __init__(self, fleet: FleetFpga, name: str, board: str, agent: str, local=None) -> None:
        self.fleet, self.name = fleet, name
        # (board, its agent, this node's client Pipeline or None): replaced whole on a move, read once
        # per frame, so a frame never pairs one board's name with another's agent.
        self._route = (board, fleet.agent(agent), local)
        self.ended: str | None = None           # why the pipeline ended (it fits nowhere after a loss)
        self.moves: list[PipelineMoved] = []

    @property
    def board(self) -> str:
        return self._route[0]

    @property
    def local(self):
        """The ``fpgashare.client.Pipeline`` when the board is this node's (frames in its shared memory)."""
        return self._route[2]

    def _on_event(self, event) -> None:
        from fpgashare.fleet.controller import AGENT_PREFIX

        if isinstance(event, PipelineMoved):    # the new board is reached through its agent
            self._route = (event.to_board, self.fleet.agent(AGENT_PREFIX + event.to_board), None)
            self.moves.append(event)
        else:
            self.ended = event.reason

    def submit(self, frame: np.ndarray) -> FleetFuture:
        """Send a frame to the pipeline's board; returns at once."""
        board, agent, local = self._route
        if self.ended is not None:
            return FleetFuture(self, None, board, FrameDropped(f"pipeline ended: {self.ended}"))
        if local is not None:
            try:
                return FleetFuture(self, None, board, local=local.submit(frame))
            except DaemonError as exc:          # this node's daemon went away
                return FleetFuture(self, None, board, BoardLost(board, f"{BOARD_LOST}: {exc}"))
        return FleetFuture(self, agent.submit.remote(self.name, frame), board)

    async def asubmit(self, frame: np.ndarray) -> np.ndarray:
        """``submit`` for asyncio code: the output, or the same exceptions."""
        import asyncio

        return await asyncio.get_running_loop().run_in_executor(None, self.submit(frame).result)

    def stop(self) -> None:
        self.ended = self.ended or "pipeline closed"

    def close(self) -> None:
        self.stop()
        if self.local is not None:
            self.local.close()
        self.fleet._call(self.fleet.controller.close, self.name)
        self.fleet.pipelines.pop(self.name, None)


class FleetFuture:
    """The outcome of one frame: ``result()`` is the output, or raises DeadlineMissed, FrameDropped,
    FrameFailed (BoardLost when its board died) as ``fpgashare.connect()``'s futures do."""

    def __init__(self, pipe, ref, board: str, outcome: object = None, local=None) -> None:
        self.pipe, self.ref, self.board = pipe, ref, board
        self._outcome = outcome
        self._local = local                     # a fpgashare.client.FrameFuture (same-board path)
        # Fetched as soon as it is ready: an output left in a board's object store dies with the board.
        self._pending = None if ref is None else ref.future()

    def result(self, timeout: float | None = None):
        if self._outcome is None and self._local is not None:
            try:
                self._outcome = self._local.result(timeout)
            except (DeadlineMissed, FrameDropped, FrameFailed) as exc:
                self._outcome = exc
            except DaemonError as exc:
                self._outcome = BoardLost(self.board, f"{BOARD_LOST}: {exc}") if exc.kind == "gone" else exc
        if self._outcome is None:
            ray = self.pipe.fleet.ray
            try:
                answer = self._pending.result(timeout=timeout)
            except concurrent.futures.TimeoutError:
                raise TimeoutError(f"no outcome within {timeout} s") from None
            except (ray.exceptions.RayActorError, ray.exceptions.ObjectLostError):   # died with its board
                answer = {"outcome": "error", "reason": BOARD_LOST}
            except ray.exceptions.RayError as exc:
                answer = {"outcome": "error", "reason": f"{type(exc).__name__}: {exc}"}
            self._outcome = self._settle(answer)
        if isinstance(self._outcome, Exception):
            raise self._outcome
        return self._outcome

    def _settle(self, answer: dict):
        reason = answer.get("reason")
        if answer["outcome"] == "dropped":
            return FrameDropped(reason or "no reason given")
        if answer["outcome"] == "error":
            if reason and reason.startswith(BOARD_LOST):
                return BoardLost(self.board, reason)
            return FrameFailed(reason)
        if answer["outcome"] == "late":
            return DeadlineMissed(answer["latency_ms"], answer["output"], reason or "")
        return answer["output"]

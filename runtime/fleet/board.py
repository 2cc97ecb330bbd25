"""A board as a Ray node, and the agent that speaks for its daemon.

A board's Ray node carries custom resources naming the board (``fpga:<board>``, ``fpgashare_board``)
and its capacity (``fpgashare_stream_milli``: the one video stream's time, in thousandths; the
shell streams one frame at a time, so the pipelines' frame times per period cannot pass 1000), and
labels for its platform and cameras. The agent is a Ray actor pinned to that node by the
``fpga:<board>`` resource; it holds one client connection to the board's daemon (its Unix socket,
``$FPGASHARE_SOCKET`` of the node) and runs admission, frames and DNN images there.
"""

from __future__ import annotations

import concurrent.futures
import logging
import os
import threading
import time
from dataclasses import dataclass, field

import numpy as np
from fpgashare.client import AdmissionRejected, DaemonError, DeadlineMissed, Fpga, FrameDropped, FrameFailed, connect
from fpgashare.errors import FpgashareError
from fpgashare.fleet.events import BOARD_LOST

log = logging.getLogger(__name__)

BOARD = "fpgashare_board"               #: every board node has 1
STREAM = "fpgashare_stream_milli"       #: a board's stream time, thousandths
LABEL_BOARD, LABEL_PLATFORM, LABEL_CAMERAS = "fpgashare.board", "fpgashare.catalogue.platform", "fpgashare.cameras"
CAMERA_SEP = "."                        # label values allow [A-Za-z0-9._-]: cameras are joined by dots
WATCH_PERIOD_S = 0.2                    # how often the agent checks its daemon is there
DNN_WINDOW = 4                          # images in flight per DNN batch (the daemon's ring slots)
STREAM_IN_FLIGHT = 2                    # frames of one streamed pipeline in flight before the oldest is awaited
MISSES_KEPT = 5                         # frames not on time a stream reports, with their reasons


def board_resource(board: str) -> str:
    return f"fpga:{board}"


def node_resources(board: str) -> dict[str, float]:
    """Custom resources of the Ray node that stands for ``board``."""
    return {BOARD: 1.0, board_resource(board): 1.0, STREAM: 1000.0}


def node_labels(board: str, platform: str, cameras: list[str] | tuple[str, ...] = ()) -> dict[str, str]:
    """Ray node labels of ``board``: its name, platform and attached cameras."""
    for cam in cameras:
        if not cam or CAMERA_SEP in cam or not all(c.isalnum() or c in "-_" for c in cam):
            raise FpgashareError(f"camera name {cam!r}: use letters, digits, '-' and '_'")
    return {LABEL_BOARD: board, LABEL_PLATFORM: platform, LABEL_CAMERAS: CAMERA_SEP.join(cameras)}


@dataclass
class BoardInfo:
    """A board as Ray's node table shows it."""

    name: str
    platform: str
    cameras: tuple[str, ...]
    node_id: str
    alive: bool
    stream_milli: float = 1000.0
    pipelines: set[str] = field(default_factory=set)
    socket: str = ""                     #: the daemon's address as the board's agent reaches it
    streams: int = 1                     #: video streams its daemon uses at most (each of stream_milli)


def boards_from_nodes(nodes: list[dict]) -> dict[str, BoardInfo]:
    """The boards in ``ray.nodes()`` (nodes with the ``fpgashare_board`` resource); a board seen on
    several nodes (a dead one and its replacement) is taken from the live one."""
    boards: dict[str, BoardInfo] = {}
    for node in nodes:
        resources, labels = node.get("Resources", {}), node.get("Labels", {}) or {}
        if BOARD not in resources or LABEL_BOARD not in labels:
            continue
        cams = tuple(c for c in labels.get(LABEL_CAMERAS, "").split(CAMERA_SEP) if c)
        info = BoardInfo(labels[LABEL_BOARD], labels.get(LABEL_PLATFORM, "zcu104"), cams, node["NodeID"],
                         bool(node.get("Alive")), float(resources.get(STREAM, 1000.0)))
        if info.name not in boards or info.alive:
            boards[info.name] = info
    return boards


def connect_board(address: str, timeout: float):
    """The board's daemon: a Unix socket path, or ``tcp://HOST:PORT`` (a board behind its TCP listener,
    for a proxy node on a gateway; the token from ``$FPGASHARE_TOKEN_FILE``)."""
    if not address.startswith("tcp://"):
        return connect(address, timeout=timeout)
    from fpgashare.client.tcp import connect_tcp
    from fpgashare.daemon.tcp_token import load_token

    host, _, port = address[len("tcp://"):].rpartition(":")
    token_file = os.environ.get("FPGASHARE_TOKEN_FILE")
    if not host or not port.isdigit() or not token_file:
        raise FpgashareError(f"board address {address!r}: need tcp://HOST:PORT and $FPGASHARE_TOKEN_FILE")
    return connect_tcp(host, int(port), load_token(token_file), timeout)


def outcome_of(future_result) -> dict:
    """A client FrameFuture's outcome as a plain dict (what crosses Ray back to the fleet client)."""
    try:
        output = future_result()
    except DeadlineMissed as exc:
        return {"outcome": "late", "output": exc.output, "latency_ms": exc.latency_ms, "reason": exc.reason}
    except FrameDropped as exc:
        return {"outcome": "dropped", "reason": exc.reason}
    except DaemonError as exc:
        return {"outcome": "error", "reason": BOARD_LOST if exc.kind == "gone" else str(exc)}
    except FrameFailed as exc:
        return {"outcome": "error", "reason": str(exc)}
    except (OSError, TimeoutError, concurrent.futures.TimeoutError) as exc:    # the daemon does not answer
        return {"outcome": "error", "reason": f"{BOARD_LOST}: {type(exc).__name__}: {exc}"}
    except FpgashareError as exc:
        return {"outcome": "error", "reason": f"{type(exc).__name__}: {exc}"}
    return {"outcome": "on_time", "output": output}


def _submit_failure(exc: Exception) -> str:
    """Why a submit failed: a daemon that went away (socket error, or its connection lost) is the
    board lost, said the same way whichever call noticed it; anything else names itself."""
    if isinstance(exc, OSError) or (isinstance(exc, DaemonError) and exc.kind == "gone"):
        return BOARD_LOST
    return f"{type(exc).__name__}: {exc}"


class BoardAgent:
    """Speaks for one board's daemon (made a Ray actor by the controller; threaded, so frames of
    many pipelines wait at once). Every call answers; a daemon that went away answers 'board lost'."""

    def __init__(self, board: str, socket_path: str | None = None, timeout: float = 30.0) -> None:
        self.board = board
        self.socket_path = socket_path or os.environ.get("FPGASHARE_SOCKET", "/run/fpgashare/fpgashare.sock")
        self.fpga: Fpga = connect_board(self.socket_path, timeout)
        self.pipes: dict = {}
        self._lock = threading.Lock()

    def hello(self) -> dict:
        import ray

        streams = int(self.fpga.request("hello").get("streams", 1))
        return {"board": self.board, "platform": self.fpga.platform, "dilation": self.fpga.dilation,
                "socket": self.socket_path, "node_id": ray.get_runtime_context().get_node_id(), "pid": os.getpid(),
                "streams": streams}

    def admit(self, name: str, fields: dict) -> dict:
        """The daemon's exact admission test: ``{"ok": True, ...}`` or ``{"ok": False, "reason"}``."""
        try:
            pipe = self.fpga.pipeline(name, **fields)
        except AdmissionRejected as exc:
            return {"ok": False, "reason": str(exc)}
        except DaemonError as exc:
            return {"ok": False, "reason": BOARD_LOST if exc.kind == "gone" else str(exc)}
        self.pipes[name] = pipe
        return {"ok": True, "deadline_ms": pipe.deadline_ms, "exec_ms": pipe.exec_ms}

    def admit_dnn(self, name: str, model: str) -> dict:
        try:
            self.pipes[name] = self.fpga.dnn(name, model)
        except DaemonError as exc:
            return {"ok": False, "reason": str(exc)}
        return {"ok": True}

    def submit(self, name: str, frame: np.ndarray) -> dict:
        """One frame through the pipeline; its outcome (with the output when there is one)."""
        pipe = self.pipes.get(name)
        if pipe is None:
            return {"outcome": "dropped", "reason": f"pipeline {name!r} is not on board {self.board}"}
        try:
            fut = pipe.submit(frame)
        except FrameDropped as exc:
            return {"outcome": "dropped", "reason": exc.reason}
        except (OSError, FpgashareError) as exc:
            return {"outcome": "error", "reason": _submit_failure(exc)}
        return outcome_of(lambda: fut.result(timeout=self._frame_wait_s(pipe)))

    def _frame_wait_s(self, pipe) -> float:
        """How long to wait for a frame's reply before taking the daemon as gone: the connection's
        timeout beyond the frame's deadline in wall seconds (a dilated board's deadline of 33 ms is
        33 s at dilation 1000; a timeout shorter than that called an answered frame 'board lost')."""
        return self.fpga.timeout + (pipe.deadline_ms or 0.0) / 1e3 * (self.fpga.dilation or 1.0)

    def clock(self) -> float:
        """The daemon's clock (board seconds; it stands still while a simulated board computes)."""
        return self.fpga.clock()

    def stream(self, name: str, shape: tuple[int, ...], period_s: float, board_seconds: float) -> dict:
        """Send the pipeline a frame every ``period_s`` board seconds for ``board_seconds`` (paced on
        the daemon's clock, as a camera would), and count how the frames ended: ``frames``,
        ``on_time``, ``late``, ``dropped``, ``error`` (each frame exactly once), and ``misses``: the
        first few frames that did not end on time, each as (frame index, sent at, outcome, reason)."""
        pipe = self.pipes.get(name)
        counts = {"frames": 0, "on_time": 0, "late": 0, "dropped": 0, "error": 0}
        if pipe is None:
            return {**counts, "reason": f"pipeline {name!r} is not on board {self.board}"}
        misses: list = []

        def ended(k: int, sent: float, answer: dict) -> None:
            counts[answer["outcome"]] += 1
            if answer["outcome"] != "on_time" and len(misses) < MISSES_KEPT:
                misses.append((k, round(sent - start, 6), answer["outcome"],
                               answer.get("reason") or f"latency {answer.get('latency_ms', 0):.3f} ms"))

        frame = np.zeros(shape, np.uint8)
        start = self.fpga.clock()
        pending = []
        for k in range(max(1, int(board_seconds / period_s))):
            self.fpga.sleep_until(start + k * period_s)    # the daemon's clock, at its dilation
            counts["frames"] += 1
            sent = self.fpga.clock()
            try:
                fut = pipe.submit(frame)
            except FrameDropped as exc:
                ended(k, sent, {"outcome": "dropped", "reason": exc.reason})
                continue
            except (OSError, FpgashareError) as exc:
                ended(k, sent, {"outcome": "error", "reason": _submit_failure(exc)})
                continue
            pending.append((k, sent, fut))
            while len(pending) > STREAM_IN_FLIGHT:      # frames end within a deadline: the oldest is (nearly) done
                k0, sent0, fut0 = pending.pop(0)
                ended(k0, sent0, self._frame_answer(pipe, fut0))
        for k0, sent0, fut0 in pending:
            ended(k0, sent0, self._frame_answer(pipe, fut0))
        return {**counts, "misses": misses}

    def _frame_answer(self, pipe, fut) -> dict:
        answer = outcome_of(lambda: fut.result(timeout=self._frame_wait_s(pipe)))
        answer.pop("output", None)                      # the counts need no pixels
        return answer

    def infer_batch(self, name: str, images: np.ndarray) -> list[dict]:
        """DNN images, at most DNN_WINDOW in the daemon at once; one outcome per image, in order."""
        pipe = self.pipes.get(name)
        if pipe is None:
            return [{"outcome": "dropped", "reason": f"dnn {name!r} is not on board {self.board}"}] * len(images)
        futures, outcomes = [], []
        for image in images:
            if len(futures) == DNN_WINDOW:
                outcomes.append(self._dnn_outcome(futures.pop(0)))
            try:
                futures.append(pipe.submit(image))
            except (OSError, FpgashareError) as exc:
                futures.append(FrameFailed(_submit_failure(exc)))
        outcomes.extend(self._dnn_outcome(f) for f in futures)
        return outcomes

    def _dnn_outcome(self, fut) -> dict:
        if isinstance(fut, FrameFailed):
            return {"outcome": "error", "reason": str(fut)}
        result = outcome_of(lambda: fut.result(timeout=self.fpga.timeout))
        return {**result, "outcome": "done"} if result["outcome"] == "on_time" else result

    def close(self, name: str) -> None:
        pipe = self.pipes.pop(name, None)
        if pipe is not None:
            try:
                pipe.close()
            except (OSError, FpgashareError) as exc:
                log.info("closing %s on %s: %s", name, self.board, exc)

    def status(self) -> dict:
        return self.fpga.status()

    def watch(self) -> str:
        """Returns when the daemon stops answering (its reason); the controller waits on it, and sees
        an error instead if the node dies with the agent."""
        while True:
            try:
                self.fpga.clock()
            except (OSError, FpgashareError, TimeoutError, concurrent.futures.TimeoutError) as exc:
                return f"daemon gone ({exc})"
            time.sleep(WATCH_PERIOD_S)      # real waiting: a liveness poll, not a simulated duration

"""The fleet's controller: a named, detached Ray actor that places pipelines on boards and moves
them when a board dies.

Placement: the candidate boards come from Ray's node table (live nodes with the board resources,
of a platform that has the pipeline's modules, holding its camera if it is tied to one, and with
stream time left: every stream the board's daemon uses, each of the capacity the node declares),
ordered by ``placement_rank`` (admission first, then the DNN: docs/fleet.md); the board's own
daemon then runs the exact admission test. A refusal tries the next board; when none admits, the
caller gets every board's reason.

Failover: the controller waits on each agent's ``watch`` call. It ends when the daemon stops
answering, or fails when Ray declares the node (and so the agent) dead. The board's pipelines are
then admitted again elsewhere in deadline order (shortest first); their owners get a
``PipelineMoved`` or a ``PipelineLost`` event with the reason.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections import Counter
from dataclasses import dataclass, field

import ray
from fpgashare.catalogue.platform import load_platform as _load_platform
from fpgashare.catalogue.workload import realtime_spec
from fpgashare.errors import FpgashareError
from fpgashare.fleet.board import BoardAgent, BoardInfo, board_resource, boards_from_nodes
from fpgashare.fleet.events import BOARD_LOST
from fpgashare.fleet.placement import BoardLoad, placement_rank

log = logging.getLogger(__name__)

NAMESPACE = "fpgashare"
CONTROLLER = "fpgashare-controller"
AGENT_PREFIX = "fpgashare-board-"
MONITOR_TICK_S = 0.05        # how long one wait on the agents' watch calls lasts
REFRESH_S = 1.0              # how often the node table is read for new (or dead) boards
CALL_TIMEOUT_S = 30.0
DECISIONS_KEPT = 10_000
DNN_PLATFORM_MODULE = "dnn_tile"


load_platform = functools.lru_cache(maxsize=None)(_load_platform)    # a manifest is read once per name


@dataclass
class Placement:
    name: str
    kind: str                 # "realtime" | "dnn"
    fields: dict              # what the agent's admit takes (real-time) or {"model"} (dnn)
    owner: str                # the client that registered it
    boards: list[str]         # one board (real-time), every board holding it (dnn)
    camera: str | None = None
    deadline_ms: float = float("inf")
    need_milli: float = 0.0   # stream time per period on its board, thousandths
    modules: tuple[str, ...] = field(default_factory=tuple)   # the modules it holds on its board



class Controller:
    """Made a detached Ray actor by ``ensure_controller``; threaded (placements, event waits and the
    monitor run at once, under one lock for the state)."""

    def __init__(self) -> None:
        self.boards: dict[str, BoardInfo] = {}
        self.agents: dict[str, object] = {}
        self.watches: dict[object, str] = {}         # watch ObjectRef -> board
        self.used: dict[str, float] = {}             # board -> stream milli reserved
        self.modules: dict[str, Counter] = {}        # board -> modules of its real-time pipelines
        self.pipelines: dict[str, Placement] = {}
        self.events: dict[str, list[dict]] = {}      # client -> its events, oldest first
        self.decisions_ms: list[float] = []
        self.lost_boards: dict[str, str] = {}        # board -> why
        self._lock = threading.RLock()
        self._changed = threading.Condition(self._lock)
        self._refresh()
        threading.Thread(target=self._monitor, name="fleet-monitor", daemon=True).start()

    # ---- boards
    def _refresh(self) -> None:
        seen = boards_from_nodes(ray.nodes())
        for name, info in seen.items():
            with self._lock:
                known = self.boards.get(name)
                if info.alive and (known is None or known.node_id != info.node_id):
                    self._add_board(info)
            if not info.alive and known is not None and known.alive and known.node_id == info.node_id:
                self._board_lost(name, "Ray node died")

    def _add_board(self, info: BoardInfo) -> None:
        try:
            agent = ray.remote(BoardAgent).options(
                name=AGENT_PREFIX + info.name, namespace=NAMESPACE, num_cpus=0, max_concurrency=256,
                max_restarts=0, resources={board_resource(info.name): 0.001}).remote(info.name)
            hello = ray.get(agent.hello.remote(), timeout=CALL_TIMEOUT_S)
        except Exception as exc:         # a board whose daemon does not answer yet is tried again later
            log.warning("board %s: no agent (%s)", info.name, exc)
            return
        info.platform, info.socket, info.streams = hello["platform"], hello["socket"], int(hello.get("streams", 1))
        self.boards[info.name], self.agents[info.name] = info, agent
        self.used[info.name] = 0.0
        self.modules[info.name] = Counter()
        self.lost_boards.pop(info.name, None)
        self.watches[agent.watch.remote()] = info.name
        log.info("board %s (%s, cameras %s) joined", info.name, info.platform, ",".join(info.cameras) or "-")

    def _monitor(self) -> None:
        last_refresh = time.monotonic()
        while True:
            refs = list(self.watches)
            if refs:
                ready, _ = ray.wait(refs, num_returns=1, timeout=MONITOR_TICK_S)
            else:
                ready = []
                time.sleep(MONITOR_TICK_S)   # real waiting: nothing to watch yet
            for ref in ready:
                board = self.watches.pop(ref)
                try:
                    why = ray.get(ref)
                except Exception as exc:    # the agent died with its node
                    why = f"Ray node died ({type(exc).__name__})"
                self._board_lost(board, why)
            if time.monotonic() - last_refresh > REFRESH_S:
                last_refresh = time.monotonic()
                try:
                    self._refresh()
                except Exception:
                    log.exception("reading Ray's node table failed")

    def _board_lost(self, board: str, why: str) -> None:
        with self._lock:
            info = self.boards.get(board)
            if info is None or not info.alive:
                return
            info.alive = False
            self.lost_boards[board] = why
            self.used[board] = 0.0
            self.modules[board] = Counter()
            agent = self.agents.pop(board, None)
            log.warning("board %s lost: %s", board, why)
            if agent is not None:
                ray.kill(agent, no_restart=True)      # frames waiting there end 'board lost' at once
            moving = sorted((p for p in self.pipelines.values() if board in p.boards),
                            key=lambda p: p.deadline_ms)
        for p in moving:
            # One move at a time under the lock, so each owner hears of its move as soon as it is made.
            with self._lock:
                if self.pipelines.get(p.name) is not p:
                    continue                  # closed meanwhile
                if p.kind == "dnn":
                    p.boards.remove(board)
                else:
                    self._move(p, board)
                self._changed.notify_all()

    def _move(self, p: Placement, board: str) -> None:
        if p.camera is not None:
            reason = f"its camera {p.camera} is on board {board} ({BOARD_LOST})"
        else:
            placed, reasons = self._try_boards(p, exclude={board})
            if placed is not None:
                p.boards = [placed]
                self._emit(p.owner, {"kind": "moved", "pipeline": p.name, "from_board": board, "to_board": placed})
                log.info("pipeline %s moved %s -> %s", p.name, board, placed)
                return
            refusals = "; ".join(f"{b}: {r}" for b, r in reasons.items()) or "no other live board"
            reason = f"{BOARD_LOST} ({board}); no board admits it: {refusals}"
        del self.pipelines[p.name]
        self._emit(p.owner, {"kind": "lost", "pipeline": p.name, "board": board, "reason": reason})
        log.info("pipeline %s lost: %s", p.name, reason)

    def _emit(self, client: str, event: dict) -> None:
        self.events.setdefault(client, []).append(event)
        self._changed.notify_all()

    # ---- placement
    def _need(self, p: Placement, platform: str) -> float | str:
        """Stream thousandths the pipeline takes on ``platform``, or why it cannot run there."""
        demand = self._demand(p, platform)
        return demand if isinstance(demand, str) else demand[0]

    def _demand(self, p: Placement, platform: str) -> tuple[float, tuple[str, ...]] | str:
        """Stream thousandths and modules the pipeline takes on ``platform``, or why it cannot run there."""
        f = p.fields
        period_s = f["period_ms"] / 1e3
        deadline_s = (f.get("deadline_ms") or f["period_ms"]) / 1e3
        try:
            spec = realtime_spec(p.name, list(f["stages"]), period_s, deadline_s, list(f["frame_shape"]),
                                 load_platform(platform), f.get("params") or {})
        except FpgashareError as exc:
            return f"{platform}: {exc}".replace(": :", ":").replace(": .", ": ")
        return 1000.0 * spec.exec_s / period_s, tuple(spec.modules)

    def _placed(self, p: Placement, board: str) -> None:
        """``p`` admitted on ``board``: its stream time and modules are the board's."""
        demand = self._demand(p, self.boards[board].platform)
        p.need_milli, p.modules = (0.0, ()) if isinstance(demand, str) else demand
        self.used[board] += p.need_milli
        self.modules[board].update(p.modules)
        self.boards[board].pipelines.add(p.name)

    def _candidates(self, p: Placement, exclude: set[str], only: list[str] | None) -> tuple[list[str], dict]:
        reasons, ranked = {}, []
        for name, info in self.boards.items():
            if not info.alive or name in exclude or (only is not None and name not in only):
                continue
            if p.camera is not None and p.camera not in info.cameras:
                continue                  # not a candidate at all: the camera is elsewhere
            demand = self._demand(p, info.platform)
            if isinstance(demand, str):
                reasons[name] = demand
                continue
            need, modules = demand
            # A chain streams on one stream; the daemon partitions its streams as pipelines come,
            # so the board's capacity is every stream's time (the daemon's admission decides).
            capacity = info.stream_milli * info.streams
            left = capacity - self.used[name]
            if need > min(left, info.stream_milli):
                reasons[name] = (f"stream full ({self.used[name] / 10:.1f}% of {info.streams} stream(s) taken, "
                                 f"{need / 10:.1f}% of one needed)")
                continue
            platform = load_platform(info.platform)
            # Room for one dnn_tile slot: the least a DNN image runs on (a model its tiles cannot hold
            # at all is refused by the daemon when it registers).
            load = BoardLoad(name, len(platform.slots), int(DNN_PLATFORM_MODULE in platform.modules),
                             self.used[name], self.modules[name])
            ranked.append((placement_rank(modules, load), name))     # its modules on this board's platform
        return [name for _, name in sorted(ranked)], reasons

    def _try_boards(self, p: Placement, exclude: set[str] = frozenset(), only: list[str] | None = None):
        order, reasons = self._candidates(p, set(exclude), only)
        if p.camera is not None and not any(p.camera in b.cameras for b in self.boards.values() if b.alive):
            reasons["fleet"] = f"no live board has camera {p.camera!r}"
        for board in order:
            try:
                answer = ray.get(self.agents[board].admit.remote(p.name, p.fields), timeout=CALL_TIMEOUT_S)
            except Exception as exc:      # the board died under us: the monitor will see it too
                answer = {"ok": False, "reason": f"{BOARD_LOST} ({type(exc).__name__})"}
            if answer["ok"]:
                self._placed(p, board)
                return board, reasons
            reasons[board] = answer["reason"]
        return None, reasons

    def place(self, client: str, name: str, fields: dict, camera: str | None = None,
              boards: list[str] | None = None, client_node: str | None = None,
              tried: dict[str, str] | None = None) -> dict:
        """Admit a real-time pipeline on a board: ``{"board", "agent", ...}`` or ``{"rejected": reasons}``.
        With ``client_node``: if a candidate board is on the client's own node, ``{"try_local": board,
        "socket"}`` first, for the client to run that daemon's admission itself (frames then stay in the
        daemon's shared memory) and ``adopt`` the pipeline, or come back with the refusal in ``tried``."""
        start = time.perf_counter()
        tried = dict(tried or {})
        with self._lock:
            if name in self.pipelines:
                return {"error": f"a pipeline named {name!r} is already placed on {self.pipelines[name].boards}"}
            deadline = fields.get("deadline_ms") or fields["period_ms"]
            p = Placement(name, "realtime", dict(fields), client, [], camera, float(deadline))
            if client_node is not None:
                order, _ = self._candidates(p, set(tried), boards)
                local = next((b for b in order if self.boards[b].node_id == client_node), None)
                if local is not None:
                    self._record(start)
                    return {"try_local": local, "socket": self.boards[local].socket}
            board, reasons = self._try_boards(p, exclude=set(tried), only=boards)
            reasons = {**tried, **reasons}
            self._record(start)
            if board is None:
                return {"rejected": reasons}
            p.boards = [board]
            self.pipelines[name] = p
            info = self.boards[board]
            return {"board": board, "agent": AGENT_PREFIX + board, "node_id": info.node_id,
                    "platform": info.platform, "tried": reasons}

    def adopt(self, client: str, name: str, fields: dict, camera: str | None, board: str) -> dict:
        """Record a pipeline the client admitted on its own board's daemon (``place``'s try_local)."""
        with self._lock:
            if name in self.pipelines:
                return {"error": f"a pipeline named {name!r} is already placed on {self.pipelines[name].boards}"}
            deadline = fields.get("deadline_ms") or fields["period_ms"]
            p = Placement(name, "realtime", dict(fields), client, [board], camera, float(deadline))
            self._placed(p, board)
            self.pipelines[name] = p
            return {"board": board, "agent": AGENT_PREFIX + board, "node_id": self.boards[board].node_id}

    def place_dnn(self, client: str, name: str, model: str, boards: list[str] | None = None) -> dict:
        """Register a DNN pipeline on every live board that takes it (per-board queues are the client's)."""
        start = time.perf_counter()
        with self._lock:
            if name in self.pipelines:
                return {"error": f"a pipeline named {name!r} is already placed"}
            placed, reasons = [], {}
            for board, info in self.boards.items():
                if not info.alive or (boards is not None and board not in boards):
                    continue
                if DNN_PLATFORM_MODULE not in load_platform(info.platform).modules:
                    reasons[board] = f"{info.platform} has no {DNN_PLATFORM_MODULE} module"
                    continue
                try:
                    answer = ray.get(self.agents[board].admit_dnn.remote(name, model), timeout=CALL_TIMEOUT_S)
                except Exception as exc:
                    answer = {"ok": False, "reason": f"{BOARD_LOST} ({type(exc).__name__})"}
                if answer["ok"]:
                    placed.append(board)
                else:
                    reasons[board] = answer["reason"]
            self._record(start)
            if not placed:
                return {"rejected": reasons}
            self.pipelines[name] = Placement(name, "dnn", {"model": model}, client, placed)
            return {"boards": {b: AGENT_PREFIX + b for b in placed}, "tried": reasons}

    def _record(self, start: float) -> None:
        self.decisions_ms.append((time.perf_counter() - start) * 1e3)
        del self.decisions_ms[:-DECISIONS_KEPT]

    def where(self, name: str) -> dict | None:
        with self._lock:
            p = self.pipelines.get(name)
            return None if p is None else {"boards": list(p.boards), "kind": p.kind}

    def close(self, name: str) -> None:
        with self._lock:
            p = self.pipelines.pop(name, None)
            if p is None:
                return
            for board in p.boards:
                if board in self.agents:
                    self.used[board] = max(0.0, self.used[board] - p.need_milli)
                    self.modules[board].subtract(p.modules)
                    self.modules[board] += Counter()          # drops the modules no pipeline holds now
                    self.boards[board].pipelines.discard(name)
                    try:
                        ray.get(self.agents[board].close.remote(name), timeout=CALL_TIMEOUT_S)
                    except Exception as exc:
                        log.info("closing %s on %s: %s", name, board, exc)

    def client_gone(self, client: str) -> None:
        """Close every pipeline of ``client`` (a fleet client calls this when it closes)."""
        for name in [n for n, p in self.pipelines.items() if p.owner == client]:
            self.close(name)
        with self._lock:
            self.events.pop(client, None)

    def wait_events(self, client: str, cursor: int, timeout: float) -> list[dict]:
        """Events of ``client`` from index ``cursor`` on, waiting up to ``timeout`` s for one."""
        with self._changed:
            self._changed.wait_for(lambda: len(self.events.get(client, [])) > cursor, timeout)
            return list(self.events.get(client, [])[cursor:])

    def status(self) -> dict:
        import numpy as np

        with self._lock:
            boards = {name: {"platform": b.platform, "cameras": list(b.cameras), "alive": b.alive,
                             "node_id": b.node_id, "streams": b.streams,
                             "stream_used_pct": round(self.used.get(name, 0.0) / 10 / b.streams, 1),
                             "pipelines": sorted(n for n, p in self.pipelines.items() if name in p.boards),
                             **({"lost": self.lost_boards[name]} if name in self.lost_boards else {})}
                      for name, b in self.boards.items()}
            d = np.array(self.decisions_ms) if self.decisions_ms else np.zeros(1)
            return {"boards": boards, "pipelines": {n: {"kind": p.kind, "boards": list(p.boards), "owner": p.owner,
                                                        "camera": p.camera} for n, p in self.pipelines.items()},
                    "placement_ms": {"decisions": len(self.decisions_ms), "p50": float(np.percentile(d, 50)),
                                     "p99": float(np.percentile(d, 99)), "max": float(d.max())}}

    def reset_decisions(self) -> None:
        with self._lock:
            self.decisions_ms.clear()

    def refresh(self) -> int:
        """Read Ray's node table now (new boards join); the number of live boards."""
        self._refresh()
        return sum(b.alive for b in self.boards.values())


def ensure_controller(head_resource: str | None = "node:__internal_head__"):
    """The fleet's controller, started on the head node if it is not running yet."""
    options = {"name": CONTROLLER, "namespace": NAMESPACE, "lifetime": "detached", "get_if_exists": True,
               "num_cpus": 0, "max_concurrency": 64}
    if head_resource:
        options["resources"] = {head_resource: 0.001}
    return ray.remote(Controller).options(**options).remote()

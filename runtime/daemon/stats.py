"""What the daemon counts: outcomes per pipeline with a bounded window of latencies, statistics of
ended pipelines kept for the newest few, and the ``status`` answer (other clients' details only
for root and the admin group)."""

from __future__ import annotations

import contextlib
from collections import deque

import msgpack
from fpgashare.wire.protocol import MAX_MESSAGE

LATENCY_WINDOW = 10_000   #: newest frame latencies kept per pipeline (percentiles), not every one of a day
ENDED_KEPT = 64           #: ended pipelines whose statistics are kept (the newest), for apps that come and go


class Stats:
    def __init__(self) -> None:
        self.outcomes = {"on_time": 0, "late": 0, "dropped": 0, "error": 0, "done": 0}
        self.per_pipeline: dict[str, dict] = {}      #: by engine name: outcomes and newest latencies (ms)
        self._ended: deque[str] = deque()            # ended pipelines with statistics kept, oldest first

    def ended(self, name: str, klass: str, outcome: str, latency_ms: float | None) -> None:
        self.outcomes[outcome] = self.outcomes.get(outcome, 0) + 1
        stats = self.per_pipeline.get(name)
        if stats is None:                  # (not setdefault: that would build a window every frame)
            stats = self.per_pipeline[name] = {"class": klass, "outcomes": {},
                                               "latencies_ms": deque(maxlen=LATENCY_WINDOW)}
        stats["outcomes"][outcome] = stats["outcomes"].get(outcome, 0) + 1
        if latency_ms is not None:
            stats["latencies_ms"].append(latency_ms)

    def begun(self, name: str) -> None:
        """A pipeline registered under ``name``: it starts with no statistics. An engine name is
        given again once its pipeline ended (sessions.py), maybe to another client, which must
        not see the ended one's outcomes as its own."""
        self.per_pipeline.pop(name, None)
        with contextlib.suppress(ValueError):
            self._ended.remove(name)

    def retired(self, name: str, live: set[str] | dict) -> list[str]:
        """Statistics outlive their pipeline, but only the newest few: apps that register a fresh
        name each run would otherwise grow the daemon. The names whose statistics went (for the
        metrics to forget them too)."""
        if name in self.per_pipeline:
            with contextlib.suppress(ValueError):
                self._ended.remove(name)
            self._ended.append(name)
        gone = []
        while len(self._ended) > ENDED_KEPT:
            old = self._ended.popleft()
            if old not in live:                    # not registered again meanwhile
                self.per_pipeline.pop(old, None)
                gone.append(old)
        return gone


def status(daemon, client, own: bool = False, summaries: tuple[dict, dict | None] | None = None) -> dict:
    """The ``status`` answer for ``client``: the fabric, its own pipelines and outcomes, and every
    client's only if it may see them (root, or a member of the admin group) and did not ask for its
    ``own``.
    ``summaries``: the loop's and the control lane's summaries, if computed already (off the loop:
    ``summaries_off_loop``)."""
    if summaries is None:
        summaries = (daemon.loop_latency.summary(), daemon.lane.summary() if daemon.lane is not None else None)
    loop, control = summaries
    engine = daemon.engine
    now = max(daemon.clock.now(), 1e-9)
    streams = engine.slot_streams()
    slots = [{"slot": s.index, "state": s.state.value, "module": s.module, "stream": streams[s.index],
              "utilization": round(engine.busy_by_slot[s.index] / now, 4)} for s in engine.slots.slots]
    port = engine.slots.port
    admin = daemon.is_admin(client) and not own
    shown = {key: (owner, state) for key, (owner, state) in daemon.states.items() if admin or owner is client}
    in_flight: dict[str, int] = {}
    for frame in engine.frames:
        in_flight[frame.pipeline.name] = in_flight.get(frame.pipeline.name, 0) + 1
    per = {}
    for p in (*engine.pipelines, *engine.cpu_pipelines):
        if p.name in shown:
            per[p.name] = {"class": p.klass, "modules": list(p.modules), "in_flight": in_flight.get(p.name, 0),
                           "placement": [list(where) for where in p.placement]}
    for p in engine.dnn_pipelines:
        if p.name in shown:
            per[p.name] = {"class": p.klass, "modules": ["dnn_tile"], "model": p.model,
                           "in_flight": len(engine.dnn_queue.get(p.name, [])), "images": engine.dnn_images[p.name]}
    named = {}
    for key, entry in per.items():
        owner, state = shown[key]
        counts = dict(daemon.stats.per_pipeline.get(key, {}).get("outcomes", {}))
        total = sum(counts.values())
        entry["outcomes"] = counts
        entry["miss_rate"] = round((counts.get("late", 0) + counts.get("dropped", 0)) / total, 4) if total else 0.0
        # Its owner sees the name it chose; an admin sees the daemon's unique one.
        named[state.name if owner is client else key] = entry
    clients = [{"id": c.id, "pid": c.pid, "uid": c.uid, "pipelines": list(c.pipelines)}
               for c in daemon.clients.values() if admin or c is client]
    return fitted({"now": daemon.clock.now(), "dilation": daemon.dilation, "slots": slots,
                   "port": {"loads": port.loads, "busy_s": port.busy_s, "queued": len(port.queue)},
                   "pipelines": named, "outcomes": dict(daemon.stats.outcomes if admin else client.outcomes),
                   "clients": clients, "admin": admin, "loop": loop, "host": daemon.host_watch.summary(),
                   "host_overruns": daemon.driver.overruns.summary(),
                   "control": control}, STATUS_BYTES)


#: Bytes a status answer may take: a reply is one message of at most MAX_MESSAGE (protocol.py),
#: with room for its envelope (version, id, ok).
STATUS_BYTES = MAX_MESSAGE - 1024


def fitted(answer: dict, limit: int) -> dict:
    """``answer`` within ``limit`` bytes of msgpack: an admin's view of many pipelines (tenants
    choose how many, and their names' lengths) would not fit one message. The pipelines and the
    clients are kept in order, each list while it fits its share of the room (half, or more when
    the other needs less); ``truncated`` then says how many there were."""
    if len(msgpack.packb(answer)) <= limit:
        return answer
    pipelines, clients = list(answer["pipelines"].items()), answer["clients"]
    costs = {"pipelines": [len(msgpack.packb({k: v})) for k, v in pipelines],
             "clients": [len(msgpack.packb(c)) for c in clients]}
    out = {**answer, "pipelines": {}, "clients": [],
           "truncated": {"pipelines": len(pipelines), "clients": len(clients)}}
    room = max(0, limit - len(msgpack.packb(out)) - 16)          # 16: the lists' headers as they grow
    needs = {key: sum(c) for key, c in costs.items()}
    share = {"pipelines": max(room // 2, room - needs["clients"]),
             "clients": max(room // 2, room - needs["pipelines"])}
    kept = {}
    for key, entry_costs in costs.items():
        total = count = 0
        for cost in entry_costs:      # (each entry's own map header makes its cost an overestimate)
            if total + cost > share[key]:
                break
            total, count = total + cost, count + 1
        kept[key] = count
    out["pipelines"] = dict(pipelines[:kept["pipelines"]])
    out["clients"] = clients[:kept["clients"]]
    return out


async def summaries_off_loop(daemon) -> tuple[dict, dict | None]:
    """The loop's and the control lane's summaries for ``status``: their samples copied on the loop,
    their percentiles computed on a worker (a status request is one short piece of control work)."""
    from fpgashare.daemon import control_lane, loop_latency

    loop = daemon.loop_latency.snapshot()
    lane = daemon.lane.snapshot() if daemon.lane is not None else None

    def both() -> tuple[dict, dict | None]:
        return loop_latency.summarize(loop), None if lane is None else control_lane.summarize(lane)

    return await daemon.off_loop.run("status", daemon.off_loop.deadline(), both)

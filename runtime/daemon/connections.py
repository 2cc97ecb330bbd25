"""The daemon's side of one client's connection: reading its requests (the wire's one decoder),
charging each to the client's rate (a body that is no request costs what a request costs), handing
it to its op in its turn (the real-time path inline, control work behind it in the control lane),
and sending the reply; when the client goes, its frames on the fabric are answered before the
socket closes. Parts are handed in by the daemon (runtime/daemon/server.py) when it starts."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable

from fpgashare.daemon.control_lane import ControlLane
from fpgashare.daemon.limits import Limits, RateLimiter
from fpgashare.daemon.ops import Ops
from fpgashare.daemon.sessions import Client, Sessions
from fpgashare.daemon.tenants import Tenants
from fpgashare.errors import FpgashareError
from fpgashare.wire.protocol import MessageReader, ProtocolError, error_reply, reply

log = logging.getLogger("fpgashare.daemon")

CLIENT_GONE = "client gone"
SHUTTING_DOWN = "daemon shutting down"
SHUTDOWN_GRACE_S = 5.0    #: wall seconds frames on the fabric get to finish when the daemon stops
#: Ops handled inline as their message is read: the real-time path. Every other op waits for its
#: turn in the control lane (control_lane.py), behind every real-time item ready.
REALTIME_OPS = frozenset({"submit"})


class Connections:
    """Every client connection of one daemon. ``realtime_due``: take the engine's events already
    due (before any request is handled); ``shutting_down``: whether the daemon is stopping (its
    requests are then answered ``gone``)."""

    def __init__(self, sessions: Sessions, tenants: Tenants, ops: Ops, lane: ControlLane, limits: Limits,
                 realtime_due: Callable[[], None], shutting_down: Callable[[], bool]) -> None:
        self.sessions, self.tenants, self.ops, self.lane, self.limits = sessions, tenants, ops, lane, limits
        self.realtime_due, self.shutting_down = realtime_due, shutting_down
        self._next_id = 0

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                     creds: tuple[int, int, int]) -> None:
        """A connection the acceptor took (its user admitted: acceptor.py, tenants.py)."""
        pid, uid, gid = creds
        self._next_id += 1
        client = Client(self._next_id, pid, uid, gid, writer, RateLimiter(self.limits.messages_per_s))
        self.sessions.clients[client.id] = client
        self.tenants.joined(client)
        log.info("client %d connected (pid %d, uid %d, gid %d)", client.id, pid, uid, gid)
        messages = MessageReader(reader)
        try:
            while True:
                try:
                    message = await messages.next()
                except ProtocolError as exc:
                    client.send(error_reply(-1, exc))
                    if exc.kind != "malformed" or "stream ended" in str(exc):
                        break              # the stream cannot be resynchronised after a bad length
                    message = None         # a body that is no request: it costs what a request costs
                else:
                    if message is None:
                        break
                over = self.tenants.over_rate(client, None if message is None else message.get("op"))
                if over is not None:
                    if message is not None:
                        client.send(error_reply(message["id"], over[0]))
                    await writer.drain()
                    await asyncio.sleep(over[1])     # not read again until a request could be taken
                    continue
                if message is not None:
                    await self._handle(client, message)
                # A client that does not read its replies is not read either: they cannot pile up here.
                await writer.drain()
                # One request per connection per turn of the loop: timers due (frames ending, loads)
                # run between a flooder's requests, and other connections get their turn. A request
                # not yet here needs no yield: waiting for it gives the turn away.
                if messages.waiting:
                    await asyncio.sleep(0)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            self.sessions.client_gone(client, CLIENT_GONE)
            await self._answered(client, writer)
            self.tenants.left(client)
            with contextlib.suppress(Exception):
                writer.close()

    async def _answered(self, client: Client, writer: asyncio.StreamWriter) -> None:
        """Wait (at most SHUTDOWN_GRACE_S) until the frames ``client`` had on the fabric when it
        stopped sending are answered: one that only half-closed its socket still reads, and
        each of its frames gets its one answer (dropped, client gone) before the socket closes.
        A client that is really gone makes the writes fail, which ends the wait at once."""
        deadline = time.monotonic() + SHUTDOWN_GRACE_S
        while client.pipelines and not writer.is_closing() and time.monotonic() < deadline:
            await asyncio.sleep(0.005)

    async def _handle(self, client: Client, message: dict) -> None:
        rid = message["id"]
        op = message.get("op")
        handler = self.ops.handlers.get(op) if isinstance(op, str) else None
        if self.shutting_down():
            client.send(error_reply(rid, ProtocolError("gone", SHUTTING_DOWN)))
            return
        if handler is None:
            client.send(error_reply(rid, ProtocolError("unknown_op", f"unknown op {op!r}")))
            return
        if op not in REALTIME_OPS:
            await self.lane.turn()           # control work: after every real-time item ready now
            if self.shutting_down():
                client.send(error_reply(rid, ProtocolError("gone", SHUTTING_DOWN)))
                return
        self.realtime_due()                 # the real-time path first: events due before any request
        try:
            answer = await handler(client, message)
            if answer is not None:
                answer = reply(rid, **answer)        # one that cannot be a message is an error reply
        except ProtocolError as exc:
            if exc.kind == "admission":       # reasons over the whole set: no other client's names
                exc = ProtocolError(exc.kind, self.sessions.redact(str(exc), client, message.get("name")))
            client.send(error_reply(rid, exc))
        except FpgashareError as exc:
            text = self.sessions.redact(str(exc), client, message.get("name"))
            client.send(error_reply(rid, ProtocolError("bad_request", text)))
        except (ConnectionError, asyncio.CancelledError):
            raise
        except Exception as exc:
            log.exception("op %s failed", op)
            client.send(error_reply(rid, ProtocolError("internal", f"{type(exc).__name__}: {exc}")))
        else:
            if answer is not None:
                client.send(answer)

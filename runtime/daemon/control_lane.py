"""The real-time path first: everything on the daemon's loop that is not a real-time frame waits
for a turn in one lane, and the lane gives out at most one turn per turn of the loop, at its end.

What is real-time: a frame's submit (handled inline, as its message is read), the engine's timer
(a frame's or a load's end, answered inside it), and the reply writes they make. Everything else
is *control work*: registrations, status, hello, clock, close, a DNN image's hand-in (best effort),
taking new connections, and every continuation of such a request after it waited (a worker's
result, a mode change, the registration lock).

Why the real-time path then waits for at most one piece of control work. One turn of asyncio's loop
(``BaseEventLoop._run_once``) waits in ``select``, appends the callbacks of the sockets that are
ready, then the timers that are due, and then runs every callback queued so far, in order; callbacks
queued while it runs wait for the next turn. The lane's grant is a timer (``call_at(now)``), so it
runs in the timer phase of a turn, after that turn's socket callbacks; it wakes one waiting piece,
which therefore runs at the start of the next turn, *after* every task the socket callbacks woke
(the real-time frames read in that turn) and after the engine's timers that were due; and the lane
arms its next grant only once that piece has run (a callback queued behind it), so the next grant
is again a turn later, after the ``select`` that sees what arrived meanwhile. Hence between a
real-time item becoming ready (its bytes in the socket, its timer due) and its callback running, at
most one control piece starts: the one running when it became ready (a callback is never
preempted). With the frames' own host work that is the loop's busy period of
``runtime/sched/host/host_cost.py``, whose blocking term ``b`` is the longest control piece plus a
switch of the interpreter's lock (``eventloop.SWITCH_INTERVAL_S``) to the loop thread.

What the lane does not bound: reading and decoding one message per connection that has one (a
connection is served one request at a time; it decodes its next message before it knows the lane
is needed); that is bounded by the connection limits and the message size.

Control work is not starved: admission keeps the real-time work's share of the loop under one, so
the loop has turns with nothing real-time in them, and the lane is first-come first-served over
every connection.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Callable

log = logging.getLogger("fpgashare.daemon")

WINDOW = 10_000           #: newest pieces' durations kept for the summary


class ControlLane:
    """One turn of control work per turn of the loop, after the real-time path (module doc).

    ``before()`` runs at each grant, before the piece it wakes (the driver taking the engine's
    events already due). ``await turn()`` waits for a turn (coroutines); ``call(fn)`` runs
    ``fn()`` at one (callbacks). Once closed, turns are immediate (the daemon is stopping)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, before: Callable[[], None] = lambda: None) -> None:
        self.loop, self.before = loop, before
        self._waiting: deque[asyncio.Future | Callable[[], None]] = deque()
        self._timer: asyncio.TimerHandle | None = None
        self._running = False         # a granted piece has not run yet: no grant until it has
        self.closed = False
        self.granted = 0              #: turns given out so far
        self.most_waiting = 0         #: the longest the queue has been
        #: wall seconds of the newest pieces, each from its start to the loop's next callback (the
        #: blocking a real-time item can see: ``b`` of the host analysis), and the loop thread's
        #: CPU seconds in them (the same less the time the thread was not running: another
        #: process on its core, a worker holding the interpreter's lock)
        self.pieces: deque[float] = deque(maxlen=WINDOW)
        self.pieces_cpu: deque[float] = deque(maxlen=WINDOW)
        self.longest = self.longest_cpu = 0.0
        self._started: tuple[float, float] | None = None

    @property
    def waiting(self) -> int:
        """Pieces waiting for a turn."""
        return len(self._waiting)

    async def turn(self) -> None:
        """Return at this piece's turn: after every real-time item ready now."""
        if self.closed:
            return
        future = self.loop.create_future()
        self._enqueue(future)
        await future
        self._started = (time.perf_counter(), time.thread_time())

    def call(self, fn: Callable[[], None]) -> None:
        """Run ``fn()`` at its turn."""
        if self.closed:
            self.loop.call_soon(fn)
            return
        self._enqueue(fn)

    def _enqueue(self, item: asyncio.Future | Callable[[], None]) -> None:
        self._waiting.append(item)
        self.most_waiting = max(self.most_waiting, len(self._waiting))
        self._arm()

    def _arm(self) -> None:
        if self._timer is None and not self._running and self._waiting and not self.closed:
            # A timer, not call_soon: it runs after this turn's sockets and due timers (module doc).
            self._timer = self.loop.call_at(self.loop.time(), self._grant)

    def _grant(self) -> None:
        self._timer = None
        self.before()
        while self._waiting:
            item = self._waiting.popleft()
            if isinstance(item, asyncio.Future):
                if item.done():                   # its task was cancelled (its client went)
                    continue
                item.set_result(None)             # its task runs at the start of the next turn
            else:
                self.loop.call_soon(self._run, item)
            self.granted += 1
            self._running = True
            # Queued behind the piece's own wake-up: the next grant is armed once it has run.
            self.loop.call_soon(self._ran)
            return

    def _run(self, fn: Callable[[], None]) -> None:
        self._started = (time.perf_counter(), time.thread_time())
        try:
            fn()
        except Exception:
            log.exception("control work on the loop failed")

    def _ran(self) -> None:
        if self._started is not None:
            piece, cpu = time.perf_counter() - self._started[0], time.thread_time() - self._started[1]
            self.pieces.append(piece)
            self.pieces_cpu.append(cpu)
            self.longest, self.longest_cpu = max(self.longest, piece), max(self.longest_cpu, cpu)
            self._started = None
        self._running = False
        self._arm()

    def summary(self) -> dict:
        """Turns given, pieces waiting now (and at most), and the pieces' p50, p99 and longest
        duration in milliseconds, wall and the loop thread's CPU."""
        return summarize(self.snapshot())

    def snapshot(self) -> dict:
        """What ``summary`` needs, copied (cheap, on the loop); ``summarize`` it anywhere."""
        return {"turns": self.granted, "waiting": len(self._waiting), "most_waiting": self.most_waiting,
                "pieces": list(self.pieces), "pieces_cpu": list(self.pieces_cpu), "longest": self.longest,
                "longest_cpu": self.longest_cpu}


    def close(self) -> None:
        """Give every waiting piece its turn now and take no more turns (the daemon stops)."""
        self.closed = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        while self._waiting:
            item = self._waiting.popleft()
            if isinstance(item, asyncio.Future):
                if not item.done():
                    item.set_result(None)
            else:
                self.loop.call_soon(self._run, item)


def summarize(snapshot: dict) -> dict:
    """``ControlLane.summary`` of a ``snapshot`` (its percentiles: off the loop, in ``status``)."""
    import numpy as np

    def ms(values: list[float]) -> tuple[float, float]:
        return tuple(np.percentile(np.asarray(values, dtype=np.float64), [50, 99]) * 1e3) if values else (0.0, 0.0)

    (p50, p99), (cpu50, cpu99) = ms(snapshot["pieces"]), ms(snapshot["pieces_cpu"])
    return {"turns": snapshot["turns"], "waiting": snapshot["waiting"], "most_waiting": snapshot["most_waiting"],
            "piece_p50_ms": round(float(p50), 4), "piece_p99_ms": round(float(p99), 4),
            "piece_max_ms": round(snapshot["longest"] * 1e3, 4), "piece_cpu_p50_ms": round(float(cpu50), 4),
            "piece_cpu_p99_ms": round(float(cpu99), 4), "piece_cpu_max_ms": round(snapshot["longest_cpu"] * 1e3, 4)}

"""Work a request needs that could take long — measuring a host stage's cost, an admission trial,
building a network — runs on worker threads, never on the daemon's loop, and each piece has a
time limit: past it the request is refused (``admission``, naming the limit) and the loop never
waited at all. A thread cannot be stopped, so a piece that overruns finishes on its worker (its
result, a measurement, is kept for the next request that needs it); a few dedicated workers
bound how many such pieces run at once.

The request's handling resumes on the loop only at its turn in the control lane (control_lane.py):
after the real-time path, like any other control work.

Python on a worker holds the interpreter's lock while it computes: the loop thread, woken for a
frame's timer or a socket, gets it back only when the worker is made to drop it, after the switch
interval (``eventloop.SWITCH_INTERVAL_S``, which the daemon sets) or when the worker blocks."""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from fpgashare.wire.protocol import ProtocolError

if TYPE_CHECKING:
    from fpgashare.daemon.control_lane import ControlLane

log = logging.getLogger("fpgashare.daemon")

T = TypeVar("T")
WORKERS = 2               #: threads for requests' slow work (registrations run one at a time)
TIME_LIMIT_S = 20.0       #: wall seconds one request's slow work may take in all


class OffLoop:
    def __init__(self, workers: int = WORKERS, limit_s: float = TIME_LIMIT_S) -> None:
        self.limit_s = limit_s
        self._pool = concurrent.futures.ThreadPoolExecutor(workers, thread_name_prefix="fpgashare-work")
        self.lane: ControlLane | None = None   #: the daemon's control lane, once it starts

    def deadline(self) -> float:
        """The monotonic time by which a request's slow work must be done."""
        return time.monotonic() + self.limit_s

    async def run(self, what: str, deadline: float, fn: Callable[..., T], *args) -> T:
        """``fn(*args)`` on a worker; refused ``admission`` if it is not done by ``deadline``. The
        caller resumes at its turn in the control lane."""
        future = asyncio.get_running_loop().run_in_executor(self._pool, fn, *args)
        try:
            result = await asyncio.wait_for(future, max(0.0, deadline - time.monotonic()))
        except asyncio.TimeoutError:
            log.warning("%s: over its time limit of %g s (left to finish on its worker)", what, self.limit_s)
            await self._turn()
            raise ProtocolError("admission", f"{what}: took longer than the time limit of {self.limit_s:g} s") from None
        except Exception:
            await self._turn()
            raise
        await self._turn()
        return result

    async def _turn(self) -> None:
        if self.lane is not None:
            await self.lane.turn()

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)

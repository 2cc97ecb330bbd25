"""One registration at a time, given in turns by user: the daemon takes registrations one at a
time (each admission trial sees the set it joins, and a mode change completes before the next),
and a registration may hold that for up to the slow-work and mode-change limits. First come, first
served would let a user with many connections queue as many registrations ahead of everyone else.

``TurnsByUser.hold(uid)`` grants the lock round-robin over the users waiting, each user's own
requests in their order. Why a request waits for at most one grant per other user per request of
its own user ahead of it: a user with waiters is in the rotation once; each grant serves the user
at its head, which goes to the back if it has more waiting. So between a request joining and its
grant, every other user is served at most once per round, and the request's own user is served
once per round too: the k-th waiting request of a user is granted within k rounds.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import AsyncIterator


class TurnsByUser:
    """An asyncio lock whose waiters are served in turns by user (module docstring)."""

    def __init__(self) -> None:
        self._held = False
        self._waiting: dict[int, deque[asyncio.Future]] = {}   # by user, in arrival order
        self._rotation: deque[int] = deque()                   # users with waiters, next first

    @property
    def held(self) -> bool:
        return self._held

    @contextlib.asynccontextmanager
    async def hold(self, uid: int) -> AsyncIterator[None]:
        """Hold the lock for ``uid``'s request, waiting for its turn."""
        if self._held or self._rotation:
            granted = asyncio.get_running_loop().create_future()
            mine = self._waiting.get(uid)
            if mine is None:
                mine = self._waiting[uid] = deque()
                self._rotation.append(uid)
            mine.append(granted)
            try:
                await granted
            except asyncio.CancelledError:
                if granted.done() and not granted.cancelled():    # granted as it was cancelled: pass it on
                    self._release()
                raise
        else:
            self._held = True
        try:
            yield
        finally:
            self._release()

    def _release(self) -> None:
        """Give the lock to the next user in turn (a waiter cancelled meanwhile is skipped)."""
        while self._rotation:
            uid = self._rotation.popleft()
            mine = self._waiting[uid]
            while mine and mine[0].done():      # cancelled while waiting: not this user's turn lost
                mine.popleft()
            if not mine:
                del self._waiting[uid]
                continue
            mine.popleft().set_result(None)     # still held: now by that request
            if mine:
                self._rotation.append(uid)      # its next request waits for its next turn
            else:
                del self._waiting[uid]
            return
        self._held = False

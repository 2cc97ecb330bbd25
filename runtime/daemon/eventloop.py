"""The daemon's event loop: asyncio whose timers keep microseconds.

A frame's end is a timer on the daemon's loop (a 120x160 frame lasts 96 us on the ZCU104 fabric).
asyncio's loop on Linux waits in ``epoll_wait``, whose timeout is whole milliseconds, so every
such timer would fire up to a millisecond late. ``FineTimerSelector`` waits in ``select()`` on
the epoll descriptor itself instead — it is readable whenever a registered socket is — whose
timeout is in microseconds, then reads the events with a zero timeout: the sockets stay in
epoll (no descriptor limit), only the wait changes. Linux also lets a sleeping thread wake up
to 50 us late (its default timer slack); the loop thread asks for 1 us.
"""

from __future__ import annotations

import asyncio
import ctypes
import logging
import select
import selectors
import sys

log = logging.getLogger(__name__)

_PR_SET_TIMERSLACK = 29   # linux/prctl.h


if hasattr(selectors, "EpollSelector"):
    class FineTimerSelector(selectors.EpollSelector):
        """epoll for the sockets, ``select()`` on the epoll descriptor for a timeout in microseconds."""

        def select(self, timeout: float | None = None) -> list:
            if timeout is not None and timeout > 0:
                select.select([self.fileno()], [], [], timeout)
                timeout = 0
            return super().select(timeout)
else:                         # kqueue (macOS, BSD) already takes nanoseconds
    FineTimerSelector = None


def new_event_loop() -> asyncio.AbstractEventLoop:
    """An event loop whose timers fire within microseconds of their time."""
    if FineTimerSelector is None:
        return asyncio.new_event_loop()
    return asyncio.SelectorEventLoop(FineTimerSelector())


def tighten_timer_slack(slack_ns: int = 1) -> bool:
    """Let the calling thread's timed sleeps end within ``slack_ns`` of their time (Linux);
    True if the kernel took it."""
    if sys.platform != "linux":
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(_PR_SET_TIMERSLACK, ctypes.c_ulong(slack_ns), 0, 0, 0) == 0
    except (OSError, AttributeError) as exc:
        log.debug("timer slack unchanged: %s", exc)
        return False

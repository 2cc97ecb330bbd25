"""The daemon's event loop: asyncio whose timers keep microseconds.

A frame's end is a timer on the daemon's loop (a 120x160 frame lasts 96 us on the ZCU104 fabric).
asyncio's loop on Linux waits in ``epoll_wait``, whose timeout is whole milliseconds, so every
such timer would fire up to a millisecond late. ``FineTimerSelector`` waits in ``select()`` on
the epoll descriptor itself instead — it is readable whenever a registered socket is — whose
timeout is in microseconds, then reads the events with a zero timeout: the sockets stay in
epoll (no descriptor limit), only the wait changes. Linux also lets a sleeping thread wake up
to 50 us late (its default timer slack); the loop thread asks for 1 us.

Even then a sleep ends tens of microseconds late on a virtual machine (the timer is the
hypervisor's: ~35 us measured on this project's build host with 1 us of slack), a third of a small
frame's hardware time. So the last ``SPIN_S`` before a timer are not slept but polled: the
selector sleeps until ``SPIN_S`` before the timer, then polls epoll with a zero timeout until it
is due or a socket is ready. The cost is bounded: at most ``SPIN_S`` of one core per timer, and
only for timers (a loop waiting on sockets alone sleeps).

The loop thread shares the interpreter's lock with the daemon's workers (admission trials,
placements, a network's build: off_loop.py). A worker computing in Python keeps the lock until it
is asked to drop it, which the waiting loop thread does only after the switch interval: 5 ms by
default, so every wake-up of the loop (a frame's timer, a submit's bytes) and every system call
it makes while a worker computes could wait 5 ms. The daemon sets ``SWITCH_INTERVAL_S`` instead
(``shorten_switch_interval``): a wait for the lock is then at most that long, unless a worker is
inside one C call that holds the lock (none of the daemon's slow pieces makes a long one).
``benchmarks/realtime_first.py`` measures both the delay and what the shorter interval costs a
worker's throughput.

The cyclic garbage collector runs in whichever thread allocates, the loop's included, and a full
collection walks every tracked object: with the daemon's imports (numpy, the catalogue, the
scheduler) that was tens of milliseconds, even a few hundred on a loaded host, in the middle of
real-time work. The daemon freezes what is alive once it has started (``gc.freeze()``), so a full
collection walks only the objects made since.
"""

from __future__ import annotations

import asyncio
import ctypes
import logging
import select
import selectors
import sys
import time

log = logging.getLogger(__name__)

_PR_SET_TIMERSLACK = 29   # linux/prctl.h
SPIN_S = 60e-6            #: polled, not slept, before a timer: above a VM's timer lateness
SWITCH_INTERVAL_S = 100e-6   #: the longest a worker's Python keeps the loop thread from its lock


if hasattr(selectors, "EpollSelector"):
    class FineTimerSelector(selectors.EpollSelector):
        """epoll for the sockets, ``select()`` on the epoll descriptor for a timeout in microseconds,
        the last ``spin_s`` of it polled (see the module's doc)."""

        spin_s = SPIN_S

        def select(self, timeout: float | None = None) -> list:
            if timeout is None or timeout <= 0:
                return super().select(timeout)
            if timeout > self.spin_s:
                # Wake ``spin_s`` early; the loop asks again with what is left, and that is polled.
                if select.select([self.fileno()], [], [], timeout - self.spin_s)[0]:
                    return super().select(0)
                return []
            due = time.perf_counter() + timeout
            while not (events := super().select(0)) and time.perf_counter() < due:
                pass
            return events
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


def shorten_switch_interval(interval_s: float = SWITCH_INTERVAL_S) -> float:
    """Make the interpreter hand its lock to a waiting thread (the loop) within ``interval_s``
    when another computes (see the module's doc); returns the interval it had, to restore. Never
    lengthens it."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(min(before, interval_s))
    return before

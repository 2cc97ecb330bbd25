"""Running a daemon inside another program (the demo, benchmarks, tests), and the simulated
board's clock dilation."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
import time

from fpgashare.backends.base import Backend
from fpgashare.daemon.eventloop import new_event_loop
from fpgashare.daemon.server import Daemon
from fpgashare.errors import FpgashareError


class DaemonThread:
    """A daemon on a thread of its own with its own event loop: ``with DaemonThread(daemon):``
    serves until the block ends. A daemon that cannot start (another holds the board) raises
    its error from ``__enter__``."""

    def __init__(self, daemon: Daemon) -> None:
        self.daemon = daemon
        self.loop = new_event_loop()
        self.thread = threading.Thread(target=self._run, name="fpgashare-daemon", daemon=True)
        self.ready = threading.Event()
        self.error: BaseException | None = None

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        try:
            self.loop.run_until_complete(self.daemon.start())
        except BaseException as exc:     # handed to __enter__
            self.error = exc
            self.ready.set()
            return
        self.ready.set()
        self.loop.run_until_complete(self.daemon._stopped.wait())

    def __enter__(self) -> Daemon:
        self.thread.start()
        if not self.ready.wait(60):
            raise FpgashareError("the daemon did not start within 60 s")
        if self.error is not None:
            self._close()
            raise self.error
        return self.daemon

    def _close(self) -> None:
        """Close the loop once its thread has ended (a loop left to the garbage collector closes
        itself there, whenever that is, and its selector may be gone by then)."""
        self.thread.join(30)
        if not self.thread.is_alive() and not self.loop.is_closed():
            self.loop.close()

    def __exit__(self, *exc) -> None:
        if self.thread.is_alive() and not self.daemon._stopped.is_set():
            stopping = asyncio.run_coroutine_threadsafe(self.daemon.stop(), self.loop)
            deadline = time.monotonic() + 30
            # A stop begun elsewhere may end the loop before this one runs: then the thread ends.
            while not stopping.done() and self.thread.is_alive() and time.monotonic() < deadline:
                concurrent.futures.wait([stopping], timeout=0.05)
            if stopping.done():
                stopping.result()
        self._close()


def calibrate_dilation(backend: Backend, margin: float = 2.0) -> float:
    """How much slower than the hardware a backend runs: the wall time of one partial load and one
    small frame over their hardware time, times ``margin``; 1 for a backend that runs in real
    time (``Backend.runs_in_real_time``: a real board). Loads a module into slot 0 (the daemon
    starts with every slot blank, so nothing is lost)."""
    import numpy as np
    from fpgashare.backends.simrun import resolve_chain

    if backend.runs_in_real_time:
        return 1.0
    stages = resolve_chain(["threshold"], {})
    start = time.perf_counter()
    load = backend.load(0, "threshold")
    load_ratio = (time.perf_counter() - start) / load.seconds
    # One frame untimed first: a first call's one-off cost (imports, caches) is not the backend's
    # speed, and on the model it would read as hundreds of times slower than the hardware.
    backend.run_frame([0], stages, np.zeros((120, 160), np.uint8))
    start = time.perf_counter()
    frame = backend.run_frame([0], stages, np.zeros((120, 160), np.uint8))
    frame_ratio = (time.perf_counter() - start) / frame.seconds
    return max(1.0, margin * max(load_ratio, frame_ratio))

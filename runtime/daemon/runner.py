"""Running a daemon inside another program (the demo, benchmarks, tests), and the simulated
board's clock dilation."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
import time

from fpgashare.backends.base import Backend
from fpgashare.daemon.server import Daemon
from fpgashare.errors import FpgashareError
from fpgashare.eventloop import new_event_loop


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
            raise self.error
        return self.daemon

    def __exit__(self, *exc) -> None:
        if self.thread.is_alive() and not self.daemon._stopped.is_set():
            stopping = asyncio.run_coroutine_threadsafe(self.daemon.stop(), self.loop)
            deadline = time.monotonic() + 30
            # A stop begun elsewhere may end the loop before this one runs: then the thread ends.
            while not stopping.done() and self.thread.is_alive() and time.monotonic() < deadline:
                concurrent.futures.wait([stopping], timeout=0.05)
            if stopping.done():
                stopping.result()
        self.thread.join(30)


def calibrate_dilation(backend: Backend, margin: float = 2.0) -> float:
    """How much slower than the hardware a backend runs: the wall time of one partial load and one
    small frame over their hardware time, times ``margin``; 1 for a real board. Loads a module
    into slot 0 (the daemon starts with every slot blank, so nothing is lost)."""
    import numpy as np
    from fpgashare.simrun import resolve_chain

    if backend.name == "pynq":
        return 1.0
    stages = resolve_chain(["threshold"], {})
    start = time.perf_counter()
    load = backend.load(0, "threshold")
    load_ratio = (time.perf_counter() - start) / load.seconds
    start = time.perf_counter()
    frame = backend.run_frame([0], stages, np.zeros((120, 160), np.uint8))
    frame_ratio = (time.perf_counter() - start) / frame.seconds
    return max(1.0, margin * max(load_ratio, frame_ratio))


CALIBRATION_BATCHES = 5


def measure_host_cost(backend: Backend, frames: int = 200, margin: float | None = None):
    """The daemon's own work on this host (runtime/sched/host_cost.py), measured here, times
    ``margin`` (default CALIBRATION_MARGIN): a throwaway engine on a model of the same platform
    and a virtual clock takes ``frames`` small frames in CALIBRATION_BATCHES batches (the median
    batch's time per frame: the engine's bookkeeping, dispatch and completion, a frame's request
    and reply encoded and decoded), a 4 MB frame is copied (per byte), and a partial load is
    started and ended on the model. Another request's handling on the loop (``block_s``) is taken
    as one frame's work; the daemon's loop-latency monitor re-checks it while it runs. Never
    touches ``backend``'s slots."""
    import numpy as np
    from fpgashare.backends.model import ModelBackend
    from fpgashare.clock import VirtualClock
    from fpgashare.protocol import HEADER, decode, encode, reply
    from fpgashare.sched import make_policy
    from fpgashare.sched.host_cost import CALIBRATION_MARGIN, HostCost
    from fpgashare.sched.online import OnlineEngine
    from fpgashare.workload import realtime_spec

    margin = CALIBRATION_MARGIN if margin is None else margin
    platform = backend.platform
    model = ModelBackend(platform)
    clock = VirtualClock()
    engine = OnlineEngine(platform, model, make_policy("edf"), clock)
    engine.begin()
    spec = realtime_spec("host_probe", ["threshold"], 0.002, 0.002, [8, 8], platform)
    engine.add_pipeline(spec)
    pixels = np.zeros((8, 8), np.uint8)
    t = 0.0
    for _ in range(3):                       # the pipeline's switch and its first load: not per frame
        t += 0.002
        clock.wait_until(t)
        engine.advance_to(t)
    submit = encode({"op": "submit", "id": 1, "pipeline": "host_probe", "slot": 0, "shape": [8, 8], "dtype": "uint8"})
    batches = []
    for _ in range(CALIBRATION_BATCHES):     # the median batch: one preempted batch is not the host's speed
        start = time.perf_counter()
        for _ in range(max(1, frames // CALIBRATION_BATCHES)):
            decode(submit[HEADER.size:])
            engine.submit("host_probe", pixels)
            t += 0.002
            while (due := engine.next_event_s()) is not None and due <= t:
                clock.wait_until(max(due, clock.now()))
                engine.advance_to(clock.now())
            clock.wait_until(t)
            engine.advance_to(t)
            reply(1, outcome="on_time", reason=None, slot=0, latency_ms=0.1)
        batches.append((time.perf_counter() - start) / max(1, frames // CALIBRATION_BATCHES))
    per_frame = float(np.median(batches))
    big, out = np.zeros(4 << 20, np.uint8), np.empty(4 << 20, np.uint8)
    copies = []
    for _ in range(CALIBRATION_BATCHES):     # the median again (the first copy also faults the pages in)
        start = time.perf_counter()
        np.copyto(out, big)
        copies.append((time.perf_counter() - start) / big.size)
    per_byte = float(np.median(copies))
    start = time.perf_counter()
    for k in range(10):
        model.load(k % len(platform.slots), "threshold")
    per_load = (time.perf_counter() - start) / 10
    cost = HostCost(per_frame, per_byte, per_load, per_frame).scaled(margin)
    return cost

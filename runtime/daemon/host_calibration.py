"""The daemon's own work on this host, measured at start (runtime/sched/host/host_cost.py has the
model and the argument): what admission's host check counts per frame, per byte and per load."""

from __future__ import annotations

import time

from fpgashare.backends.base import Backend

CALIBRATION_BATCHES = 5
LOADS_PER_BATCH = 10


def measure_host_cost(backend: Backend, frames: int = 200, margin: float | None = None):
    """The daemon's own work on this host (runtime/sched/host/host_cost.py), measured here, times
    ``margin`` (default CALIBRATION_MARGIN): a throwaway engine on a model of the same platform
    and a virtual clock takes ``frames`` small frames in CALIBRATION_BATCHES batches (the median
    batch's time per frame: the engine's bookkeeping, dispatch and completion, a frame's request
    and reply encoded and decoded), a 4 MB frame is copied (per byte), and partial loads are
    started and ended on the model (the median batch's time per load). Another request's
    handling on the loop (``block_s``) is taken as one frame's work; the daemon's loop-latency
    monitor re-checks it while it runs. Never touches ``backend``'s slots."""
    import numpy as np
    from fpgashare.backends.model import ModelBackend
    from fpgashare.catalogue.workload import realtime_spec
    from fpgashare.sched.board.board import Board
    from fpgashare.sched.core.clock import VirtualClock
    from fpgashare.sched.host.host_cost import CALIBRATION_MARGIN, HostCost
    from fpgashare.sched.policies.registry import make_policy
    from fpgashare.wire.protocol import HEADER, decode, encode, reply

    margin = CALIBRATION_MARGIN if margin is None else margin
    platform = backend.platform
    model = ModelBackend(platform)
    clock = VirtualClock()
    engine = Board.whole(platform, model, lambda: make_policy("edf"), clock)
    engine.begin()
    # Any one-input module the platform offers (a demo's cut-down catalogue may lack threshold):
    # what is timed is the daemon's bookkeeping around a frame, not the module.
    module = probe_module(platform)
    spec = realtime_spec("host_probe", [module], 0.002, 0.002, [8, 8], platform)
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
    homes = [s.index for s in platform.slots_for(module)]
    loads = []
    for _ in range(CALIBRATION_BATCHES):     # the median too: one batch preempted by another process
        start = time.perf_counter()          # (3 ms on a loaded host) is not the load's cost
        for k in range(LOADS_PER_BATCH):
            model.load(homes[k % len(homes)], module)
        loads.append((time.perf_counter() - start) / LOADS_PER_BATCH)
    per_load = float(np.median(loads))
    cost = HostCost(per_frame, per_byte, per_load, per_frame).scaled(margin)
    return cost


def probe_module(platform) -> str:
    """The module the calibration runs: threshold if the platform has it, else its first module
    that takes a grey frame and fits a slot of its own."""
    from fpgashare.catalogue.modules import KINDS
    from fpgashare.errors import FpgashareError

    if "threshold" in platform.modules and platform.slots_for("threshold"):
        return "threshold"
    for name in sorted(platform.modules):
        kind = KINDS.get(name)
        if kind is not None and name != "dnn_tile" and platform.slots_for(name) \
                and kind.input_shape(8, 8) == (8, 8):
            return name
    raise FpgashareError(f"{platform.name} has no module the host calibration could run")


def measure_wake_lateness(samples: int = 200, sleep_s: float = 0.001) -> float:
    """How late this process's thread wakes from a short sleep, wall seconds: the 99th percentile
    of ``samples`` sleeps of ``sleep_s``. On a host shared with busy processes the scheduler runs
    others for milliseconds before the thread (measured on two cores under five busy processes:
    p99 6-8 ms, on the same host at rest 0.14 ms); for the daemon's loop that is a block like
    another callback's (``HostCost.block_s``): real-time work ready meanwhile waits for it."""
    import numpy as np

    late = []
    for _ in range(samples):
        start = time.perf_counter()
        time.sleep(sleep_s)
        late.append(max(0.0, time.perf_counter() - start - sleep_s))
    return float(np.percentile(late, 99))


def with_wake_lateness(cost, lateness_s: float, margin: float | None = None):
    """``cost`` whose block term is at least ``lateness_s`` times ``margin`` (default
    CALIBRATION_MARGIN, as the other measured terms): the host's preemption of the loop counted
    as a block (``measure_wake_lateness``)."""
    from dataclasses import replace

    from fpgashare.sched.host.host_cost import CALIBRATION_MARGIN

    margin = CALIBRATION_MARGIN if margin is None else margin
    return replace(cost, block_s=max(cost.block_s, lateness_s * margin))

"""The ``faulty`` backend: the model backend with faults injected on demand, to show that every
fault is contained (tests/test_faults.py, ``fpgashare daemon --board faulty``).

Arm a fault point with ``backend.arm(point, times=1)``; the next ``times`` operations of that kind
fail that way:

- ``load_raises``: starting a partial load raises HardwareError;
- ``load_hangs``: the load starts and never completes (``ready()`` stays False);
- ``frame_raises``: starting a frame raises HardwareError;
- ``frame_hangs``: the frame starts and its DMA never completes;
- ``dma_garbage``: the frame completes with an output of the wrong shape and dtype;
- ``dnn_raises``: a DNN batch raises HardwareError;
- ``harness_raises``: starting a frame raises a non-fpgashare exception (a simulator's bug).
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Sequence

import numpy as np
from fpgashare.backends.base import FrameReport, LoadReport, Pending, done
from fpgashare.backends.model import ModelBackend
from fpgashare.catalogue.modules import Stage
from fpgashare.errors import FpgashareError, HardwareError

POINTS = ("load_raises", "load_hangs", "frame_raises", "frame_hangs", "dma_garbage", "dnn_raises", "harness_raises")


class FaultyBackend(ModelBackend):
    name = "faulty"

    def __init__(self, platform, streams: int | None = None) -> None:
        super().__init__(platform, streams)
        self._armed: Counter[str] = Counter()
        self._lock = threading.Lock()            # armed from a test's thread, taken on the daemon's
        self.fired: Counter[str] = Counter()     #: faults injected so far, by point

    def arm(self, point: str, times: int = 1) -> None:
        if point not in POINTS:
            raise FpgashareError(f"unknown fault point {point!r}; known: {', '.join(POINTS)}")
        with self._lock:
            self._armed[point] += times

    def _take(self, point: str) -> bool:
        with self._lock:
            if self._armed[point] <= 0:
                return False
            self._armed[point] -= 1
            self.fired[point] += 1
            return True

    def start_load(self, slot: int, module: str) -> Pending[LoadReport]:
        if self._take("load_raises"):
            raise HardwareError(f"injected: the configuration port failed loading {module} into slot {slot}")
        if self._take("load_hangs"):
            self._begin_load(slot, module)
            seconds = self.platform.slot_load_cycles(slot, module) / self.platform.config_port.clock_hz
            return Pending(seconds, _never(f"load of {module} into slot {slot}"), _ready=lambda: False)
        return super().start_load(slot, module)

    def start_frame(self, slots: Sequence[int], stages: Sequence[Stage], frame: np.ndarray,
                    want_output: bool = True, stream: int = 0) -> Pending[FrameReport]:
        if self._take("harness_raises"):
            raise ZeroDivisionError("injected: the harness itself failed")
        if self._take("frame_raises"):
            raise HardwareError(f"injected: the frame on slots {list(slots)} failed to start")
        if self._take("frame_hangs"):
            report = self.run_frame(slots, stages, frame, want_output)
            return Pending(report.seconds, _never(f"frame on slots {list(slots)}"), _ready=lambda: False)
        if self._take("dma_garbage"):
            report = self.run_frame(slots, stages, frame, want_output)
            return done(FrameReport(np.full(7, 0xAB, np.int16), report.cycles, report.seconds))
        return super().start_frame(slots, stages, frame, want_output, stream)

    def run_dnn(self, slots, model, images):
        if self._take("dnn_raises"):
            raise HardwareError(f"injected: the DNN batch on slots {list(slots)} failed")
        return super().run_dnn(slots, model, images)


def _never(what: str):
    def report():
        raise HardwareError(f"injected: {what} never completed")
    return report

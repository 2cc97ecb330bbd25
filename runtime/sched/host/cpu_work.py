"""The host CPU as a scheduled resource: stages the fabric does not take run in OpenCV (or the
int8 DNN reference) inside the daemon, on a worker, with a cost model that says how long they
may take.

Why a *bound*, and why the engine waits for it: the fabric part of a split pipeline is analysed
as a periodic task released when its CPU prefix ends. If that release moved with the CPU's
actual time, two releases could come closer than a period and the analysis would not hold. So
the prefix's output is handed to the fabric exactly ``cpu_before_s`` after the frame's release
(the bound), whatever the CPU took, and the fabric part's deadline is the frame's minus both CPU
bounds: fabric on time + CPU within its bounds = frame on time. The host is not a real-time
processor: the bound is measured (the slowest of several runs, doubled, plus a floor), and a
CPU part that overruns it is counted (``overruns``) and delays only its own frame.
"""

from __future__ import annotations

import concurrent.futures
import time
from collections.abc import Callable, Sequence

import numpy as np
from fpgashare.backends.base import Pending
from fpgashare.catalogue.modules import Stage
from fpgashare.catalogue.vision_ref import chain_reference, chain_results

#: A measured CPU bound is the slowest of MEASURE_RUNS runs x MARGIN + FLOOR_S: the host shares
#: its cores with the apps and the daemon, and a frame's CPU part must rarely exceed its bound.
MEASURE_RUNS = 5
MARGIN = 2.0
FLOOR_S = 0.001


def chain_shape(stages: Sequence[Stage], rows: int, cols: int) -> tuple[int, int]:
    """(rows, cols) of what ``stages`` output for a rows x cols frame."""
    for stage in stages:
        rows, cols = stage.kind.output_shape(rows, cols)
    return rows, cols


class CpuCost:
    """Seconds a chain of stages may take on the host for one frame (a bound, see the module's
    doc). Measured once per (stages, size) and kept; ``seconds`` is deterministic afterwards."""

    def __init__(self, runs: int = MEASURE_RUNS, margin: float = MARGIN, floor_s: float = FLOOR_S) -> None:
        self.runs, self.margin, self.floor_s = runs, margin, floor_s
        self._known: dict[tuple, float] = {}

    def seconds(self, stages: Sequence[Stage], rows: int, cols: int) -> float:
        if not stages:
            return 0.0
        key = (tuple((s.kind.name, tuple(sorted(s.regs.items()))) for s in stages), rows, cols)
        return self._bound(key, lambda: self.measure(stages, rows, cols))

    def infer_seconds(self, model: str) -> float:
        """The bound of one image through DNN ``model``'s int8 reference on the host."""
        return self._bound(("dnn", model), lambda: self.measure_inference(model))

    def _bound(self, key: tuple, measure: Callable[[], float]) -> float:
        if key not in self._known:
            self._known[key] = measure() * self.margin + self.floor_s
        return self._known[key]

    def measure(self, stages: Sequence[Stage], rows: int, cols: int) -> float:
        """The slowest of ``runs`` runs of ``stages`` on a random rows x cols frame (after one
        warm-up run)."""
        frame = np.random.default_rng(0).integers(0, 256, stages[0].kind.input_shape(rows, cols), dtype=np.uint8)
        return self._slowest(lambda: chain_reference(list(stages), frame))

    def measure_inference(self, model: str) -> float:
        infer = host_inference(model)
        image = np.zeros(infer.input_shape, np.uint8)
        return self._slowest(lambda: infer(image))

    def _slowest(self, fn: Callable[[], object]) -> float:
        fn()
        slowest = 0.0
        for _ in range(self.runs):
            start = time.perf_counter()
            fn()
            slowest = max(slowest, time.perf_counter() - start)
        return slowest


class ModelledCpuCost(CpuCost):
    """A cost model with a fixed rate (seconds per output pixel per stage, plus a floor): the
    same numbers on every machine, for tests and virtual-time runs."""

    def __init__(self, s_per_pixel: float = 5e-9, floor_s: float = FLOOR_S) -> None:
        super().__init__(floor_s=floor_s)
        self.s_per_pixel = s_per_pixel

    def measure(self, stages: Sequence[Stage], rows: int, cols: int) -> float:
        return self.s_per_pixel * rows * cols * len(stages) / self.margin

    def measure_inference(self, model: str) -> float:
        return self.s_per_pixel * 2e5 / self.margin     # about 1 ms at the default rate


class host_inference:  # noqa: N801 (a function that keeps its network)
    """``model``'s int8 reference (runtime/dnn/reference.py) on one image: the fabric's output, bit for bit."""

    def __init__(self, model: str) -> None:
        from fpgashare.dnn.planning import network
        from fpgashare.dnn.reference import logits

        self.net, self._logits = network(model), logits
        shape = self.net.input_shape
        self.input_shape = shape[:2] if shape[2] == 1 else shape

    def __call__(self, image: np.ndarray) -> np.ndarray:
        return self._logits(self.net, image.reshape(self.net.input_shape)[None])[0]


class CpuExecutor:
    """Runs CPU work; ``start`` returns at once with a ``Pending`` whose ``seconds`` is the bound.
    ``workers=0`` computes in the caller's thread at ``start`` (deterministic: tests and virtual
    time); otherwise a pool of threads computes while the engine goes on (OpenCV and numpy
    release the GIL)."""

    def __init__(self, workers: int = 0) -> None:
        self.workers = workers
        self._pool = concurrent.futures.ThreadPoolExecutor(workers, "fpgashare-cpu") if workers else None

    def start(self, seconds: float, work: Callable[[], np.ndarray]) -> Pending[np.ndarray]:
        if self._pool is None:
            try:
                out = work()
            except Exception as exc:           # reported at the job's end, as hardware faults are
                failure = exc

                def fail() -> np.ndarray:
                    raise failure
                return Pending(seconds, fail)
            return Pending(seconds, lambda: out)
        future = self._pool.submit(work)
        return Pending(seconds, future.result, _ready=future.done)

    def run_stages(self, stages: Sequence[Stage], seconds: float,
                   pixels: np.ndarray) -> Pending[tuple[np.ndarray, dict[str, dict[str, int]]]]:
        """``stages`` in OpenCV (bit-exact with the fabric's modules) on ``pixels``: the output and
        the result registers the modules would leave (``vision_ref.chain_results``)."""
        frame = np.ascontiguousarray(pixels)
        return self.start(seconds, lambda: chain_results(list(stages), frame))

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)

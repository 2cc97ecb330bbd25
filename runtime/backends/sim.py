"""The ``sim`` backend: the shell in RTL. Every bitstream and every frame passes through it."""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

import numpy as np
from fpgashare.backends.base import Backend, DnnReport, FrameReport, HardwarePending, LoadReport, Pending
from fpgashare.bitstream.registry import build_config
from fpgashare.catalogue.modules import Stage
from fpgashare.catalogue.platform import Platform
from fpgashare.errors import FpgashareError


class SimBackend(Backend):
    """The shell in RTL. Built with ``streams`` (1..the platform's), it co-simulates
    (hdl_sim/cosim.py): loads, frames and DNN batches started while others run share the RTL's
    cycles, on as many video streams as asked, and their ends come back through ``run_hardware`` at
    the RTL's cycle. Without it, each operation runs alone to its end on stream 0 (the daemon's
    wall-clock path)."""

    name = "sim"
    runs_dnn = True
    runs_in_real_time = False   #: the RTL is simulated: the wall time is Verilator's, not the fabric's

    @classmethod
    def streams_carried(cls, platform: Platform) -> int:
        """Every stream of the shell, when co-simulating."""
        return platform.streams

    def __init__(self, platform: Platform, streams: int | None = None) -> None:
        super().__init__(platform, streams)
        from fpgashare.hdl_sim.board import SimBoard
        from fpgashare.hdl_sim.cosim import CoSim

        if streams is None:
            self.concurrent_streams = 1
        elif platform.config_port.clock_hz != platform.fabric_clock_hz:
            raise FpgashareError(f"{platform.path}: the co-simulated shell has one clock; config_port.clock_hz "
                                 f"{platform.config_port.clock_hz:g} differs from fabric_clock_hz "
                                 f"{platform.fabric_clock_hz:g}")
        self.board = SimBoard(platform, streams=self.concurrent_streams)
        self.cosim = CoSim(self.board, platform.fabric_clock_hz) if streams is not None else None
        self._twin = None

    # ---- co-simulation: operations that overlap in the schedule overlap in the RTL
    def run_hardware(self, until_s: float) -> None:
        if self.cosim is not None:
            self.cosim.run_until(until_s)

    def hardware_busy(self) -> bool:
        return self.cosim is not None and self.cosim.busy()

    def _estimate(self):
        """The twin, for the estimates a HardwarePending carries (the RTL says when work ends)."""
        if self._twin is None:
            from fpgashare.backends.model import ModelBackend

            self._twin = ModelBackend(self.platform)
        return self._twin

    def _started(self, job, estimate_s: float, finish) -> HardwarePending:
        pending = HardwarePending(estimate_s)

        def ended(t: float, result, error: BaseException | None) -> None:
            report = None
            if error is None:
                try:
                    report = finish(result, t)
                except Exception as exc:     # a result the hardware got wrong: the work failed
                    error = exc
            pending.ended(t, report, error)

        self.cosim.start(job, ended)
        return pending

    def start_load(self, slot: int, module: str) -> Pending[LoadReport]:
        if self.cosim is None:
            return super().start_load(slot, module)
        self._begin_load(slot, module)

        def finish(result, t: float) -> LoadReport:
            report = LoadReport(slot, module, result.error, result.cycles,
                                result.cycles / self.platform.config_port.clock_hz)
            self._end_load(report)
            return report

        return self._started(self.board.load_job(slot, self._config(slot, module)),
                             self.platform.slot_load_seconds(slot, module), finish)

    def start_frame(self, slots: Sequence[int], stages: Sequence[Stage], frame: np.ndarray,
                    want_output: bool = True, stream: int = 0) -> Pending[FrameReport]:
        if self.cosim is None:
            return super().start_frame(slots, stages, frame, want_output, stream)
        self._check_chain(slots, stages)
        estimate = self._estimate().frame_cycles(list(stages), *frame.shape[:2]) / self.platform.fabric_clock_hz

        def finish(result, t: float) -> FrameReport:
            out, stats, results = result
            return FrameReport(out, stats.cycles, stats.cycles / self.platform.fabric_clock_hz, results)

        return self._started(self.board.frame_job(stream, list(slots), list(stages), frame), estimate, finish)

    def start_dnn(self, slots: Sequence[int], model: str, images: int | np.ndarray,
                  stream: int = 0) -> Pending[DnnReport]:
        if self.cosim is None:
            return super().start_dnn(slots, model, images, stream)
        plan, count = self._check_dnn(slots, model, images)
        estimate = self.dnn_setup_s(slots, model, plan) + plan.batch_cycles(count) / self.platform.fabric_clock_hz
        return self._started(self._dnn_job(list(slots), model, plan, images, stream), estimate,
                             lambda report, t: report)

    def _dnn_job(self, slots: list[int], model: str, plan, images: int | np.ndarray, stream: int):
        from fpgashare.dnn.planning import network
        from fpgashare.dnn.tile_chain import TileChain

        net = network(model)
        chain = TileChain(self.board, net, plan, slots, configure=False)
        given = not isinstance(images, int)
        try:
            program = 0
            for slot, start, stop in self.unprogrammed(slots, model, plan):
                program += yield from chain.program_job(slot, start, stop, stream)
            run = yield from chain.run_job(images if given else self._dnn_inputs(net.input_shape, images), stream)
        finally:
            self.board.release_route(stream)
        cycles = program + run.cycles
        outputs = run.outputs.reshape(len(run.outputs), -1) if given else None
        return DnnReport(len(run.outputs), cycles, cycles / self.platform.fabric_clock_hz, outputs)

    def _blocking(self, what: str) -> None:
        if self.cosim is not None and self.cosim.busy():
            raise FpgashareError(f"{what} while co-simulated work runs: use the start_* calls")

    def _load(self, slot: int, module: str) -> LoadReport:
        self._blocking("a blocking load")
        result = self.board.load(slot, self._config(slot, module))
        return LoadReport(slot, module, result.error, result.cycles,
                          result.cycles / self.platform.config_port.clock_hz)

    @lru_cache(maxsize=32)  # noqa: B019 - one backend per board, alive as long as it; 1 MB per entry
    def _config(self, slot: int, module: str) -> np.ndarray:
        """The partial's words, built once: its CRC in Python costs about as much wall time as the
        RTL load itself, and the same (slot, module) pairs recur all the time in a daemon."""
        return build_config(self.platform, self.platform.slots[slot], module)

    def _run_frame(self, slots: list[int], stages: list[Stage], frame: np.ndarray,
                   want_output: bool) -> FrameReport:  # the RTL always produces the pixels
        self._blocking("a blocking frame")
        from fpgashare.hdl_sim.cosim import run_alone

        out, stats, results = run_alone(self.board, self.board.frame_job(0, slots, stages, frame, settle=64))
        return FrameReport(out, stats.out_end_cycle, stats.out_end_cycle / self.platform.fabric_clock_hz, results)

    def _run_dnn(self, slots: list[int], model: str, plan, images: int | np.ndarray) -> DnnReport:
        self._blocking("a blocking DNN batch")
        from fpgashare.hdl_sim.cosim import run_alone

        return run_alone(self.board, self._dnn_job(slots, model, plan, images, 0))

    def _dnn_inputs(self, shape: tuple[int, ...], images: int) -> np.ndarray:
        """Seeded stand-in camera crops; the scheduler asks for throughput, not answers."""
        rng = np.random.default_rng(images)
        return rng.integers(0, 256, (images, *shape), dtype=np.uint8)

"""The ``sim`` backend: the shell in RTL. Every bitstream and every frame passes through it."""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from fpgashare.backends.base import Backend, DnnReport, FrameReport, LoadReport
from fpgashare.bitstream.registry import build_config
from fpgashare.errors import FrameError
from fpgashare.modules import Stage
from fpgashare.platform import Platform


class SimBackend(Backend):
    name = "sim"
    runs_dnn = True

    def __init__(self, platform: Platform) -> None:
        super().__init__(platform)
        from fpgashare.hdl_sim.board import SimBoard

        self.board = SimBoard(platform)

    def _load(self, slot: int, module: str) -> LoadReport:
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
        self.board.route(slots)
        shape = frame.shape[:2]
        for slot, stage in zip(slots, stages, strict=True):
            self.board.program(slot, stage, *shape)
            shape = stage.kind.output_shape(*shape)
        out, stats = self.board.stream(frame, shape)
        if stats.tlast_errors or stats.extra_out:
            raise FrameError(f"frame framing broken in RTL: {stats.tlast_errors} TLAST errors, "
                             f"{stats.extra_out} extra beats")
        return FrameReport(out, stats.out_end_cycle, stats.out_end_cycle / self.platform.fabric_clock_hz)

    def _run_dnn(self, slots: list[int], model: str, plan, images: int | np.ndarray) -> DnnReport:
        from fpgashare.dnn.planning import network
        from fpgashare.dnn.tile_chain import TileChain

        net = network(model)
        chain = TileChain(self.board, net, plan, slots, configure=False)
        program = sum(chain.program(slot, start, stop) for slot, start, stop in self.unprogrammed(slots, model, plan))
        self.board.route(slots)
        given = not isinstance(images, int)
        run = chain.run(images if given else self._dnn_inputs(net.input_shape, images))
        cycles = program + run.cycles
        outputs = run.outputs.reshape(len(run.outputs), -1) if given else None
        return DnnReport(len(run.outputs), cycles, cycles / self.platform.fabric_clock_hz, outputs)

    def _dnn_inputs(self, shape: tuple[int, ...], images: int) -> np.ndarray:
        """Seeded stand-in camera crops; the scheduler asks for throughput, not answers."""
        rng = np.random.default_rng(images)
        return rng.integers(0, 256, (images, *shape), dtype=np.uint8)

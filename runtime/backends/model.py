"""The ``model`` backend: the analytical twin of the simulated board. Outputs from the OpenCV
goldens, frame time from fpgashare.catalogue.vision_timing, load time from the partial bitstream's length at
one word per port cycle (plus the activation cycle), as the RTL port takes it. It models a
healthy port: a corrupted bitstream is the sim backend's (and the board's) business."""

from __future__ import annotations

import numpy as np
from fpgashare.backends.base import Backend, DnnReport, FrameReport, LoadReport
from fpgashare.bitstream.packets import PortError
from fpgashare.catalogue.modules import Stage
from fpgashare.catalogue.platform import Platform
from fpgashare.catalogue.vision_ref import chain_results
from fpgashare.catalogue.vision_timing import chain_cycles
from fpgashare.dnn.planning import network, program_words
from fpgashare.dnn.reference import logits


class ModelBackend(Backend):
    name = "model"
    runs_dnn = True
    runs_in_real_time = False   #: times are cycle counts over the clock; the wall time is the host's

    def __init__(self, platform: Platform, streams: int | None = None) -> None:
        super().__init__(platform, streams)
        self._chain_cycles: dict[tuple[tuple[str, ...], int, int], int] = {}

    @classmethod
    def streams_carried(cls, platform: Platform) -> int:
        """Every stream of the shell: the twin's time is a model, frames on disjoint slots overlap."""
        return platform.streams

    def _load(self, slot: int, module: str) -> LoadReport:
        # The generator's stream through a correct port: every word, then the activation cycle.
        # (The sim backend runs the real words; tests/test_backends.py holds the two equal.)
        cycles = self.platform.slot_load_cycles(slot, module)
        return LoadReport(slot, module, PortError.OK, cycles, cycles / self.platform.config_port.clock_hz)

    def _run_frame(self, slots: list[int], stages: list[Stage], frame: np.ndarray,
                   want_output: bool) -> FrameReport:
        cycles = self.frame_cycles(stages, *frame.shape[:2])
        output, results = chain_results(stages, frame) if want_output else (None, {})
        return FrameReport(output, cycles, cycles / self.platform.fabric_clock_hz, results)

    def frame_cycles(self, stages: list[Stage], rows: int, cols: int) -> int:
        """Fabric cycles of one rows x cols frame through ``stages`` (worked out once per chain and size)."""
        key = tuple(stage.kind.name for stage in stages), rows, cols
        cycles = self._chain_cycles.get(key)
        if cycles is None:
            cycles = self._chain_cycles[key] = chain_cycles(stages, rows, cols, self.platform.pixels_per_clock)
        return cycles

    def _run_dnn(self, slots: list[int], model: str, plan, images: int | np.ndarray) -> DnnReport:
        # A tile that lacks its layers first takes its load stream, one word per cycle.
        program = sum(program_words(model, start, stop, self.platform.dnn_tile)
                      for _, start, stop in self.unprogrammed(slots, model, plan))
        count = images if isinstance(images, int) else len(images)
        cycles = int(program + plan.batch_cycles(count))
        outputs = None if isinstance(images, int) else logits(network(model), images)
        return DnnReport(count, cycles, cycles / self.platform.fabric_clock_hz, outputs)

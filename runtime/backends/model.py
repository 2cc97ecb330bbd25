"""The ``model`` backend: the analytical twin of the simulated board. Outputs from the OpenCV
goldens, frame time from runtime.vision_timing, load time from the partial bitstream's length at
one word per port cycle (plus the activation cycle), as the RTL port takes it."""

from __future__ import annotations

import numpy as np

from hdl_sim.board import ACTIVATION_CYCLES
from runtime.backends.base import Backend, FrameReport, LoadReport
from runtime.bitstream.packets import SlotRegion, check_words
from runtime.bitstream.registry import build_config
from runtime.modules import Stage
from runtime.platform import Platform
from runtime.vision_ref import chain_reference
from runtime.vision_timing import chain_cycles


class ModelBackend(Backend):
    name = "model"

    def __init__(self, platform: Platform) -> None:
        super().__init__(platform)
        self._verdicts: dict[tuple[int, str], tuple] = {}

    def _load(self, slot: int, module: str) -> LoadReport:
        key = (slot, module)
        if key not in self._verdicts:   # the port's verdict on the real words, computed once
            spec = self.platform.slots[slot]
            region = SlotRegion(spec.far_base, spec.frames, self.platform.slot_module_mask(spec))
            verdict = check_words(build_config(self.platform, spec, module), self.platform.idcode,
                                  self.platform.frame_words, region)
            self._verdicts[key] = (verdict.error, verdict.words_to_desync + ACTIVATION_CYCLES)
        error, cycles = self._verdicts[key]
        return LoadReport(slot, module, error, cycles, cycles / self.platform.config_port.clock_hz)

    def _run_frame(self, slots: list[int], stages: list[Stage], frame: np.ndarray) -> FrameReport:
        cycles = chain_cycles(stages, *frame.shape[:2])
        return FrameReport(chain_reference(stages, frame), cycles, cycles / self.platform.fabric_clock_hz)

"""A backend seen through a subset of its slots: what one stream's partition of the fabric
(runtime/sched/board/stream_plan.py) gives its scheduler. Slot ``i`` of the view is slot ``slots[i]`` of
the board; the view's platform is the board's with only those slots (names, frame ranges and
module lists kept, so load times and compatibility are the board's own)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np
from fpgashare.backends.base import Backend, DnnReport, FrameReport, LoadReport, Pending
from fpgashare.catalogue.fused_regions import restrict
from fpgashare.catalogue.modules import Stage
from fpgashare.catalogue.platform import Platform
from fpgashare.errors import FpgashareError

_SUBS: dict[tuple[int, tuple[int, ...]], tuple[Platform, Platform]] = {}


def sub_platform(platform: Platform, slots: Sequence[int]) -> Platform:
    """``platform`` with only ``slots`` (renumbered 0..) and one stream; one object per slot set (the
    analysis caches by object)."""
    slots = tuple(slots)
    if len(set(slots)) != len(slots) or not slots:
        raise FpgashareError(f"a partition needs distinct slots of {platform.name}, got {list(slots)}")
    hit = _SUBS.get((id(platform), slots))
    if hit is None or hit[0] is not platform:
        chosen = tuple(replace(platform.slot(g), index=i) for i, g in enumerate(slots))
        fused, modules = restrict(platform.fused, platform.modules, slots)   # regions wholly inside only
        hit = _SUBS[id(platform), slots] = (platform, replace(platform, slots=chosen, streams=1, fused=fused,
                                                              modules=modules))
    return hit[1]


class SlotView(Backend):
    """``backend`` through ``slots`` (global indices), for one partition's engine."""

    def __init__(self, backend: Backend, slots: Sequence[int]) -> None:
        super().__init__(sub_platform(backend.platform, slots))
        self.inner, self.global_slots = backend, tuple(slots)
        self.name, self.runs_dnn, self.held_clock = backend.name, backend.runs_dnn, backend.held_clock
        self.runs_in_real_time = backend.runs_in_real_time

    def _g(self, slot: int) -> int:
        return self.global_slots[self._check_slot(slot)]

    def resident(self, slot: int) -> str | None:
        return self.inner.resident(self._g(slot))

    def start_load(self, slot: int, module: str) -> Pending[LoadReport]:
        return self.inner.start_load(self._g(slot), module)

    def load(self, slot: int, module: str) -> LoadReport:
        return self.inner.load(self._g(slot), module)

    def start_frame(self, slots: Sequence[int], stages: Sequence[Stage], frame: np.ndarray,
                    want_output: bool = True, stream: int = 0) -> Pending[FrameReport]:
        return self.inner.start_frame([self._g(s) for s in slots], stages, frame, want_output, stream)

    def start_dnn(self, slots: Sequence[int], model: str, images: int | np.ndarray,
                  stream: int = 0) -> Pending[DnnReport]:
        return self.inner.start_dnn([self._g(s) for s in slots], model, images, stream)

    def run_hardware(self, until_s: float) -> None:
        self.inner.run_hardware(until_s)

    def hardware_busy(self) -> bool:
        return self.inner.hardware_busy()

    def run_frame(self, slots: Sequence[int], stages: Sequence[Stage], frame: np.ndarray,
                  want_output: bool = True) -> FrameReport:
        return self.inner.run_frame([self._g(s) for s in slots], stages, frame, want_output)

    def run_dnn(self, slots: Sequence[int], model: str, images: int | np.ndarray) -> DnnReport:
        return self.inner.run_dnn([self._g(s) for s in slots], model, images)

    def dnn_setup_s(self, slots: Sequence[int], model: str, plan) -> float:
        return self.inner.dnn_setup_s([self._g(s) for s in slots], model, plan)

    def reset_slot(self, slot: int) -> None:
        self.inner.reset_slot(self._g(slot))

    def _load(self, slot: int, module: str) -> LoadReport:      # every call goes to the inner backend
        raise NotImplementedError

    def _run_frame(self, slots, stages, frame, want_output) -> FrameReport:
        raise NotImplementedError

"""A network split over dnn_tile slots of the simulated board.

Each stage's tile enters its slot through the configuration port with a real partial bitstream,
then receives its segment's load stream (descriptors, weights, parameters) over AXI-Stream;
the stream switch chains the slots, and images flow tile to tile through the inter-slot links.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

import numpy as np
from fpgashare.backends.shell_map import low_words, word_beats
from fpgashare.bitstream.registry import build_config
from fpgashare.catalogue.modules import KINDS
from fpgashare.dnn.network import Network
from fpgashare.dnn.partition import Plan
from fpgashare.dnn.reference import quantize_input
from fpgashare.dnn.tile_format import TileSpec, load_stream, pack_activations, unpack_activations
from fpgashare.errors import FrameError, NetworkError
from fpgashare.hdl_sim.cosim import Job, StreamPhase, run_alone

log = logging.getLogger(__name__)

_REGS = KINDS["dnn_tile"].regs    # the register map, kept with the module catalogue
REG_STATUS, REG_MODE, REG_NLAYERS, REG_IMAGE_CYCLES = (_REGS[r] for r in ("STATUS", "MODE", "NLAYERS", "IMAGE_CYCLES"))
REG_INFO, REG_ACT_ENTRIES, REG_W_ENTRIES, REG_PG_ENTRIES = (
    _REGS[r] for r in ("INFO", "ACT_ENTRIES", "W_ENTRIES", "PG_ENTRIES"))
REG_LAYER0 = 16                    # LAYER_CYCLES[l] is register 16 + l (dnn_tile.sv)


@dataclass(frozen=True)
class ChainRun:
    """Outputs and measured cycles of a batch of images through the tile chain."""

    outputs: np.ndarray          #: int8 [N, H, W, C]
    cycles: int                  #: cycles from the first input word to the last output word
    stage_image_cycles: list[int]  #: per tile: receive + layers + send of the last image
    layer_cycles: list[list[int]]  #: per tile, per layer, for the last image
    wall_s: float


class TileChain:
    """``plan``'s stages in slots of ``board`` (a SimBoard), ready to run images.

    By default each tile first enters its slot through the configuration port and then receives
    its segment; with ``configure=False`` the slots already hold dnn_tile (the scheduler loaded
    them) and ``program`` gives each tile its segment when the caller says it lacks it; nothing is
    routed until a job runs (on the stream the caller names). ``spec`` defaults to the platform's
    dnn_tile variant; the plan must have been made for the same variant."""

    def __init__(self, board, net: Network, plan: Plan, slots: list[int] | None = None,
                 spec: TileSpec | None = None, configure: bool = True) -> None:
        platform = board.platform
        spec = platform.dnn_tile if spec is None else spec
        free = [s.index for s in platform.slots_for("dnn_tile")] if "dnn_tile" in platform.modules else []
        slots = free[: len(plan.stages)] if slots is None else slots
        if len(plan.stages) > len(free) or len(slots) != len(plan.stages):
            raise NetworkError(f"{net.name}: the plan needs {len(plan.stages)} dnn_tile slot(s); platform "
                               f"{platform.name} has {len(free)} that can hold one")
        self.board, self.net, self.plan, self.slots, self.spec = board, net, plan, slots, spec
        self.load_words = self.load_cycles = 0
        if configure:
            for stage, slot in zip(plan.stages, slots, strict=True):
                result = board.load_or_raise(slot, build_config(platform, platform.slots[slot], "dnn_tile"))
                self.load_words += result.words
                self.load_cycles += result.cycles
                self.program(slot, stage.start, stage.stop)
            board.route(slots)

    def program(self, slot: int, start: int, stop: int) -> int:
        """Send the load stream of layers [start, stop) to the tile in ``slot``; its cycles."""
        return run_alone(self.board, self.program_job(slot, start, stop))

    def program_job(self, slot: int, start: int, stop: int, stream: int = 0) -> Job:
        """``program`` as a job of the co-simulation (hdl_sim/cosim.py), on video stream ``stream``."""
        board = self.board
        sizes = [board.module_read(slot, r)[1] for r in (REG_ACT_ENTRIES, REG_W_ENTRIES, REG_PG_ENTRIES)]
        p = board.module_read(slot, REG_INFO)[1] >> 16 & 0xFF
        want = [self.spec.act_entries, self.spec.w_entries, self.spec.pg_entries]
        if sizes != want or p != self.spec.p:
            raise NetworkError(f"slot {slot}: the tile in RTL has P={p}, sizes {sizes}; the runtime expects "
                               f"P={self.spec.p}, sizes {want}")
        board.route([slot], stream)
        board.module_write(slot, REG_MODE, 1)
        words = load_stream(self.net, start, stop, self.spec)
        beats = word_beats(words, board.rtl.beat_words)
        _, stats = yield StreamPhase(stream, beats, words.size, 0, 0, 4 * words.size + 1000, settle=0)
        board.module_write(slot, REG_MODE, 0)
        status, layers = board.module_read(slot, REG_STATUS)[1], board.module_read(slot, REG_NLAYERS)[1]
        if not stats.finished or status != 0 or layers != stop - start:
            raise NetworkError(f"slot {slot}: tile refused layers {start}..{stop - 1} (status {status:#x}, "
                               f"{layers} layers, {stats.sent}/{words.size} words taken)")
        log.info("slot %d: layers %d..%d, %d load words", slot, start, stop - 1, words.size)
        return stats.cycles

    def run(self, images: np.ndarray) -> ChainRun:
        """uint8 images [N, H, W] (or [N, H, W, C]) through the chain, back to back; int8
        [N, H, W, C] are activations the host quantized already (an imported model's input)."""
        return run_alone(self.board, self.run_job(images))

    def run_job(self, images: np.ndarray, stream: int = 0) -> Job:
        """``run`` as a job of the co-simulation, on video stream ``stream`` (routed here)."""
        x = images if images.dtype == np.int8 and images.ndim == 4 else quantize_input(images)
        if x.shape[1:] != self.net.input_shape:
            raise FrameError(f"{self.net.name} takes images of {self.net.input_shape[:2]} "
                             f"(x{self.net.input_shape[2]} channels), got {images.shape[1:]}")
        words = np.concatenate([pack_activations(img, self.spec) for img in x])
        per_in = self.spec.words(self.net.input_shape)
        per_out = self.spec.words(self.net.output_shape)
        n = len(x)
        budget = int(self.plan.latency_cycles + n * self.plan.bottleneck_cycles) * 2 + 10_000
        start = time.perf_counter()
        if self.board.routes.get(stream) != list(self.slots):
            self.board.route(self.slots, stream)
        bw = self.board.rtl.beat_words
        out, stats = yield StreamPhase(stream, word_beats(words, bw), per_in, n * per_out, per_out, budget, settle=0)
        out = low_words(out, bw)
        wall = time.perf_counter() - start
        if not stats.finished or stats.tlast_errors:
            raise FrameError(f"{self.net.name}: {stats.received}/{n * per_out} output words, "
                             f"{stats.tlast_errors} TLAST errors after {stats.cycles} cycles")
        outputs = np.stack([unpack_activations(out[i * per_out:(i + 1) * per_out], self.net.output_shape, self.spec)
                            for i in range(n)])
        image_cycles, layer_cycles = [], []
        for stage, slot in zip(self.plan.stages, self.slots, strict=True):
            image_cycles.append(self.board.module_read(slot, REG_IMAGE_CYCLES)[1])
            layer_cycles.append([self.board.module_read(slot, REG_LAYER0 + i)[1]
                                 for i in range(stage.stop - stage.start)])
        return ChainRun(outputs, stats.out_end_cycle, image_cycles, layer_cycles, wall)

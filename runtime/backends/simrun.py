"""Run a chain of vision modules on the simulated board: load each into a slot through the
configuration port, route the chain through the stream switch, stream one frame. A chain longer than
the slots runs in passes through memory, split as bench and the daemon split it (passes.py): each
pass loads its stages (a module already in its slot stays), streams the previous pass's output.

Used by ``fpgashare sim run``. ``chain_board`` builds the smallest simulated board for a chain: the
platform's shell with models of the chain's modules only (the simulator evaluates a slot's loaded
module, and builds each module once, so a smaller library costs less to build, not to run).
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from fpgashare.bitstream.registry import build_config
from fpgashare.catalogue.fused_fit import match_footprints
from fpgashare.catalogue.modules import Stage, expand_chain, resolve_stage
from fpgashare.catalogue.passes import match_slots, split_chain
from fpgashare.catalogue.platform import Platform, SlotSpec
from fpgashare.errors import FrameError, ModuleError

MIN_SIDE = 8


@dataclass
class ChainResult:
    output: np.ndarray
    slots: dict[str, str]
    load_cycles: int
    load_words: int
    compute_cycles: int
    wall_s: float
    load_s: float
    compute_s: float
    pixels: int
    results: dict[str, dict[str, int]] = field(default_factory=dict)  #: result registers read after the frame
    load_wall_s: float = 0.0     #: wall time of generating and loading the bitstreams
    stream_wall_s: float = 0.0   #: wall time of streaming the frame through the RTL (packing included)
    stream_cpu_s: float = 0.0    #: CPU time of the same (steadier than wall time on a shared machine)
    passes: list[dict[str, str]] = field(default_factory=list)   #: stage -> slot name, per pass

    @property
    def pixels_per_s(self) -> float:
        """Simulated pixels per second of wall time spent streaming (all passes)."""
        return self.pixels / self.stream_wall_s if self.stream_wall_s > 0 else 0.0

    @property
    def pixels_per_cpu_s(self) -> float:
        """The same per CPU second (steadier on a shared machine)."""
        return self.pixels / self.stream_cpu_s if self.stream_cpu_s > 0 else 0.0

    def as_dict(self) -> dict:
        return {
            "pixels": self.pixels, "load_cycles": self.load_cycles, "load_words": self.load_words,
            "compute_cycles": self.compute_cycles, "load_s": self.load_s, "compute_s": self.compute_s,
            "wall_s": round(self.wall_s, 4), "load_wall_s": round(self.load_wall_s, 4),
            "stream_wall_s": round(self.stream_wall_s, 4), "stream_cpu_s": round(self.stream_cpu_s, 4),
            "slots": self.slots, "passes": self.passes,
            "pixels_per_s": round(self.pixels_per_s), "pixels_per_cpu_s": round(self.pixels_per_cpu_s),
            "output_shape": list(self.output.shape), "results": self.results,
        }


def parse_overrides(items: Sequence[str], chain: Sequence[str]) -> dict[str, dict[str, int]]:
    """``MOD.REG=VALUE`` strings -> {stage name: {REG: value}}; ModuleError on a bad item."""
    out: dict[str, dict[str, int]] = {}
    for item in items:
        target, eq, value = item.partition("=")
        stage, dot, reg = target.partition(".")
        if not eq or not dot or not reg:
            raise ModuleError(f"--set {item!r}: expected MODULE.REGISTER=VALUE")
        if stage not in chain:
            raise ModuleError(f"--set {item!r}: {stage!r} is not a stage of the chain ({', '.join(chain)})")
        try:
            number = int(value, 0)
        except ValueError:
            raise ModuleError(f"--set {item!r}: {value!r} is not an integer") from None
        out.setdefault(stage, {})[reg.upper()] = number
    return out


def resolve_chain(chain: Sequence[str], overrides: Mapping[str, Mapping[str, int]]) -> list[Stage]:
    if not chain:
        raise ModuleError("the chain is empty: give at least one module")
    chain = expand_chain(chain)
    if len(set(chain)) != len(chain):
        raise ModuleError(f"a stage appears twice in the chain {list(chain)}; each stage needs its own slot")
    stages = [resolve_stage(name, overrides.get(name)) for name in chain]
    for before, stage in itertools.pairwise(stages):
        if stage.kind.channels_in != before.kind.channels_out:
            if stage.kind.channels_in == 3:
                raise ModuleError(f"{stage.name} takes RGB input and must be the first stage "
                                  f"(or follow a 3-channel stage such as rgb2hsv)")
            if stage.kind.channels_in == 2:
                raise ModuleError(f"{stage.name} takes a frame and its reference side by side and must be "
                                  f"the first stage")
            raise ModuleError(f"{stage.name} takes gray input, but {before.name} gives "
                              f"{before.kind.channels_out} channels per pixel")
    if stages[-1].kind.channels_out != 1:
        raise ModuleError(f"{stages[-1].name} gives {stages[-1].kind.channels_out} channels per pixel; a chain "
                          f"ends in one (follow it with a stage such as in_range)")
    return stages


def assign_slots(platform: Platform, stages: Sequence[Stage]) -> list[SlotSpec]:
    """Give each stage the first free slot that can hold its module."""
    taken: set[int] = set()
    out = []
    for stage in stages:
        candidates = [s for s in platform.slots_for(stage.kind.name)
                      if taken.isdisjoint(platform.footprint(s.index, stage.kind.name))]
        if not candidates:
            raise ModuleError(f"no free slot on {platform.name} can hold {stage.name} "
                              f"({len(platform.slots)} slots for {len(stages)} stages)")
        taken.update(platform.footprint(candidates[0].index, stage.kind.name))   # a fused region: every member
        out.append(candidates[0])
    return out


def check_frame(platform: Platform, stages: Sequence[Stage], frame: np.ndarray) -> None:
    if frame.dtype != np.uint8:
        raise FrameError(f"frames must be uint8, not {frame.dtype}")
    channels = stages[0].kind.channels_in
    if channels > 1 and (frame.ndim != 3 or frame.shape[2] != channels):
        what = "an RGB frame" if channels == 3 else f"a {channels}-channel frame (the frame and its reference)"
        raise FrameError(f"{stages[0].name} needs {what} (rows x cols x {channels}), got shape {frame.shape}")
    if channels == 1 and frame.ndim != 2:
        raise FrameError(f"{stages[0].name} needs a gray frame (rows x cols), got shape {frame.shape}")
    rows, cols = frame.shape[:2]
    if not (MIN_SIDE <= cols <= platform.max_width and MIN_SIDE <= rows <= platform.max_height):
        raise FrameError(f"frame is {cols}x{rows}; the modules take {MIN_SIDE}..{platform.max_width} wide "
                         f"and {MIN_SIDE}..{platform.max_height} high")
    shape = (rows, cols)
    for stage in stages:
        shape = stage.kind.output_shape(*shape)
        if min(shape) < 1:
            raise FrameError(f"frame {cols}x{rows} becomes empty after {stage.name}")


def pass_slots(platform: Platform, stages: Sequence[Stage]) -> list[SlotSpec]:
    """Distinct slots for ``stages`` run at once, each able to hold its stage's module; ModuleError if none."""
    slots = {s.index: s for s in platform.slots}
    homes = [set(platform.module(stage.kind.name).slots) for stage in stages]
    ok = lambda s, i: slots[s].name in homes[i]  # noqa: E731
    owner = match_slots(list(range(len(stages))), list(slots), ok) if not platform.fused else \
        match_footprints(list(range(len(stages))), list(slots), ok, platform, lambda i: stages[i].kind.name)
    if owner is None:
        raise ModuleError(f"no slots on {platform.name} hold {', '.join(s.name for s in stages)} at once")
    by_stage = {i: slots[s] for s, i in owner.items()}
    return [by_stage[i] for i in range(len(stages))]


def chain_board(platform: Platform, stages: Sequence[Stage]):
    """The simulated board for ``stages``: the platform's shell, models of the chain's modules only."""
    from fpgashare.hdl_sim.board import SimBoard

    return SimBoard(platform, modules={stage.kind.name for stage in stages})


def run_chain(board, stages: Sequence[Stage], frame: np.ndarray) -> ChainResult:
    """Load, route, program and stream one frame on a SimBoard, in as many passes as the slots need."""
    platform: Platform = board.platform
    check_frame(platform, stages, frame)
    counts = split_chain(stages, *frame.shape[:2], platform)
    start = time.perf_counter()
    load_cycles = load_words = compute_cycles = 0
    load_wall = stream_wall = stream_cpu = 0.0
    loaded: dict[int, str] = {}
    passes: list[dict[str, str]] = []
    results: dict[str, dict[str, int]] = {}
    data, k = frame, 0
    for count in counts:
        part = list(stages[k:k + count])
        k += count
        if part[-1].kind.channels_out != 1 and k < len(stages):
            raise ModuleError(f"the chain is cut into passes after {part[-1].name}, which gives "
                              f"{part[-1].kind.channels_out} channels per pixel; a pass writes gray frames")
        slots = pass_slots(platform, part)
        load_start = time.perf_counter()
        for stage, slot in zip(part, slots, strict=True):
            if loaded.get(slot.index) == stage.kind.name:
                continue    # already there: reprogrammed by registers, as the daemon keeps it
            result = board.load_or_raise(slot.index, build_config(platform, slot, stage.kind.name))
            loaded[slot.index] = stage.kind.name
            load_cycles += result.cycles
            load_words += result.words
        load_wall += time.perf_counter() - load_start
        indices = [s.index for s in slots]
        board.route(indices)
        shape = data.shape[:2]
        for stage, slot in zip(part, slots, strict=True):
            board.program(slot.index, stage, *shape)
            shape = stage.kind.output_shape(*shape)
        wall0, cpu0 = time.perf_counter(), time.process_time()
        data, stats = board.stream(data, shape)
        stream_wall += time.perf_counter() - wall0
        stream_cpu += time.process_time() - cpu0
        compute_cycles += stats.cycles
        results.update(board.read_results(indices, part))
        passes.append({st.name: sl.name for st, sl in zip(part, slots, strict=True)})
    wall = time.perf_counter() - start
    return ChainResult(
        output=data, slots={name: slot for p in passes for name, slot in p.items()},
        load_cycles=load_cycles, load_words=load_words, compute_cycles=compute_cycles, wall_s=wall,
        load_s=load_cycles / platform.config_port.clock_hz,
        compute_s=compute_cycles / platform.fabric_clock_hz, pixels=int(frame.shape[0] * frame.shape[1]),
        results=results, load_wall_s=load_wall, stream_wall_s=stream_wall, stream_cpu_s=stream_cpu,
        passes=passes,
    )

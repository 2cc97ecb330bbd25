"""A seeded episode on the simulated board, shared by the harness tests that hold two ways of
running the same RTL to the same outcome: loads (some corrupted), registers, idling and frames
through two slots with gaps and stalls, everything the board saw."""

from __future__ import annotations

import numpy as np
from fpgashare.bitstream.registry import build_config
from fpgashare.catalogue.modules import resolve_stage
from fpgashare.catalogue.platform import Platform, load_platform, manifest_at_pixels_per_clock
from fpgashare.catalogue.vision_ref import chain_reference
from fpgashare.hdl_sim.board import SimBoard

#: The library the episodes draw from (a small PYNQ-Z2 manifest of these modules).
MODULES = ("rgb2gray", "conv3x3", "sobel_mag", "threshold")
GRAY_STAGES = ("gauss3x3", "box3x3", "sobel_mag", "threshold")
#: The pixels per clock the harness tests run at, and their ids (a fixture's ``params`` / ``ids``).
PIXELS_PER_CLOCK, PPC_IDS = [1, 4], ["1 px/clk", "4 px/clk"]


def small_platform(pixels_per_clock: int, tmp_path_factory) -> Platform:
    """The PYNQ-Z2 with a library of ``MODULES`` only, at ``pixels_per_clock``, written to a
    temporary folder (a module-scoped fixture's, so each build is made once per file)."""
    folder = tmp_path_factory.mktemp(f"lib{pixels_per_clock}")
    return load_platform(manifest_at_pixels_per_clock("pynq-z2", pixels_per_clock, folder / "small.toml", MODULES))


def corrupt(words: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """``words`` with one bit flipped in their second half, short of the last eight words (``rng``
    draws the word, then the bit)."""
    bad = words.copy()
    k = int(rng.integers(len(bad) // 2, len(bad) - 8))
    bad[k] ^= np.uint32(1 << int(rng.integers(0, 32)))
    return bad


def episode(board: SimBoard, platform, rng: np.random.Generator) -> list:
    """Loads, registers, idling and frames on ``board`` as ``rng`` draws them: everything it saw."""
    nppc = platform.pixels_per_clock
    seen: list = []
    for _ in range(2):
        first = "rgb2gray" if rng.integers(0, 2) else str(rng.choice(GRAY_STAGES))
        second = str(rng.choice([s for s in GRAY_STAGES if s != first]))
        stages = [resolve_stage(first), resolve_stage(second)]
        slots = [int(s) for s in rng.permutation(2)]
        rows, cols = int(rng.integers(8, 40)), nppc * int(rng.integers(8 // nppc + 1, 40 // nppc + 1))
        frame = rng.integers(0, 256, (rows, cols, 3) if first == "rgb2gray" else (rows, cols), dtype=np.uint8)
        for slot, stage in zip(slots, stages, strict=True):
            words = build_config(platform, platform.slots[slot], stage.kind.name)
            if rng.integers(0, 2):
                seen.append(board.load(slot, corrupt(words, rng)))
            seen.append(board.load(slot, words))
            seen.append(board.slot_status(slot))
        board.route(slots)
        size = (rows, cols)
        for slot, stage in zip(slots, stages, strict=True):
            board.program(slot, stage, *size)
            size = stage.kind.output_shape(*size)
        board.rtl.idle(int(rng.integers(0, 40)))
        gap, stall = (int(v) for v in rng.integers(0, 50, size=2))
        out, stats = board.stream(frame, size, seed=int(rng.integers(1, 1 << 16)), gap_pct=gap, stall_pct=stall)
        board.release_route(0)
        assert np.array_equal(out, chain_reference(stages, frame)), f"{first}, {second}"
        seen += [out.tobytes(), stats, [board.module_read(slot, 0) for slot in slots], board.cycles]
    return seen


def twin_runs(first: SimBoard, second: SimBoard, platform, seed: int) -> tuple[list, list, int, int]:
    """Two episodes drawn from ``seed`` on each of two boards (two ways of running the same RTL), a reset
    between them (every model clocked in reset, then the slots' modules afresh): what each board saw,
    and the count of state bytes the two boards differ in before and after. Bytes nothing writes
    (padding, scratch) may differ from the start; the tests hold the count after to no more."""
    at_start = first.rtl.state_differences(second.rtl)
    runs = []
    for board in (first, second):
        rng = np.random.default_rng(seed)
        seen = episode(board, platform, rng)
        board.rtl.reset()
        runs.append(seen + episode(board, platform, rng))
    return runs[0], runs[1], at_start, first.rtl.state_differences(second.rtl)

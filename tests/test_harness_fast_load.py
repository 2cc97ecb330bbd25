"""While a partial load streams in and the rest of the shell is at rest, the harness evaluates only the
configuration block (the shell built with CFG_EXTERNAL = 1, shell_harness.cpp's fast path) and brings
the shell up to date afterwards. Held to the same build evaluating the shell every cycle: the same
load results, register values and cycle counts, and byte for byte the same state of the shell and of
the block after every step (but for the bytes nothing writes, padding and scratch, which two fresh
instances differ in already), on seeded sequences of good and broken loads, register traffic, idle
cycles and frames (modules at rest beside a load, and waking after it)."""

from __future__ import annotations

import numpy as np
import pytest
from fpgashare.backends.shell_map import REG_CFG_CYCLES, REG_CFG_LOADS, REG_CFG_STATUS, REG_CFG_WORDS
from fpgashare.bitstream.registry import build_config
from fpgashare.catalogue.modules import resolve_stage
from fpgashare.catalogue.platform import load_platform, manifest_at_pixels_per_clock
from fpgashare.catalogue.vision_ref import chain_reference
from fpgashare.hdl_sim.board import SimBoard

pytestmark = pytest.mark.rtl

MODULES = ("conv3x3", "sobel_mag", "threshold")
STAGES = ("gauss3x3", "sobel_mag", "threshold")
REGISTERS = (2, 3, REG_CFG_STATUS, REG_CFG_WORDS, REG_CFG_CYCLES, REG_CFG_LOADS)


@pytest.fixture(scope="module")
def platform(tmp_path_factory):
    path = manifest_at_pixels_per_clock("pynq-z2", 1, tmp_path_factory.mktemp("lib") / "small.toml", MODULES)
    return load_platform(path)


@pytest.fixture(scope="module")
def boards(platform):
    fast, every = SimBoard(platform), SimBoard(platform)
    every.rtl.set_fast_load(False)
    return fast, every, fast.rtl.state_differences(every.rtl)   # bytes nothing writes differ from the start


def broken(words: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A word flipped anywhere (header, frame data, CRC, trailer), or the partial cut short."""
    bad = words.copy()
    if rng.integers(0, 4) == 0:
        return bad[: int(rng.integers(1, len(bad)))].copy()
    k = int(rng.integers(0, len(bad)))
    bad[k] ^= np.uint32(1 << int(rng.integers(0, 32)))
    return bad


def registers(board: SimBoard) -> list[int]:
    return [board.shell_read(r) for r in REGISTERS] + [board.shell_read(16 + 4 * k) for k in range(2)]


def test_skipping_the_shell_during_loads_changes_nothing(platform, boards, fresh_seed):
    seed = fresh_seed
    rng = np.random.default_rng(seed)
    fast, every, unwritten = boards
    skipped = fast.rtl.fast_cycles
    for step in range(10):
        slot = int(rng.integers(0, 2))
        stage = resolve_stage(str(rng.choice(STAGES)))
        words = build_config(platform, platform.slots[slot], stage.kind.name)
        if rng.integers(0, 3) == 0:
            words = broken(words, rng)
        idle = int(rng.integers(0, 40))
        seen = []
        for board in (fast, every):
            result = board.load(slot, words)
            board.rtl.idle(idle)
            seen.append((result, registers(board), board.cycles))
        assert seen[0] == seen[1], f"seed {seed}, step {step}: slot {slot}, {stage.name}, {len(words)} words"
        assert fast.rtl.state_differences(every.rtl) <= unwritten, f"seed {seed}, step {step}: the states differ"
        if result.ok and rng.integers(0, 2):   # a frame through the module just loaded
            rows, cols = (int(v) for v in rng.integers(4, 24, size=2))
            frame = rng.integers(0, 256, (rows, cols), dtype=np.uint8)
            outs = []
            for board in (fast, every):
                board.route([slot])
                board.program(slot, stage, rows, cols)
                out, stats = board.stream(frame, stage.kind.output_shape(rows, cols))
                board.release_route(0)
                outs.append((out.tobytes(), stats, board.cycles))
            assert outs[0] == outs[1], f"seed {seed}, step {step}: the frame differs"
            assert np.array_equal(np.frombuffer(outs[0][0], np.uint8).reshape(stage.kind.output_shape(rows, cols)),
                                  chain_reference([stage], frame)), f"seed {seed}"
            assert fast.rtl.state_differences(every.rtl) <= unwritten, f"seed {seed}, step {step}: after a frame"
    assert every.rtl.fast_cycles == 0
    assert fast.rtl.fast_cycles - skipped > 1000, "the loads never ran the configuration block alone"


def test_a_load_beside_a_streaming_frame_is_not_skipped(platform, boards, fresh_seed):
    """A load while a frame streams through the other slot (fs_run with both): the shell is not at rest,
    so every cycle evaluates it; the frame's output and the verdict are those of the reference."""
    fast, every, unwritten = boards
    rng = np.random.default_rng(fresh_seed)
    stage = resolve_stage("threshold")
    frame = rng.integers(0, 256, (16, 24), dtype=np.uint8)
    seen = []
    for board in (fast, every):
        assert board.load(1, build_config(platform, platform.slots[1], stage.kind.name)).ok
        board.route([1])
        board.program(1, stage, 16, 24)
        board.shell_write(4, 0)
        before = board.rtl.fast_cycles
        words = build_config(platform, platform.slots[0], "conv3x3")
        out, stats = board.stream(frame, (16, 24), cfg=words)
        board.rtl.idle(8)
        board.release_route(0)
        seen.append((out.tobytes(), stats, board._load_result(0, stats), board.cycles,
                     board.rtl.fast_cycles - before))
    assert seen[0] == seen[1], f"seed {fresh_seed}"
    assert seen[0][-1] == 0, f"seed {fresh_seed}"
    assert fast.rtl.state_differences(every.rtl) <= unwritten, f"seed {fresh_seed}"


def test_a_load_on_the_port_channel_skips_the_shell_exactly(platform, boards, fresh_seed):
    """The co-simulation's way (fs_advance with the port's channel armed, stopping at seeded cycles on
    the way): the same channel statistics, verdict, cycle counts and state as the reference."""
    from fpgashare.hdl_sim.harness import PORT_CHANNEL

    fast, every, unwritten = boards
    seed = fresh_seed
    rng = np.random.default_rng(seed)
    slot = int(rng.integers(0, 2))
    words = build_config(platform, platform.slots[slot], str(rng.choice(MODULES)))
    if rng.integers(0, 2):
        words = broken(words, rng)
    stops = sorted(int(v) for v in rng.integers(1, len(words), size=3))
    idle = int(rng.integers(0, 20))
    before = fast.rtl.fast_cycles
    seen = []
    for board in (fast, every):
        board.shell_write(4, slot)
        board.rtl.arm_port(words, 5)
        start = board.cycles
        for stop in stops:   # a caller stopping mid-load (another job's turn) and going on
            assert board.rtl.advance(start + stop) == 0
            assert board.cycles == start + stop
        while not board.rtl.advance(start + 4 * len(words)):
            pass
        _, stats = board.rtl.collect(PORT_CHANNEL)
        board.rtl.idle(idle)
        seen.append((stats.sent, stats.last_word - start, stats.end - start, registers(board), board.cycles))
    assert seen[0] == seen[1], f"seed {seed}"
    assert fast.rtl.state_differences(every.rtl) <= unwritten, f"seed {seed}"
    assert fast.rtl.fast_cycles - before > len(words) // 2, f"seed {seed}"

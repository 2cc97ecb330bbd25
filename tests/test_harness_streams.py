"""The harness builds the shell with the streams it drives (``harness_parameters``: stream 0), not the
platform's stream count. Stream 0 must not notice: on a ZCU104-shaped shell (4 streams, partitions
shrunk to 4 frames so loads are short) the same loads, routes and frame - with input gaps and output
stalls - give the same port verdicts, the same output and the same cycle counts on the one-stream
harness as on a harness built with all four streams."""

from __future__ import annotations

import numpy as np
import pytest
from fpgashare.backends.shell_map import REG_STREAMS, RouteError
from fpgashare.bitstream.registry import build_config
from fpgashare.catalogue.modules import resolve_stage
from fpgashare.catalogue.platform import Platform, load_platform, manifest_at_pixels_per_clock
from fpgashare.catalogue.vision_ref import chain_reference
from fpgashare.hdl_sim.board import SimBoard
from fpgashare.hdl_sim.harness import DRIVEN_STREAMS, ShellHarness, harness_parameters

CHAIN = ("gauss3x3", "sobel_mag", "threshold")


class EveryStreamBoard(SimBoard):
    """A SimBoard whose shell has the platform's own NUM_STREAMS (the other streams tied off)."""

    def __init__(self, platform: Platform) -> None:
        self.platform = platform
        self.slot_count = len(platform.slots)
        self.rtl = ShellHarness(platform.rtl_parameters())


@pytest.fixture(scope="module")
def four_streams(tmp_path_factory):
    path = manifest_at_pixels_per_clock("zcu104", 1, tmp_path_factory.mktemp("streams") / "zcu104-small.toml",
                                        modules=("conv3x3", "sobel_mag", "threshold"))
    path.write_text(path.read_text().replace("frames = 2800", "frames = 4"))
    platform = load_platform(path)
    assert platform.streams == 4
    return platform


def test_the_harness_is_built_with_the_streams_it_drives(four_streams):
    params = harness_parameters(four_streams.rtl_parameters())
    assert params["NUM_STREAMS"] == DRIVEN_STREAMS == 1
    assert {k: v for k, v in params.items() if k != "NUM_STREAMS"} == {
        k: v for k, v in four_streams.rtl_parameters().items() if k != "NUM_STREAMS"}


def run_frame(board: SimBoard, frame: np.ndarray) -> tuple[list, np.ndarray, object]:
    stages = [resolve_stage(n) for n in CHAIN]
    loads = [board.load(k, build_config(board.platform, board.platform.slots[k], s.kind.name))
             for k, s in enumerate(stages)]
    board.route(list(range(len(stages))))
    shape = frame.shape
    for k, stage in enumerate(stages):
        board.program(k, stage, *shape)
        shape = stage.kind.output_shape(*shape)
    out, stats = board.stream(frame, shape, seed=3, gap_pct=15, stall_pct=25)
    return loads, out, stats


def test_stream_zero_is_the_same_with_one_stream_or_four(four_streams):
    frame = np.random.default_rng(5).integers(0, 256, (37, 52), dtype=np.uint8)
    one, every = SimBoard(four_streams), EveryStreamBoard(four_streams)
    assert one.shell_read(REG_STREAMS) == 1 and every.shell_read(REG_STREAMS) == 4
    loads_one, out_one, stats_one = run_frame(one, frame)
    loads_every, out_every, stats_every = run_frame(every, frame)
    assert all(r.ok for r in loads_one) and loads_one == loads_every
    assert np.array_equal(out_one, chain_reference([resolve_stage(n) for n in CHAIN], frame))
    assert np.array_equal(out_one, out_every)
    assert stats_one == stats_every and stats_one.tlast_errors == stats_one.tuser_errors == 0
    assert one.cycles == every.cycles


def test_a_route_for_another_stream_is_refused_before_any_write(four_streams):
    board = SimBoard(four_streams)
    with pytest.raises(RouteError, match="the shell has 1 stream"):
        board.route([3], stream=1)

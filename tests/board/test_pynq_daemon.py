"""The daemon on the pynq backend, in the board venv (real pynq package, numpy 1.x): partial loads
through a temporary FPGA-manager folder, frames through the stand-in overlay of
test_pynq_backend.py, a client connected over the socket gets OpenCV's answer."""

from __future__ import annotations

import numpy as np
import pytest
from fpgashare.backends.simrun import resolve_chain
from fpgashare.bitstream.registry import build_all
from fpgashare.catalogue.platform import load_platform
from fpgashare.catalogue.vision_ref import chain_reference

from tests.board.test_pynq_backend import FRAME_SHAPE, Buffer, FakeOverlay, FakeShell

pytest.importorskip("pynq.pl_server.embedded_device", reason="needs the board extra (pynq)")
pytestmark = pytest.mark.board


def test_daemon_serves_frames_on_the_pynq_backend(board_dirs, tmp_path):
    from fpgashare.backends.pynq_board import PynqBackend
    from fpgashare.client import connect

    from tests.test_daemon import RunningDaemon

    bits, firmware, manager = board_dirs
    platform = load_platform("pynq-z2")
    build_all(platform, bits)
    stages = {"threshold": resolve_chain(["threshold"], {})[0]}
    backend_box = {}
    shell = FakeShell(platform, lambda slot: stages[backend_box["b"].resident(slot)])
    backend = PynqBackend(platform, bits, firmware_dir=firmware, fpga_manager=manager,
                          overlay=FakeOverlay(shell), mmio_factory=lambda addr, size: shell, allocate=Buffer)
    backend_box["b"] = backend
    sock = tmp_path / "s.sock"
    with RunningDaemon(sock, dilation=1.0, backend=backend), connect(sock) as fpga:
        pipe = fpga.pipeline("mask", ["threshold"], period_ms=50.0, frame_shape=FRAME_SHAPE)
        frame = np.random.default_rng(5).integers(0, 256, FRAME_SHAPE, dtype=np.uint8)
        out = pipe.submit(frame).result(timeout=10)
        assert np.array_equal(out, chain_reference([stages["threshold"]], frame))
        assert (manager / "firmware").read_text().endswith("_threshold.bin")   # loaded through sysfs

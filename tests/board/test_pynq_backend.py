"""The pynq backend's load path against the real pynq package (board extra, numpy 1.x), with the
FPGA manager and firmware folders pointed at a temporary directory."""

from __future__ import annotations

import pytest

from runtime.bitstream.registry import build_all
from runtime.errors import BitstreamError
from runtime.platform import load_platform

pynq_device = pytest.importorskip("pynq.pl_server.embedded_device", reason="needs the board extra (pynq)")

pytestmark = pytest.mark.board


@pytest.fixture
def board_dirs(tmp_path):
    manager = tmp_path / "sys" / "fpga0"
    manager.mkdir(parents=True)
    for name, value in (("flags", "0"), ("firmware", ""), ("state", "operating")):
        (manager / name).write_text(value)
    return tmp_path / "bits", tmp_path / "firmware", manager


def test_stages_once_and_loads_with_two_sysfs_writes(board_dirs):
    from runtime.backends.pynq_board import PynqBackend

    bits, firmware, manager = board_dirs
    platform = load_platform("pynq-z2")
    entries = build_all(platform, bits)
    backend = PynqBackend(platform, bits, firmware_dir=firmware, fpga_manager=manager)
    assert len(backend.staged) == len(entries)
    for entry in entries:
        slot = next(s.index for s in platform.slots if s.name == entry.slot)
        staged = firmware / backend.staged[slot, entry.module]
        assert staged.read_bytes() == pynq_device.bit2bin(entry.path.read_bytes())   # pynq's own conversion
    report = backend.load(1, "threshold")
    assert report.ok and backend.resident(1) == "threshold"
    assert (manager / "flags").read_text() == "1"
    assert (manager / "firmware").read_text() == backend.staged[1, "threshold"]
    (manager / "state").write_text("write error")
    assert not backend.load(0, "conv3x3").ok and backend.resident(0) is None


def test_refuses_tampered_or_foreign_bitstreams(board_dirs):
    from runtime.backends.pynq_board import PynqBackend

    bits, firmware, manager = board_dirs
    platform = load_platform("pynq-z2")
    entries = build_all(platform, bits)
    data = bytearray(entries[0].path.read_bytes())
    data[-100] ^= 0x01
    entries[0].path.write_bytes(bytes(data))
    with pytest.raises(BitstreamError, match="SHA-256 differs"):
        PynqBackend(platform, bits, firmware_dir=firmware, fpga_manager=manager)
    other = bits.parent / "zcu"
    build_all(load_platform("zcu104"), other)
    with pytest.raises(BitstreamError, match="built for part"):
        PynqBackend(platform, other, firmware_dir=firmware, fpga_manager=manager)

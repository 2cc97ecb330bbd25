"""The pynq backend against the real pynq package (board extra, numpy 1.x): partial loads with the
FPGA manager and firmware folders pointed at a temporary directory; frames through stand-ins for
the shell overlay, its MMIO block and DMA that decode the route registers and answer with the
numpy goldens, so the routing, the buffer handling and the timing are what is checked."""

from __future__ import annotations

import numpy as np
import pytest
from fpgashare.backends.shell_map import REG_CYCLES_HI, REG_CYCLES_LO, REG_ROUTE_OUT, ROUTE_ENABLE, slot_reg
from fpgashare.backends.simrun import resolve_chain
from fpgashare.bitstream.registry import build_all
from fpgashare.catalogue.platform import load_platform
from fpgashare.catalogue.vision_ref import chain_reference
from fpgashare.catalogue.vision_timing import chain_cycles
from fpgashare.errors import BitstreamError, FpgashareError

pynq_device = pytest.importorskip("pynq.pl_server.embedded_device", reason="needs the board extra (pynq)")

pytestmark = pytest.mark.board


def test_stages_once_and_loads_with_two_sysfs_writes(board_dirs):
    from fpgashare.backends.pynq_board import PynqBackend

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
    (manager / "firmware").unlink()
    (manager / "firmware").mkdir()          # the write fails, as the kernel's does for a refused load
    report = backend.start_load(0, "threshold").report()
    assert not report.ok and backend.resident(0) is None


def test_refuses_tampered_or_foreign_bitstreams(board_dirs):
    from fpgashare.backends.pynq_board import PynqBackend

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


class Buffer(np.ndarray):
    """Stands in for pynq's PynqBuffer: a numpy array that counts cache maintenance calls."""

    def __new__(cls, shape, dtype):
        buf = np.zeros(shape, dtype).view(cls)
        buf.calls = []
        return buf

    def __array_finalize__(self, obj):
        self.calls = getattr(obj, "calls", [])

    def flush(self):
        self.calls.append("flush")

    def invalidate(self):
        self.calls.append("invalidate")

    def freebuffer(self):
        self.calls.append("free")


class FakeShell:
    """The shell as the DMA sees it: MMIO words, a route decoded from them, a cycle counter."""

    def __init__(self, platform, stages_by_slot):
        """``stages_by_slot``: slot -> the stage its module runs (a dict, or a callable)."""
        self.platform = platform
        self.stage_of = stages_by_slot if callable(stages_by_slot) else stages_by_slot.__getitem__
        self.words: dict[int, int] = {}
        self.cycles = 1000

    # pynq.MMIO's interface
    def read(self, offset):
        word = {4 * REG_CYCLES_LO: self.cycles & 0xFFFFFFFF, 4 * REG_CYCLES_HI: self.cycles >> 32}
        return word.get(offset, self.words.get(offset, 0))

    def write(self, offset, value):
        self.words[offset] = value

    def chain(self):
        """Slots in stream order, from the route registers (0 = the DMA's input)."""
        order, source = [], 0
        while True:
            nxt = [k for k in range(len(self.platform.slots))
                   if self.words.get(4 * slot_reg(k, 1)) == ROUTE_ENABLE | source]
            if not nxt:
                break
            order.append(nxt[0])
            source = nxt[0] + 1
        assert self.words[4 * REG_ROUTE_OUT] == ROUTE_ENABLE | source, "output not routed from the last slot"
        return order


class FakeDma:
    """An AXI DMA into the shell's stream, decoding beats as the shell's RTL reads them (README,
    "Pixels per clock"): at NPPC 1 a pixel per 32-bit word; at 4 beats of ``stream_words`` words, a
    gray frame packed four pixels in the low word, a multi-channel frame a pixel per word."""

    def __init__(self, shell, shape=None, channels=1):
        self.shell, self.sink = shell, None
        self.shape, self.channels = shape, channels
        self.sendchannel, self.recvchannel = self.Channel(self, "send"), self.Channel(self, "recv")
        self.waits: list[str] = []       # channels waited on, in order

    class Channel:
        def __init__(self, dma, role):
            self.dma, self.role = dma, role

        def transfer(self, buffer):
            if self.role == "recv":
                self.dma.sink = buffer
                return
            assert self.dma.sink is not None, "receive channel must be armed before sending"
            shell, dma = self.dma.shell, self.dma
            stages = [shell.stage_of(s) for s in shell.chain()]
            rows, cols = dma.shape or FRAME_SHAPE
            nppc, width = shell.platform.pixels_per_clock, shell.platform.stream_words
            beats = -(-cols // nppc)
            words = np.asarray(buffer, dtype=np.uint32).reshape(rows, beats, width)
            if dma.channels > 1:           # pixel k of a beat in its word k, channel c in byte c
                lanes = words.reshape(rows, beats * nppc)[:, :cols]
                pixels = np.stack([(lanes >> (8 * c)) & 0xFF for c in range(dma.channels)], -1).astype(np.uint8)
            else:                          # four gray pixels packed in the beat's low word (one at NPPC 1)
                low = words[:, :, 0]
                pixels = np.stack([(low >> (8 * k)) & 0xFF for k in range(nppc)], -1).reshape(rows, -1)[:, :cols]
                pixels = pixels.astype(np.uint8)
            out = chain_reference(stages, pixels)
            out_rows, out_cols = out.shape
            out_beats = -(-out_cols // nppc)
            packed = np.zeros((out_rows, out_beats * nppc), np.uint32)
            packed[:, :out_cols] = out
            sink = np.zeros((out_rows, out_beats, width), np.uint32)
            sink[:, :, 0] = sum(packed.reshape(out_rows, out_beats, nppc)[:, :, k] << (8 * k) for k in range(nppc))
            dma.sink[:] = sink.reshape(-1)
            shell.cycles += chain_cycles(stages, rows, cols, nppc)

        def wait(self):
            self.dma.waits.append(self.role)


class FakeOverlay:
    def __init__(self, shell, **dma):
        self.ip_dict = {"shell_ctrl": {"phys_addr": 0x43C0_0000, "addr_range": 0x10000}, "axi_dma_0": {}}
        self.axi_dma_0 = FakeDma(shell, **dma)


FRAME_SHAPE = (48, 64)


def test_frames_go_through_mmio_routing_and_dma_buffers(board_dirs):
    from fpgashare.backends.pynq_board import PynqBackend

    bits, firmware, manager = board_dirs
    platform = load_platform("pynq-z2")
    build_all(platform, bits)
    stages = resolve_chain(["gauss3x3", "threshold"], {})
    shell = FakeShell(platform, {1: stages[0], 0: stages[1]})
    allocated = []

    def allocate(shape, dtype):
        allocated.append(shape)
        return Buffer(shape, dtype)

    backend = PynqBackend(platform, bits, firmware_dir=firmware, fpga_manager=manager,
                          overlay=FakeOverlay(shell), mmio_factory=lambda addr, size: shell, allocate=allocate)
    assert backend.load(1, "conv3x3").ok and backend.load(0, "threshold").ok
    frame = np.random.default_rng(3).integers(0, 256, FRAME_SHAPE, dtype=np.uint8)
    for _ in range(2):
        report = backend.run_frame([1, 0], stages, frame)
        assert np.array_equal(report.output, chain_reference(stages, frame))     # OpenCV's answer
        assert report.cycles == chain_cycles(stages, *FRAME_SHAPE)
        assert report.seconds == pytest.approx(report.cycles / platform.fabric_clock_hz)
    assert shell.chain() == [1, 0]
    assert allocated == [(FRAME_SHAPE[0] * FRAME_SHAPE[1],)] * 2          # in and out, once each
    source, sink = backend._buffers.values()
    assert source.calls == ["flush", "flush"] and sink.calls == ["invalidate", "invalidate"]
    backend.close()
    assert source.calls[-1] == "free" and sink.calls[-1] == "free"



@pytest.fixture(scope="module")
def x4_bits(tmp_path_factory):
    """zcu104-x4's partials, built once for the module (56 of 1 MB)."""
    bits = tmp_path_factory.mktemp("x4_bits")
    build_all(load_platform("zcu104-x4"), bits)
    return bits


@pytest.mark.parametrize("chain,channels", [(["rgb2gray", "threshold"], 3), (["absdiff", "erode3x3"], 2),
                                            (["gauss3x3", "downscale2x"], 1)])
def test_frames_at_four_pixels_per_clock_go_as_wide_beats(board_dirs, x4_bits, chain, channels):
    """zcu104-x4: the DMA buffers hold rows of whole 128-bit beats (a 46-pixel row: 12 beats of four
    words), a multi-channel pixel per word, gray packed in the low word; the output is OpenCV's."""
    from fpgashare.backends.pynq_board import PynqBackend

    _, firmware, manager = board_dirs
    bits = x4_bits
    platform = load_platform("zcu104-x4")
    stages = resolve_chain(chain, {})
    shell = FakeShell(platform, {0: stages[0], 1: stages[1]})
    shape = (30, 46)
    allocated = []

    def allocate(shape, dtype):
        allocated.append(shape)
        return Buffer(shape, dtype)

    backend = PynqBackend(platform, bits, firmware_dir=firmware, fpga_manager=manager,
                          overlay=FakeOverlay(shell, shape=shape, channels=channels),
                          mmio_factory=lambda addr, size: shell, allocate=allocate)
    assert backend.load(0, stages[0].kind.name).ok and backend.load(1, stages[1].kind.name).ok
    rng = np.random.default_rng(len(chain) + channels)
    frame = rng.integers(0, 256, (*shape, channels) if channels > 1 else shape, dtype=np.uint8)
    report = backend.run_frame([0, 1], stages, frame)
    assert np.array_equal(report.output, chain_reference(stages, frame))
    assert report.cycles == chain_cycles(stages, *shape, 4)
    out_rows, out_cols = stages[-1].kind.output_shape(*shape)
    assert allocated == [(shape[0] * 12 * 4,), (out_rows * -(-out_cols // 4) * 4,)]
    backend.close()

def test_a_load_runs_on_the_port_thread_while_frames_stream(board_dirs):
    """The kernel writes one slot while frames stream through another: start_load returns at once
    and a frame runs while the load's firmware write still waits. The stand-in FPGA manager's
    firmware attribute is a named pipe, whose writer blocks until the test reads it, as the
    kernel's write blocks until the slot is written."""
    import os

    from fpgashare.backends.pynq_board import PynqBackend

    bits, firmware, manager = board_dirs
    platform = load_platform("pynq-z2")
    build_all(platform, bits)
    stages = resolve_chain(["threshold"], {})
    shell = FakeShell(platform, {0: stages[0]})
    backend = PynqBackend(platform, bits, firmware_dir=firmware, fpga_manager=manager,
                          overlay=FakeOverlay(shell), mmio_factory=lambda addr, size: shell, allocate=Buffer)
    assert backend.load(0, "threshold").ok
    (manager / "firmware").unlink()
    os.mkfifo(manager / "firmware")
    pending = backend.start_load(1, "conv3x3")
    taken = None
    try:
        assert backend.resident(1) is None                  # blank while it is written
        frame = np.random.default_rng(5).integers(0, 256, FRAME_SHAPE, dtype=np.uint8)
        out = backend.run_frame([0], stages, frame).output  # the fabric works meanwhile
        assert np.array_equal(out, chain_reference(stages, frame))
        with open(manager / "firmware") as pipe:            # the "kernel" takes the firmware name
            taken = pipe.read()
    finally:
        if taken is None:                                   # never leave the port's thread blocked
            os.close(os.open(manager / "firmware", os.O_RDONLY | os.O_NONBLOCK))
    assert taken == backend.staged[1, "conv3x3"]
    report = pending.report()
    assert report.ok and backend.resident(1) == "conv3x3"
    assert pending.seconds == pytest.approx(platform.slot_load_seconds(1))
    backend.close()


def test_a_frame_streams_while_the_caller_goes_on(board_dirs):
    """start_frame routes, programs and starts both DMA channels, then returns; the report waits
    for the DMA. Its expected time is the chain's cycle model, which the shell's counter matches."""
    from fpgashare.backends.pynq_board import PynqBackend

    bits, firmware, manager = board_dirs
    platform = load_platform("pynq-z2")
    build_all(platform, bits)
    stages = resolve_chain(["gauss3x3", "threshold"], {})
    shell = FakeShell(platform, {1: stages[0], 0: stages[1]})
    overlay = FakeOverlay(shell)
    backend = PynqBackend(platform, bits, firmware_dir=firmware, fpga_manager=manager,
                          overlay=overlay, mmio_factory=lambda addr, size: shell, allocate=Buffer)
    assert backend.load(1, "conv3x3").ok and backend.load(0, "threshold").ok
    frame = np.random.default_rng(7).integers(0, 256, FRAME_SHAPE, dtype=np.uint8)
    pending = backend.start_frame([1, 0], stages, frame)
    assert overlay.axi_dma_0.waits == []                      # streaming, not waited for
    report = pending.report()
    assert overlay.axi_dma_0.waits == ["send", "recv"]
    assert np.array_equal(report.output, chain_reference(stages, frame))
    assert pending.seconds == pytest.approx(report.seconds)
    with pytest.raises(FpgashareError, match="slot 1 holds conv3x3, not sobel_mag"):   # checked before the DMA
        backend.start_frame([1], resolve_chain(["sobel_mag"], {}), frame)
    assert overlay.axi_dma_0.waits == ["send", "recv"]
    backend.close()


def test_frames_need_the_shell_overlay(board_dirs):
    from fpgashare.backends.pynq_board import PynqBackend

    bits, firmware, manager = board_dirs
    platform = load_platform("pynq-z2")
    build_all(platform, bits)
    backend = PynqBackend(platform, bits, firmware_dir=firmware, fpga_manager=manager)
    backend.load(0, "threshold")
    with pytest.raises(FpgashareError, match="without the shell overlay"):
        backend.run_frame([0], resolve_chain(["threshold"], {}), np.zeros(FRAME_SHAPE, np.uint8))
    overlay = FakeOverlay(FakeShell(platform, {}))
    del overlay.ip_dict["axi_dma_0"]
    with pytest.raises(FpgashareError, match="no IP 'axi_dma_0'"):
        PynqBackend(platform, bits, firmware_dir=firmware, fpga_manager=manager, overlay=overlay,
                    mmio_factory=lambda addr, size: None, allocate=Buffer)


def test_stages_relocatable_partials_in_every_slot_they_serve(board_dirs):
    import hashlib

    from fpgashare.backends.pynq_board import PynqBackend
    from fpgashare.bitstream.bitfile import parse_bit
    from fpgashare.bitstream.registry import Registry

    bits, firmware, manager = board_dirs
    platform = load_platform("pynq-z2")
    entries = build_all(platform, bits, relocatable=True)
    backend = PynqBackend(platform, bits, firmware_dir=firmware, fpga_manager=manager)
    assert len(entries) == len(platform.modules) and len(backend.staged) == 2 * len(entries)
    moved = Registry(bits, platform).bitfile(platform.slots[1], "sobel_mag").data
    assert (firmware / backend.staged[1, "sobel_mag"]).read_bytes() == pynq_device.bit2bin(moved)
    assert backend.registry.streams[1, "sobel_mag"] == hashlib.sha256(parse_bit(moved)[1]).hexdigest()
    assert backend.registry.streams[1, "sobel_mag"] != backend.registry.streams[0, "sobel_mag"]
    assert backend.load(1, "sobel_mag").ok
    assert (manager / "firmware").read_text() == backend.staged[1, "sobel_mag"]

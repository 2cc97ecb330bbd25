"""The ``pynq`` backend: the board, through the pynq package.

Partial loads take the path pynq itself uses (FPGA manager flags + a firmware file), but every
partial bitstream is checked and converted once, at start: its SHA-256 against the registry index,
its header's part against the platform, its configuration data against the slot it goes into (the
same checks as ``fpgashare bitstream inspect``; a relocatable file is relocated to each slot of its
shape first, and the relocated stream's SHA-256 recorded in ``registry.streams``), then pynq's own
``bit2bin`` writes it under the firmware folder. A reconfiguration is then two sysfs writes,
not pynq's per-call parsing, and they run on the port's own thread (``start_load``): the kernel
writes the slot while frames stream through the others, so reconfiguration overlaps processing on
the board as it does in the schedule.

Frames go the way pynq moves data: the shell overlay (``pynq.Overlay``) exposes the shell's
register block (``pynq.MMIO``) and an AXI DMA; each frame is packed into a ``pynq.allocate``
buffer (kept and reused per size), the stream switch is routed and the stages programmed through
the same register code as the simulated board (runtime/backends/shell_map.py), and the DMA sends the
frame and receives the result. ``start_frame`` returns once both DMA channels are started; the
engine polls them (``Pending.ready``) from the frame's expected end and never waits on the
loop, so the daemon serves requests and starts loads while a frame streams. Frame time
is the shell's own cycle counter, read before and after.

All paths and the pynq entry points are arguments, so tests point them at a temporary folder and
at stand-ins for the overlay, MMIO and buffers.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
from fpgashare.backends.base import Backend, FrameReport, LoadReport, Pending
from fpgashare.backends.shell_map import (
    MODULE_WINDOW,
    REG_CYCLES_HI,
    REG_CYCLES_LO,
    ShellControl,
    pack_beats,
    unpack_beats,
)
from fpgashare.bitstream.packets import PortError
from fpgashare.bitstream.registry import Registry
from fpgashare.catalogue.modules import Stage
from fpgashare.catalogue.platform import Platform
from fpgashare.catalogue.vision_timing import chain_cycles
from fpgashare.errors import FpgashareError, FrameError

log = logging.getLogger(__name__)

FIRMWARE_DIR = Path("/lib/firmware")
FPGA_MANAGER = Path("/sys/class/fpga_manager/fpga0")
PARTIAL_FLAG = "1"   # fpga_manager flags: FPGA_MGR_PARTIAL_RECONFIG


class PynqShell(ShellControl):
    """The shell's register block through a pynq MMIO object: shell word i at byte 4*i, slot k's
    module registers from byte MODULE_WINDOW*(k+1)."""

    def __init__(self, mmio, slot_count: int) -> None:
        self.mmio, self.slot_count = mmio, slot_count

    def shell_read(self, index: int) -> int:
        return int(self.mmio.read(4 * index))

    def shell_write(self, index: int, value: int) -> None:
        self.mmio.write(4 * index, value)

    def module_write(self, slot: int, index: int, value: int) -> int:
        # A write to a decoupled slot would answer SLVERR, which on Zynq is a bus error, not a
        # return code: run_frame only programs slots the backend knows hold the stage's module.
        self.mmio.write(MODULE_WINDOW * (slot + 1) + 4 * index, value)
        return 0

    def module_read(self, slot: int, index: int) -> tuple[int, int]:
        return 0, int(self.mmio.read(MODULE_WINDOW * (slot + 1) + 4 * index))

    def cycles(self) -> int:
        while True:      # the counter is 64 bits in two words; re-read if the low word wrapped
            hi = self.shell_read(REG_CYCLES_HI)
            lo = self.shell_read(REG_CYCLES_LO)
            if self.shell_read(REG_CYCLES_HI) == hi:
                return hi << 32 | lo


class PynqBackend(Backend):
    name = "pynq"
    runs_in_real_time = True    #: the fabric itself: a load or a frame takes its time on the wall clock

    def __init__(self, platform: Platform, bitstreams: str | Path, *, firmware_dir: str | Path = FIRMWARE_DIR,
                 fpga_manager: str | Path = FPGA_MANAGER, prefix: str = "fpgashare",
                 overlay: str | Path | object | None = None, shell_ip: str = "shell_ctrl",
                 dma_ip: str = "axi_dma_0", mmio_factory=None, allocate=None) -> None:
        """``overlay``: the shell overlay (a .bit path with its .hwh beside it, or an Overlay
        object); without one, loads work and frames are refused. ``shell_ip``/``dma_ip`` name the
        register block and the DMA in the overlay; ``mmio_factory``/``allocate`` default to pynq's."""
        super().__init__(platform)
        try:
            import pynq
            from pynq.pl_server.embedded_device import bit2bin
        except ImportError:
            raise FpgashareError("the pynq backend needs the pynq package: install 'fpgashare[board]'") from None
        self.firmware_dir, self.manager = Path(firmware_dir), Path(fpga_manager)
        for attribute in ("flags", "firmware"):
            if not (self.manager / attribute).exists():
                raise FpgashareError(f"{self.manager / attribute} does not exist: no FPGA manager at {self.manager}")
        self.staged: dict[tuple[int, str], str] = {}
        self._words: dict[tuple[int, str], int] = {}
        # One port, one load at a time: its sysfs writes block in the kernel, off the caller's thread.
        self._port = ThreadPoolExecutor(max_workers=1, thread_name_prefix="fpgashare-port")
        # The shell goes in first (a full bitstream); the partials come after, into its slots.
        self.overlay = pynq.Overlay(str(overlay)) if isinstance(overlay, (str, Path)) else overlay
        self.shell: PynqShell | None = None
        self.dma = None
        if self.overlay is not None:
            for ip in (shell_ip, dma_ip):
                if ip not in self.overlay.ip_dict:
                    raise FpgashareError(f"the shell overlay has no IP {ip!r} "
                                         f"(it has: {', '.join(self.overlay.ip_dict)})")
            block = self.overlay.ip_dict[shell_ip]
            self.shell = PynqShell((mmio_factory or pynq.MMIO)(block["phys_addr"], block["addr_range"]),
                                   len(platform.slots))
            self.dma = getattr(self.overlay, dma_ip)
        self._allocate = allocate or pynq.allocate
        self._buffers: dict[tuple[str, int], np.ndarray] = {}
        self._stage_all(Path(bitstreams), prefix, bit2bin)

    def _stage_all(self, folder: Path, prefix: str, bit2bin) -> None:
        # The registry checks each file's SHA-256 against the index, its part, and the stream
        # against the slot it goes into (a relocatable file once per slot it serves, relocated).
        self.registry = Registry(folder, self.platform)
        self.firmware_dir.mkdir(parents=True, exist_ok=True)
        for slot, module in self.registry.pairs():
            checked = self.registry.bitfile(slot, module)
            name = f"{prefix}_{slot.index}_{module}.bin"
            (self.firmware_dir / name).write_bytes(bit2bin(checked.data))
            self.staged[slot.index, module] = name
            self._words[slot.index, module] = checked.words
        log.info("staged %d partial bitstreams from %d files in %s", len(self.staged), self.registry.files,
                 self.firmware_dir)

    def start_load(self, slot: int, module: str) -> Pending[LoadReport]:
        """Start the two sysfs writes on the port's thread and return at once; the report comes
        when the kernel has written the slot. The expected time is the bitstream's words at the
        port's rate (the manifest's)."""
        if (slot, module) not in self.staged:
            raise FpgashareError(f"no staged partial bitstream of {module} for slot {slot}")
        self._begin_load(slot, module)
        future = self._port.submit(self._load, slot, module)

        def result() -> LoadReport:
            report = future.result()
            self._end_load(report)
            return report

        expected_s = self.platform.slot_load_seconds(slot, module)
        return Pending(expected_s, result, _ready=future.done)     # polled by the daemon, never waited on

    def _load(self, slot: int, module: str) -> LoadReport:
        name = self.staged.get((slot, module))
        if name is None:
            raise FpgashareError(f"no staged partial bitstream of {module} for slot {slot}")
        start = time.perf_counter()
        try:
            (self.manager / "flags").write_text(PARTIAL_FLAG)
            (self.manager / "firmware").write_text(name)    # the kernel loads it before this returns
        except OSError as exc:      # a refused load fails the write: a failed load, not a crash
            log.error("slot %d: the FPGA manager refused %s: %s", slot, name, exc)
            return LoadReport(slot, module, PortError.TRUNCATED, 0, time.perf_counter() - start)
        seconds = time.perf_counter() - start
        state_file = self.manager / "state"
        state = state_file.read_text().strip() if state_file.exists() else "operating"
        error = PortError.OK if state == "operating" else PortError.TRUNCATED
        if error != PortError.OK:
            log.error("slot %d: fpga_manager state after loading %s is %r", slot, module, state)
        return LoadReport(slot, module, error, self._words[slot, module], seconds)

    def _buffer(self, role: str, words: int) -> np.ndarray:
        """A DMA buffer of ``words`` 32-bit words, allocated once per role and size."""
        key = (role, words)
        if key not in self._buffers:
            self._buffers[key] = self._allocate(shape=(words,), dtype=np.uint32)
        return self._buffers[key]

    def start_frame(self, slots: Sequence[int], stages: Sequence[Stage], frame: np.ndarray,
                    want_output: bool = True, stream: int = 0) -> Pending[FrameReport]:
        """Route, program, start both DMA channels and return: the frame streams while the caller
        goes on, and ``report()`` waits for the DMA. Expected time: the chain's cycle model. The
        overlay has one DMA: ``stream`` must be 0 (``streams_carried``)."""
        if stream != 0:
            raise FpgashareError(f"stream {stream}: the pynq backend drives stream 0 only")
        self._check_chain(slots, stages)
        finish = self._start_dma(list(slots), list(stages), frame)
        cycles = chain_cycles(stages, *frame.shape[:2], self.platform.pixels_per_clock)
        expected_s = cycles / self.platform.fabric_clock_hz
        return Pending(expected_s, finish, _ready=self._dma_idle)  # polled by the daemon, never waited on

    def _dma_idle(self) -> bool:
        """Whether both DMA channels are done (pynq's channel ``idle`` flag; a register read)."""
        return bool(getattr(self.dma.sendchannel, "idle", True) and getattr(self.dma.recvchannel, "idle", True))

    def _run_frame(self, slots: list[int], stages: list[Stage], frame: np.ndarray,
                   want_output: bool) -> FrameReport:  # the hardware always produces the pixels
        return self._start_dma(slots, stages, frame)()

    def _start_dma(self, slots: list[int], stages: list[Stage], frame: np.ndarray) -> Callable[[], FrameReport]:
        """Set the chain up and start the frame; the returned call waits for it and reports."""
        if self.shell is None or self.dma is None:
            raise FpgashareError("the pynq backend was started without the shell overlay; frames need its DMA")
        self.shell.route(slots)
        shape = frame.shape[:2]
        for slot, stage in zip(slots, stages, strict=True):
            self.shell.program(slot, stage, *shape)
            shape = stage.kind.output_shape(*shape)
        # Rows of whole beats, stream_words words a beat (the shell's stream width).
        nppc, width = self.platform.pixels_per_clock, self.platform.stream_words
        words = pack_beats(frame, nppc, width)
        source = self._buffer("in", words.size)
        sink = self._buffer("out", shape[0] * -(-shape[1] // nppc) * width)
        source[:] = words
        source.flush()
        start = self.shell.cycles()
        self.dma.recvchannel.transfer(sink)        # receive first, so no output beat waits
        self.dma.sendchannel.transfer(source)

        def finish() -> FrameReport:
            self.dma.sendchannel.wait()
            self.dma.recvchannel.wait()
            cycles = self.shell.cycles() - start
            if cycles <= 0:
                raise FrameError(f"the shell cycle counter did not advance during the frame ({cycles})")
            sink.invalidate()
            return FrameReport(unpack_beats(sink, shape, nppc, width), cycles, cycles / self.platform.fabric_clock_hz,
                               self.shell.read_results(list(slots), list(stages)))

        return finish

    def close(self) -> None:
        """Let a load in flight finish, then give the DMA buffers back."""
        self._port.shutdown(wait=True)
        for buffer in self._buffers.values():
            buffer.freebuffer()
        self._buffers.clear()

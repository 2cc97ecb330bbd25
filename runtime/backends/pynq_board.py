"""The ``pynq`` backend: the board, through the pynq package.

Partial loads take the path pynq itself uses (FPGA manager flags + a firmware file), but every
partial bitstream is checked and converted once, at start: its SHA-256 against the registry index,
its header's part against the platform, its configuration data against the slot it names (the
same checks as ``fpgashare bitstream inspect``), then pynq's own ``bit2bin`` writes it under the
firmware folder. A reconfiguration is then two sysfs writes, not pynq's per-call parsing.

All paths are arguments, so tests point them at a temporary folder. Frame streaming needs the
shell overlay's DMA and is not written yet: ``run_frame`` says so rather than pretend.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from pathlib import Path

import numpy as np

from runtime.backends.base import Backend, FrameReport, LoadReport
from runtime.bitstream.packets import PortError
from runtime.bitstream.registry import INDEX_NAME, inspect_bytes
from runtime.errors import BitstreamError, FpgashareError
from runtime.modules import Stage
from runtime.platform import Platform

log = logging.getLogger(__name__)

FIRMWARE_DIR = Path("/lib/firmware")
FPGA_MANAGER = Path("/sys/class/fpga_manager/fpga0")
PARTIAL_FLAG = "1"   # fpga_manager flags: FPGA_MGR_PARTIAL_RECONFIG


class PynqBackend(Backend):
    name = "pynq"

    def __init__(self, platform: Platform, bitstreams: str | Path, *, firmware_dir: str | Path = FIRMWARE_DIR,
                 fpga_manager: str | Path = FPGA_MANAGER, prefix: str = "fpgashare") -> None:
        super().__init__(platform)
        try:
            from pynq.pl_server.embedded_device import bit2bin
        except ImportError:
            raise FpgashareError("the pynq backend needs the pynq package: install 'fpgashare[board]'") from None
        self.firmware_dir, self.manager = Path(firmware_dir), Path(fpga_manager)
        for attribute in ("flags", "firmware"):
            if not (self.manager / attribute).exists():
                raise FpgashareError(f"{self.manager / attribute} does not exist: no FPGA manager at {self.manager}")
        self.staged: dict[tuple[int, str], str] = {}
        self._words: dict[tuple[int, str], int] = {}
        self._stage_all(Path(bitstreams), prefix, bit2bin)

    def _stage_all(self, folder: Path, prefix: str, bit2bin) -> None:
        index_path = folder / INDEX_NAME
        try:
            index = json.loads(index_path.read_text())
        except FileNotFoundError:
            raise BitstreamError(f"{index_path}: no bitstream index (run fpgashare bitstream build)") from None
        except json.JSONDecodeError as exc:
            raise BitstreamError(f"{index_path}: not valid JSON: {exc}") from None
        if index.get("part") != self.platform.part:
            raise BitstreamError(f"{index_path}: built for part {index.get('part')!r}, the platform is "
                                 f"{self.platform.part}")
        self.firmware_dir.mkdir(parents=True, exist_ok=True)
        for entry in index.get("bitstreams", []):
            path = folder / entry["file"]
            data = path.read_bytes()
            if hashlib.sha256(data).hexdigest() != entry["sha256"]:
                raise BitstreamError(f"{path}: SHA-256 differs from {index_path}; refusing to load it")
            found = inspect_bytes(data, self.platform)
            if not found.verdict.ok or found.slot is None or found.module != entry["module"] \
                    or found.slot.name != entry["slot"]:
                raise BitstreamError(f"{path}: does not hold {entry['module']} for {entry['slot']}: "
                                     f"{found.verdict.message() if not found.verdict.ok else 'wrong target'}")
            name = f"{prefix}_{found.slot.index}_{entry['module']}.bin"
            (self.firmware_dir / name).write_bytes(bit2bin(data))
            self.staged[found.slot.index, entry["module"]] = name
            self._words[found.slot.index, entry["module"]] = found.verdict.words_to_desync
        log.info("staged %d partial bitstreams in %s", len(self.staged), self.firmware_dir)

    def _load(self, slot: int, module: str) -> LoadReport:
        name = self.staged.get((slot, module))
        if name is None:
            raise FpgashareError(f"no staged partial bitstream of {module} for slot {slot}")
        start = time.perf_counter()
        (self.manager / "flags").write_text(PARTIAL_FLAG)
        (self.manager / "firmware").write_text(name)    # the kernel loads it before this returns
        seconds = time.perf_counter() - start
        state_file = self.manager / "state"
        state = state_file.read_text().strip() if state_file.exists() else "operating"
        error = PortError.OK if state == "operating" else PortError.TRUNCATED
        if error != PortError.OK:
            log.error("slot %d: fpga_manager state after loading %s is %r", slot, module, state)
        return LoadReport(slot, module, error, self._words[slot, module], seconds)

    def _run_frame(self, slots: list[int], stages: list[Stage], frame: np.ndarray,
                   want_output: bool) -> FrameReport:
        raise FpgashareError("the pynq backend does not stream frames yet (the shell overlay's DMA "
                             "path is the next step); use the sim or model backend")

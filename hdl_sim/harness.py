"""The compiled bulk harness: the Verilated shell as a shared library driven through ctypes.

Built at first use per platform (its RTL parameters), cached by content hash like every build.
Data moves as numpy arrays passed by pointer; no Python runs per cycle.
"""

from __future__ import annotations

import ctypes
import logging
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
from fpgashare.hdl_sim.build import (
    HARNESS_DIR,
    RTL_DIR,
    BuildError,
    CompileOptions,
    build_lock,
    cache_root,
    compile_shared_library,
    content_key,
    format_parameter,
    rtl_headers,
    rtl_sources,
)
from fpgashare.hdl_sim.toolchain import setup_environment

log = logging.getLogger(__name__)

VERILATOR_FLAGS = ["-O3", "--x-assign", "fast", "--x-initial", "fast", "-Wno-fatal", "--noassert"]
COMPILE = CompileOptions()
#: Verilator configuration of the model. dnn_tile is the largest module and every slot holds an identical
#: copy: kept as one class rather than inlined four times, the model's C++ is a quarter smaller (a second
#: less to compile here) and simulates as fast (measured 2026-12-04 on partial loads and DNN batches).
VERILATOR_CONFIG = '`verilator_config\nno_inline -module "dnn_tile"\n'


#: Video streams shell_harness.cpp drives: stream 0's s_axis / m_axis pair, not the shell's *_more ports.
DRIVEN_STREAMS = 1


def harness_parameters(parameters: Mapping[str, int | str]) -> dict[str, int | str]:
    """A platform's shell parameters (``Platform.rtl_parameters()``) for a harness build: NUM_STREAMS
    cut to the streams the harness drives. The other streams' register slices and switch ports would
    be simulated every cycle for nothing (their inputs are tied off); stream 0 is the same logic with
    the same latency either way (tests/test_harness_streams.py compares a frame's output and cycles on
    both). Multi-stream shells are tested through cocotb (tests/hdl/test_shell_streams.py), which
    drives every stream and builds with the platform's own NUM_STREAMS."""
    out = dict(parameters)
    out["NUM_STREAMS"] = min(int(out.get("NUM_STREAMS", 1)), DRIVEN_STREAMS)
    return out


class HarnessError(RuntimeError):
    """The harness could not be built or the RTL did not respond in time."""


def build_harness(parameters: Mapping[str, int]) -> Path:
    """Build (or reuse) libshell.so for one parameter set; return its path."""
    setup_environment()
    sources = rtl_sources()
    cpp = HARNESS_DIR / "shell_harness.cpp"
    key = content_key("harness", [*sources, *rtl_headers(), cpp],
                      {"params": dict(parameters), "flags": VERILATOR_FLAGS, "config": VERILATOR_CONFIG,
                       "compile": asdict(COMPILE)})
    build_dir = cache_root() / "harness" / key
    lib = build_dir / "libshell.so"
    with build_lock(build_dir):
        if lib.exists():
            return lib
        log.info("building the RTL harness in %s (first use: about 15 s of CPU, on every core)", build_dir)
        obj = build_dir / "obj"
        config = build_dir / "shell.vlt"
        config.write_text(VERILATOR_CONFIG)
        gparams = [f"-G{k}={format_parameter(v)}" for k, v in parameters.items()]
        verilate = ["verilator", "--cc", "--top-module", "shell", "-Mdir", str(obj), f"-I{RTL_DIR}",
                    *VERILATOR_FLAGS, *gparams, str(config), *map(str, sources)]
        try:
            compile_shared_library(verilate, obj, "Vshell", [cpp], lib, COMPILE)
        except BuildError as exc:
            raise HarnessError(str(exc)) from exc
    return lib


@dataclass(frozen=True)
class RunStats:
    """What one fs_run call saw."""

    cycles: int
    sent: int
    received: int
    extra_out: int
    tlast_errors: int
    tuser_errors: int
    cfg_sent: int
    cfg_end_cycle: int
    out_end_cycle: int

    @property
    def finished(self) -> bool:
        return self.cycles >= 0


_U32P = np.ctypeslib.ndpointer(dtype=np.uint32, flags="C_CONTIGUOUS")


class ShellHarness:
    """One instance of the Verilated shell."""

    def __init__(self, parameters: Mapping[str, int]) -> None:
        self.handle = None
        self.lib = ctypes.CDLL(str(build_harness(parameters)))
        L = self.lib  # noqa: N806 - short alias for the prototypes below
        L.fs_create.restype = ctypes.c_void_p
        L.fs_destroy.argtypes = [ctypes.c_void_p]
        L.fs_reset.argtypes = [ctypes.c_void_p, ctypes.c_int]
        L.fs_cycles.argtypes = [ctypes.c_void_p]
        L.fs_cycles.restype = ctypes.c_uint64
        L.fs_idle.argtypes = [ctypes.c_void_p, ctypes.c_uint64]
        L.fs_axil_write.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_uint32, ctypes.c_int]
        L.fs_axil_write.restype = ctypes.c_int
        L.fs_axil_read.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int]
        L.fs_axil_read.restype = ctypes.c_int64
        u64 = ctypes.c_uint64
        L.fs_run.argtypes = [ctypes.c_void_p, _U32P, u64, ctypes.c_uint32, _U32P, u64, ctypes.c_uint32,
                             _U32P, u64, u64, ctypes.c_uint32, ctypes.c_uint32, ctypes.c_uint32, u64, u64,
                             np.ctypeslib.ndpointer(dtype=np.uint64, flags="C_CONTIGUOUS")]
        L.fs_run.restype = ctypes.c_int64
        self.handle = L.fs_create()
        self.reset()

    def close(self) -> None:
        if self.handle:
            self.lib.fs_destroy(self.handle)
            self.handle = None

    def __del__(self) -> None:
        self.close()

    def reset(self, cycles: int = 8) -> None:
        self.lib.fs_reset(self.handle, cycles)

    @property
    def cycles(self) -> int:
        return int(self.lib.fs_cycles(self.handle))

    def idle(self, cycles: int) -> None:
        self.lib.fs_idle(self.handle, cycles)

    def write(self, addr: int, value: int, timeout: int = 1000) -> int:
        """AXI-Lite write; returns BRESP."""
        resp = self.lib.fs_axil_write(self.handle, addr, value & 0xFFFFFFFF, timeout)
        if resp < 0:
            raise HarnessError(f"AXI-Lite write to 0x{addr:04x} got no response in {timeout} cycles")
        return resp

    def read(self, addr: int, timeout: int = 1000) -> tuple[int, int]:
        """AXI-Lite read; returns (RRESP, RDATA)."""
        value = self.lib.fs_axil_read(self.handle, addr, timeout)
        if value < 0:
            raise HarnessError(f"AXI-Lite read of 0x{addr:04x} got no response in {timeout} cycles")
        return value >> 32, value & 0xFFFFFFFF

    def run(self, pixels: np.ndarray | None = None, in_cols: int = 0, n_out: int = 0, out_cols: int = 0,
            cfg: np.ndarray | None = None, cfg_delay: int = 0, seed: int = 1, gap_pct: int = 0,
            stall_pct: int = 0, settle: int = 0, max_cycles: int = 1 << 40) -> tuple[np.ndarray, RunStats]:
        """Stream pixels through the switch and/or words into the configuration port, concurrently."""
        inp = np.ascontiguousarray(pixels if pixels is not None else np.zeros(1, np.uint32), dtype=np.uint32)
        n_in = 0 if pixels is None else inp.size
        words = np.ascontiguousarray(cfg if cfg is not None else np.zeros(1, np.uint32), dtype=np.uint32)
        n_cfg = 0 if cfg is None else words.size
        out = np.zeros(max(n_out, 1), dtype=np.uint32)
        stats = np.zeros(8, dtype=np.uint64)
        cycles = self.lib.fs_run(self.handle, inp.reshape(-1), n_in, in_cols, out, n_out, out_cols,
                                 words.reshape(-1), n_cfg, cfg_delay, seed, gap_pct, stall_pct, settle,
                                 max_cycles, stats)
        return out[:n_out], RunStats(int(cycles), *(int(s) for s in stats))

"""The compiled bulk harness: the Verilated shell as a shared library driven through ctypes.

Built at first use per platform (its RTL parameters), cached by content hash like every build.
Data moves as numpy arrays passed by pointer; no Python runs per cycle.

By default the shell is built without its modules (``RM_EXTERNAL = 1``) and each module the run may
load is a library of its own (module_models.py), attached to its slots: a slot then costs what its
loaded module costs. The configuration block is a library of its own too (``CFG_EXTERNAL = 1``,
config_model.py), run alone while a load streams in and the rest of the shell rests; so is the AXI-Lite
control path (``FABRIC_EXTERNAL = 1``, fabric_model.py), skipped while the processor's bus rests.
``external=False`` builds the shell with every module and the block inside, as before (the tests
compare the two cycle for cycle). The build itself is hdl_sim/harness_build.py.
"""

from __future__ import annotations

import ctypes
import logging
import os
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from fpgashare.hdl_sim.comb_inputs import comb_inputs
from fpgashare.hdl_sim.config_model import CONFIG_BLOCK
from fpgashare.hdl_sim.fabric_model import FABRIC
from fpgashare.hdl_sim.harness_build import (
    COMPILE,
    DRIVEN_STREAMS,
    VERILATOR_FLAGS,
    HarnessError,
    build_harness,
    harness_parameters,
)
from fpgashare.hdl_sim.harness_stats import PORT_CHANNEL, ChannelStats, RunStats
from fpgashare.hdl_sim.module_models import build_modules, module_parameters, slot_modules
from fpgashare.hdl_sim.side_model import SideModel, load_side_model

log = logging.getLogger(__name__)

#: What the harness's users import from it (the build's names they need come along).
__all__ = ["COMPILE", "DRIVEN_STREAMS", "PORT_CHANNEL", "VERILATOR_FLAGS", "ChannelStats", "HarnessError",
           "RunStats", "ShellHarness", "harness_parameters"]


_U32P = np.ctypeslib.ndpointer(dtype=np.uint32, flags="C_CONTIGUOUS")


class ShellHarness:
    """One instance of the Verilated shell.

    ``external`` (the default): the shell without its modules, and a model per module of ``modules``
    (ids; default every module a slot can hold) attached to each slot that can hold it. Loading a
    module that has no model stops the run with a HarnessError. ``fabric`` (the default, with ``external``):
    the AXI-Lite control path a model of its own too, skipped while the bus rests (fabric_model.py)."""

    def __init__(self, parameters: Mapping[str, int], modules: Iterable[int] | None = None,
                 external: bool = True, checkers: bool = True, fabric: bool = True) -> None:
        self.handle = None
        self.external = external
        outside = {"RM_EXTERNAL": 1, "CFG_EXTERNAL": 1, **({"FABRIC_EXTERNAL": 1} if fabric else {})}
        shell_parameters = {**parameters, **outside} if external else dict(parameters)
        self.lib = ctypes.CDLL(str(build_harness(shell_parameters, checkers)))
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
        L.fs_set_streams.argtypes = [ctypes.c_void_p, ctypes.c_int]
        L.fs_chan_stream.argtypes = [ctypes.c_void_p, ctypes.c_int, _U32P, u64, ctypes.c_uint32, _U32P, u64,
                                     ctypes.c_uint32, u64]
        L.fs_chan_stream.restype = ctypes.c_int
        L.fs_chan_cfg.argtypes = [ctypes.c_void_p, _U32P, u64, u64]
        L.fs_chan_cfg.restype = ctypes.c_int
        L.fs_advance.argtypes = [ctypes.c_void_p, u64]
        L.fs_advance.restype = ctypes.c_uint32
        L.fs_chan_collect.argtypes = [ctypes.c_void_p, ctypes.c_int,
                                      np.ctypeslib.ndpointer(dtype=np.uint64, flags="C_CONTIGUOUS")]
        L.fs_chan_collect.restype = ctypes.c_int
        L.fs_chan_abort.argtypes = [ctypes.c_void_p, ctypes.c_int]
        L.fs_armed.argtypes = [ctypes.c_void_p]
        L.fs_armed.restype = ctypes.c_uint32
        L.fs_beat_words.restype = ctypes.c_int
        L.fs_attach.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_void_p]
        L.fs_attach.restype = ctypes.c_int
        L.fs_fault.argtypes = [ctypes.c_void_p]
        L.fs_fault.restype = ctypes.c_uint32
        L.fs_evals.argtypes = [ctypes.c_void_p, np.ctypeslib.ndpointer(dtype=np.uint64, flags="C_CONTIGUOUS")]
        L.fs_set_whole_eval.argtypes = [ctypes.c_void_p, ctypes.c_int]
        L.fs_set_lean_exchange.argtypes = [ctypes.c_void_p, ctypes.c_int]
        L.fs_set_comb_inputs.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_uint32]
        L.fs_set_comb_inputs.restype = ctypes.c_int
        L.fs_set_fold_low.argtypes = [ctypes.c_void_p, ctypes.c_int]
        L.fs_set_fold_check.argtypes = [ctypes.c_void_p, ctypes.c_int]
        L.fs_folds.argtypes = [ctypes.c_void_p, np.ctypeslib.ndpointer(dtype=np.uint64, flags="C_CONTIGUOUS")]
        L.fs_set_cost_split.argtypes = [ctypes.c_void_p, ctypes.c_int]
        L.fs_cost_split.argtypes = [ctypes.c_void_p, np.ctypeslib.ndpointer(dtype=np.uint64, flags="C_CONTIGUOUS")]
        #: 32-bit words in a stream beat (the shell's DATA_W / 32); stream arrays are whole beats.
        self.beat_words = int(L.fs_beat_words())
        self.streams = int(parameters.get("NUM_STREAMS", 1))
        self.handle = L.fs_create()
        L.fs_set_streams(self.handle, self.streams)
        #: module ids with a model, per slot (empty when the modules are inside the shell)
        self.slot_models: dict[int, list[int]] = {}
        self._module_libs: dict[int, ctypes.CDLL] = {}
        L.fs_set_fast_load.argtypes = [ctypes.c_void_p, ctypes.c_int]
        L.fs_fast_cycles.argtypes = [ctypes.c_void_p]
        L.fs_fast_cycles.restype = ctypes.c_uint64
        L.fs_state_diff.argtypes = [ctypes.c_void_p, ctypes.c_void_p,
                                    np.ctypeslib.ndpointer(dtype=np.uint64, flags="C_CONTIGUOUS"), ctypes.c_int]
        L.fs_state_diff.restype = ctypes.c_int
        self._config_lib: ctypes.CDLL | None = None
        self._fabric_lib: ctypes.CDLL | None = None
        if external:
            self._attach(parameters, modules)
            self._config_lib = self._attach_side(CONFIG_BLOCK, parameters)
            if fabric:
                L.fs_set_fabric_rest.argtypes = [ctypes.c_void_p, ctypes.c_int]
                L.fs_fabric_evals.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
                self._fabric_lib = self._attach_side(FABRIC, parameters)
        self._buffers: dict[int, tuple[np.ndarray, np.ndarray]] = {}   # arrays the C side points into
        self.reset()

    def _attach(self, parameters: Mapping[str, int], modules: Iterable[int] | None) -> None:
        per_slot = slot_modules(parameters, modules)
        paths = build_modules({m for ids in per_slot.values() for m in ids}, module_parameters(parameters),
                              VERILATOR_FLAGS, COMPILE)
        for module_id, path in paths.items():
            lib = ctypes.CDLL(str(path))
            lib.rm_api.restype = ctypes.c_void_p
            self._module_libs[module_id] = lib
        # Each model's inputs with a combinational path to an output (its low evaluation's fold, below).
        with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:   # Yosys, once per model (cached)
            found = pool.map(lambda m: comb_inputs(m, module_parameters(parameters), VERILATOR_FLAGS, COMPILE), paths)
            comb = dict(zip(paths, found, strict=True))
        for slot, ids in per_slot.items():
            for module_id in ids:
                api = self._module_libs[module_id].rm_api()
                if self.lib.fs_attach(self.handle, slot, module_id, api):
                    raise HarnessError(f"module {module_id}'s model does not fit slot {slot} of this shell")
                self.lib.fs_set_comb_inputs(self.handle, slot, module_id, comb[module_id])
            self.slot_models[slot] = list(ids)

    def _attach_side(self, model: SideModel, parameters: Mapping[str, int]) -> ctypes.CDLL:
        """Build (or reuse) ``model``'s library for this shell and attach a model of it to this instance;
        return the library (kept loaded as long as the instance lives)."""
        lib, api = load_side_model(model, parameters, VERILATOR_FLAGS, COMPILE)
        attach = getattr(self.lib, model.attach)
        attach.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
        attach.restype = ctypes.c_int
        if attach(self.handle, api):
            raise HarnessError(f"{model.what} does not fit this shell")
        return lib

    def _check(self) -> None:
        """Raise if the run stopped on a module without a model (or a boundary that never settled)."""
        fault = int(self.lib.fs_fault(self.handle))
        if fault == 0xFFFF:
            raise HarnessError("a module's boundary did not settle: a combinational loop through the shell")
        if fault == 0xFFFE:
            raise HarnessError("a module's output moved in a low phase in which no input of its combinational "
                               "set moved (hdl_sim/comb_inputs.py): its low evaluation may not be folded")
        if fault:
            slot, module_id = (fault & 0xFF) - 1, fault >> 8
            raise HarnessError(f"slot {slot} activated module {module_id}, which this simulated board has no "
                               f"model for (it simulates {self.slot_models.get(slot, [])} there)")

    def close(self) -> None:
        if self.handle:
            self.lib.fs_destroy(self.handle)
            self.handle = None

    def __del__(self) -> None:
        self.close()

    def reset(self, cycles: int = 8) -> None:
        self.lib.fs_reset(self.handle, cycles)
        self._check()

    @property
    def cycles(self) -> int:
        return int(self.lib.fs_cycles(self.handle))

    def evaluations(self) -> tuple[int, int, int]:
        """(extra shell evaluations settling the module boundary, module model evaluations, module model
        evaluations skipped because the module was at rest) so far."""
        out = np.zeros(3, dtype=np.uint64)
        self.lib.fs_evals(self.handle, out)
        return int(out[0]), int(out[1]), int(out[2])

    def set_fast_load(self, on: bool) -> None:
        """Let the harness run the configuration block alone while a load streams in and the rest of
        the shell is at rest (``on``, the default for an external build), or evaluate the shell every
        cycle: the reference the tests hold the fast path to."""
        self.lib.fs_set_fast_load(self.handle, int(on))

    @property
    def fast_cycles(self) -> int:
        """Cycles so far in which the shell was not evaluated (the configuration block ran alone)."""
        return int(self.lib.fs_fast_cycles(self.handle))

    def set_fabric_rest(self, on: bool) -> None:
        """Skip the AXI-Lite fabric's model while it is at rest (``on``, the default for an external build),
        or evaluate it every cycle: the reference the tests hold the skip to."""
        self.lib.fs_set_fabric_rest(self.handle, int(on))

    def fabric_evaluations(self) -> tuple[int, int]:
        """(evaluations of the AXI-Lite fabric's model run, skipped at rest) so far."""
        out = np.zeros(2, dtype=np.uint64)
        self.lib.fs_fabric_evals(self.handle, out.ctypes.data)
        return int(out[0]), int(out[1])

    def state_differences(self, other: ShellHarness, limit: int = 1 << 16) -> frozenset[int]:
        """Byte offsets (up to ``limit``) where this shell's state and ``other``'s (the same build) differ,
        their configuration blocks' too (offsets with bit 40 set) and their fabrics' (bit 41). Two fresh
        instances differ in the bytes nothing writes (padding, scratch): a test that skipping the shell
        changed nothing compares against the differences of the two at their start."""
        if other.lib._name != self.lib._name:
            raise HarnessError("the two harnesses are different builds")
        out = np.zeros(limit, dtype=np.uint64)
        n = self.lib.fs_state_diff(self.handle, other.handle, out, limit)
        return frozenset(int(x) for x in out[:n])

    def set_whole_eval(self, on: bool) -> None:
        """Evaluate the shell and the module models by Verilator's whole ``eval()`` at both clock levels
        from now on (``on``), or by each level's own phases (the default, harness/eval_phases.h): the
        reference the tests hold the phases to."""
        self.lib.fs_set_whole_eval(self.handle, int(on))

    def set_lean_exchange(self, on: bool) -> None:
        """Exchange the pins between the shell and the module models the lean way (``on``, the default:
        compared field by field as they are read, and at the edge only the clock written, the inputs
        being those the model took in the low phase), or as before (a copy compared whole, every input
        written at both levels): the reference the tests hold the lean exchange to. The same pins either
        way."""
        self.lib.fs_set_lean_exchange(self.handle, int(on))

    def set_fold_low(self, on: bool) -> None:
        """Fold a module model's low evaluation into its edge's call when no input with a combinational
        path to one of its outputs (hdl_sim/comb_inputs.py) moved since its last edge (``on``, the default
        with the lean exchange), or evaluate both levels apart: the reference the tests hold the fold to."""
        self.lib.fs_set_fold_low(self.handle, int(on))

    def set_fold_check(self, on: bool) -> None:
        """Where a low evaluation could be folded, run it anyway and stop with a HarnessError if it moved
        an output (``on``): a check of the modules' combinational sets on whatever the run drives."""
        self.lib.fs_set_fold_check(self.handle, int(on))

    def folds(self) -> tuple[int, int, int]:
        """(low evaluations folded into their edge's call, folds undone within their low phase because an
        input of the set moved there, low evaluations run and checked instead of folded) so far."""
        out = np.zeros(3, dtype=np.uint64)
        self.lib.fs_folds(self.handle, out)
        return int(out[0]), int(out[1]), int(out[2])

    def set_comb_inputs(self, slot: int, module_id: int, mask: int) -> None:
        """Set module ``module_id``'s combinational inputs in ``slot`` (rm::COMB_* bits), in place of the
        set its build gave (hdl_sim/comb_inputs.py): for tests of the check."""
        if self.lib.fs_set_comb_inputs(self.handle, slot, module_id, mask):
            raise HarnessError(f"slot {slot} has no model of module {module_id}")

    def set_cost_split(self, on: bool) -> None:
        """Time every later cycle by part (``on``; from zero), or stop. A timed run evaluates the same
        models in the same order as an untimed one, slower by the fenced counter reads around each
        evaluation (harness/cost_split.h)."""
        self.lib.fs_set_cost_split(self.handle, int(on))

    def cost_split(self) -> dict[str, float]:
        """Shares of a cycle's time since ``set_cost_split(True)`` spent in the shell's evaluations, the
        module models', the configuration block's and the rest (the harness's own work), summing to 1,
        over the cycles that ran undisturbed, with the counter reads' own cost taken out; all 0 before
        any cycle ran. An estimate: the parts are timed fenced, so they do not overlap as they do in an
        untimed run."""
        out = np.zeros(6, dtype=np.uint64)
        self.lib.fs_cost_split(self.handle, out)
        shell, modules, block, total = (int(t) for t in out[:4])
        if total == 0:
            return dict.fromkeys(("shell", "modules", "config_block", "harness"), 0.0)
        harness = max(0, total - shell - modules - block)
        return {"shell": shell / total, "modules": modules / total, "config_block": block / total,
                "harness": harness / total}

    @property
    def cost_split_cycles(self) -> tuple[int, int]:
        """(cycles the split counted, cycles it left out because the process was descheduled in them)."""
        out = np.zeros(6, dtype=np.uint64)
        self.lib.fs_cost_split(self.handle, out)
        return int(out[4]), int(out[5])

    def idle(self, cycles: int) -> None:
        self.lib.fs_idle(self.handle, cycles)
        self._check()

    def write(self, addr: int, value: int, timeout: int = 1000) -> int:
        """AXI-Lite write; returns BRESP."""
        resp = self.lib.fs_axil_write(self.handle, addr, value & 0xFFFFFFFF, timeout)
        self._check()
        if resp < 0:
            raise HarnessError(f"AXI-Lite write to 0x{addr:04x} got no response in {timeout} cycles")
        return resp

    def read(self, addr: int, timeout: int = 1000) -> tuple[int, int]:
        """AXI-Lite read; returns (RRESP, RDATA)."""
        value = self.lib.fs_axil_read(self.handle, addr, timeout)
        self._check()
        if value < 0:
            raise HarnessError(f"AXI-Lite read of 0x{addr:04x} got no response in {timeout} cycles")
        return value >> 32, value & 0xFFFFFFFF

    def run(self, pixels: np.ndarray | None = None, in_cols: int = 0, n_out: int = 0, out_cols: int = 0,
            cfg: np.ndarray | None = None, cfg_delay: int = 0, seed: int = 1, gap_pct: int = 0,
            stall_pct: int = 0, settle: int = 0, max_cycles: int = 1 << 40) -> tuple[np.ndarray, RunStats]:
        """Stream beats through the switch and/or words into the configuration port, concurrently.
        ``pixels`` holds whole beats of ``beat_words`` words; ``n_out`` counts beats, and the output
        is ``n_out * beat_words`` words."""
        bw = self.beat_words
        inp = np.ascontiguousarray(pixels if pixels is not None else np.zeros(bw, np.uint32), dtype=np.uint32)
        n_in = 0 if pixels is None else self._beats(inp)
        words = np.ascontiguousarray(cfg if cfg is not None else np.zeros(1, np.uint32), dtype=np.uint32)
        n_cfg = 0 if cfg is None else words.size
        out = np.zeros(max(n_out, 1) * bw, dtype=np.uint32)
        stats = np.zeros(8, dtype=np.uint64)
        cycles = self.lib.fs_run(self.handle, inp.reshape(-1), n_in, in_cols, out, n_out, out_cols,
                                 words.reshape(-1), n_cfg, cfg_delay, seed, gap_pct, stall_pct, settle,
                                 max_cycles, stats)
        if cycles == -2:
            raise HarnessError("fs_run while channels are armed: stream 0 and the port are theirs")
        self._check()
        return out[:n_out * bw], RunStats(int(cycles), *(int(s) for s in stats))

    def _beats(self, words: np.ndarray) -> int:
        if words.size % self.beat_words:
            raise HarnessError(f"{words.size} words are not whole beats of {self.beat_words} words")
        return words.size // self.beat_words

    # ---- channels: work on several streams and the port in the same cycles (hdl_sim/cosim.py)
    def arm_stream(self, stream: int, words: np.ndarray, in_cols: int, n_out: int, out_cols: int,
                   settle: int = 64) -> None:
        """Arm ``stream``: ``words`` in (whole beats), ``n_out`` beats out; it runs during every later call."""
        bw = self.beat_words
        inp = np.ascontiguousarray(words if words.size else np.zeros(bw, np.uint32), dtype=np.uint32).reshape(-1)
        out = np.zeros(max(n_out, 1) * bw, dtype=np.uint32)
        if self.lib.fs_chan_stream(self.handle, stream, inp, self._beats(words), in_cols, out, n_out, out_cols,
                                   settle):
            raise HarnessError(f"stream {stream} cannot be armed: the shell has {self.streams} stream(s), "
                               "or it carries work already")
        self._buffers[stream] = (inp, out)

    def arm_port(self, words: np.ndarray, tail: int) -> None:
        """Arm the configuration port: ``words``, done ``tail`` cycles after the last one."""
        inp = np.ascontiguousarray(words, dtype=np.uint32).reshape(-1)
        if self.lib.fs_chan_cfg(self.handle, inp, inp.size, tail):
            raise HarnessError("the configuration port carries a load already")
        self._buffers[PORT_CHANNEL] = (inp, inp)

    def advance(self, until: int) -> int:
        """Run to absolute cycle ``until`` or until a channel is done; the mask of done channels
        (bit s: stream s; bit PORT_CHANNEL: the port)."""
        done = int(self.lib.fs_advance(self.handle, until))
        self._check()
        return done

    @property
    def armed(self) -> int:
        """Channels armed and not done."""
        return int(self.lib.fs_armed(self.handle))

    def abort(self, channel: int) -> None:
        """Give up on an armed channel (a timeout): its inputs go idle."""
        self.lib.fs_chan_abort(self.handle, channel)
        self._buffers.pop(channel, None)

    def collect(self, channel: int) -> tuple[np.ndarray, ChannelStats]:
        """A done channel's output words and what it saw; the channel is free again."""
        stats = np.zeros(8, dtype=np.uint64)
        if self.lib.fs_chan_collect(self.handle, channel, stats):
            raise HarnessError(f"channel {channel} is not done")
        _, out = self._buffers.pop(channel)
        return out, ChannelStats(*(int(v) for v in stats))

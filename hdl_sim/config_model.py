"""The shell's configuration block (``config_block.sv``: the configuration port, its input slice, the
cycle counter and the registers they own) as a shared library of its own, for a harness whose shell is
built with ``CFG_EXTERNAL = 1`` (see shell_harness.cpp and config_pins.h).

The harness evaluates it beside the shell every cycle, and alone while a partial load streams in with
the rest of the shell at rest: a load then costs this block's evaluation a word, not the shell's.
Built by side_model.py like every side model, cached by content hash; its key holds only the block's
sources and the shell parameters it takes.
"""

from __future__ import annotations

from fpgashare.hdl_sim.side_model import SideModel

CONFIG_BLOCK = SideModel(
    name="config_block",
    what="the configuration block's model",
    top="config_block",
    prefix="Vcfg",
    # config_block's parameters (shell.sv passes them on); the rest is the shell's
    parameters=("NUM_SLOTS", "IDCODE", "FRAME_WORDS", "SLOT_FAR_BASE", "SLOT_FRAMES", "SLOT_MODULES",
                "SLOT_FUSED_FRAMES", "SLOT_FUSED_MODULES", "SLOT_FUSED_LAST"),
    rtl=("fpgashare_pkg.sv", "sync_fifo.sv", "config_port.sv", "config_block.sv"),
    sva=("sva_handshake.sv", "sva_config_port.sv", "sva_fused_region.sv", "sva_config_block.sv", "sva_binds.sv"),
    sources=("config_model.cpp", "config_pins.h", "side_api.h", "side_model.h", "port_words.h", "eval_phases.h"),
    library="libcfg.so",
    api="cfg_api",
    attach="fs_attach_config",
)

"""The shell's AXI-Lite control path (``axil_fabric.sv``: the demultiplexer, the register file, the
route table) as a shared library of its own, for a harness whose shell is built with
``FABRIC_EXTERNAL = 1`` (see shell_harness.cpp and fabric_pins.h).

Everything it drives towards the shell comes from its flops, and it holds still while the processor's
bus is idle: the harness evaluates it while the bus moves and skips it at rest (as a module at rest),
so a streaming cycle does not pay for the control path. Built by side_model.py like every side model,
cached by content hash; its key holds only the fabric's sources and the two shell parameters it takes.
"""

from __future__ import annotations

from fpgashare.hdl_sim.side_model import SideModel

FABRIC = SideModel(
    name="axil_fabric",
    what="the AXI-Lite fabric's model",
    top="axil_fabric",
    prefix="Vfab",
    parameters=("NUM_SLOTS", "NUM_STREAMS"),   # axil_fabric's (shell.sv passes them on)
    rtl=("fpgashare_pkg.sv", "axil_demux.sv", "axil_regfile.sv", "route_table.sv", "axil_fabric.sv"),
    sva=("sva_handshake.sv", "sva_axil.sv", "sva_binds.sv"),
    sources=("fabric_model.cpp", "fabric_pins.h", "side_api.h", "side_model.h", "port_words.h", "eval_phases.h"),
    library="libfab.so",
    api="fab_api",
    attach="fs_attach_fabric",
)

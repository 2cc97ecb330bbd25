"""The board build: Vivado Tcl generated from a platform manifest (the one step that needs Vivado).

``write_flow(platform, out)`` writes a self-contained folder that ``vivado -mode batch -source
build.tcl`` turns into what a board needs: the shell overlay (``shell.bit`` with its ``shell.hwh``)
and one partial bitstream per (slot, module), ``.bit`` and ``.bin``, named as the registry names
them (``composable_pr_0__conv3x3.bit``), plus the module's relocatable name from its shape's
first slot (``conv3x3.bit``). The folder holds:

- ``settings.tcl``: part, board, slots (name, index, pblock ranges), modules and the slots each
  may go into, output names, and the RTL each synthesis reads (copied under ``rtl/``);
- ``bd.tcl``: the block design: the Zynq PS (processing_system7 or zynq_ultra_ps_e with the board
  preset), one AXI DMA per video stream into the PS's HP port, AXI-Lite from the PS to the shell
  (``shell_ctrl``, as the pynq backend names it) and the DMAs (``axi_dma_0``);
- ``rtl/fpgashare_shell_top.v``: the shell with the manifest's parameters, in Verilog (a block
  design's module reference cannot have a SystemVerilog top), ``rtl/rm_<module>.sv``: each module
  as the partition's module ``fpgashare_rm``;
- ``dfx_flow.tcl`` (hdl_sim/vivado): static synthesis with one black-box partition per slot,
  out-of-context synthesis per module, one configuration per module (the module in every slot
  that may hold it), pblocks, ``lock_design``, ``pr_verify``, bitstreams.

Vivado was not run here (none on the machine that wrote this); tests/test_vivado_flow.py runs the
Tcl in a plain Tcl interpreter with Vivado's commands recorded instead, and checks that every
slot, module, pblock and file it names exists and agrees with the manifest, and that the RTL it
reads elaborates (pyslang). Floorplans are assumptions (clock-region pblocks, same columns for
slots of one shape, as relocation needs); Vivado's DRC is the judge.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from fpgashare.bitstream.registry import file_name, relocatable_file_name
from fpgashare.bitstream.relocate import shape_groups
from fpgashare.catalogue.modules import KINDS
from fpgashare.catalogue.platform import Platform, load_platform
from fpgashare.errors import FpgashareError


@dataclass(frozen=True)
class BoardDesign:
    """What the block design needs beyond the manifest, per board."""

    board_part: str               #: Vivado board file (installed from the Xilinx board store)
    pblocks: dict[str, tuple[str, ...]]   #: slot name -> resize_pblock ranges


#: Assumptions, not checked against the device: one clock region per slot, slots of one shape over
#: the same columns (stacked vertically), so their frames match column for column.
BOARDS = {
    "pynq-z2": BoardDesign("tul.com.tw:pynq-z2:part0:1.0", {
        "composable/pr_0": ("CLOCKREGION_X1Y2:CLOCKREGION_X1Y2",),
        "composable/pr_1": ("CLOCKREGION_X1Y1:CLOCKREGION_X1Y1",),
    }),
    "zcu104": BoardDesign("xilinx.com:zcu104:part0:1.1", {
        "shell/rp_0": ("CLOCKREGION_X3Y0:CLOCKREGION_X3Y0",),
        "shell/rp_1": ("CLOCKREGION_X3Y1:CLOCKREGION_X3Y1",),
        "shell/rp_2": ("CLOCKREGION_X3Y2:CLOCKREGION_X3Y2",),
        "shell/rp_3": ("CLOCKREGION_X3Y3:CLOCKREGION_X3Y3",),
    }),
}

VIDEO_STREAMS = 1       #: the shell streams one video input and one output (shell.sv)
BD_NAME = "fpgashare_bd"
TEMPLATES = ("dfx_flow.tcl", "rp_slot.sv", "fpgashare_rm_bb.sv")


def _rtl_dir() -> Path:
    return Path(str(resources.files("fpgashare.hdl_sim"))) / "rtl"


def _template_dir() -> Path:
    return Path(str(resources.files("fpgashare.hdl_sim"))) / "vivado"


_MODULE_DECL = re.compile(r"^\s*(?:module|package)\s+(\w+)", re.M)
_COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)


def _modules_in(folder: Path) -> dict[str, Path]:
    found = {}
    for path in sorted(folder.glob("*.sv")):
        for name in _MODULE_DECL.findall(_COMMENTS.sub("", path.read_text())):
            found[name] = path
    return found


def rtl_closure(top: str, library: dict[str, Path]) -> list[Path]:
    """The files ``top`` needs from ``library`` (module or package name -> file): every module a
    file instantiates (``name #(`` or ``name inst (``) and every package it names (``name::``),
    transitively; the packages first (a file must come after the packages it imports), then ``top``'s."""
    order: list[Path] = []
    todo = [top]
    seen = set()
    while todo:
        name = todo.pop(0)
        if name in seen:
            continue
        seen.add(name)
        if name not in library:
            raise FpgashareError(f"RTL module {name} is instantiated but no file defines it")
        path = library[name]
        if path not in order:
            order.append(path)
        text = _COMMENTS.sub("", path.read_text())
        for other in library:
            if other != name and re.search(rf"(?<![\w.]){other}(\s*(#\s*\(|\w+\s*\()|::)", text):
                todo.append(other)
    packages = [p for p in order if p.name.endswith("_pkg.sv")]
    return packages + [p for p in order if p not in packages]


def _tcl_word(text: str) -> str:
    if re.fullmatch(r"[\w./:\-]+", text):
        return text
    if "{" in text or "}" in text or "\\" in text:
        raise FpgashareError(f"cannot quote {text!r} for Tcl")
    return "{" + text + "}"


def _tcl_list(items) -> str:
    return " ".join(_tcl_word(str(i)) for i in items)


def _shell_top(platform: Platform) -> str:
    params = platform.rtl_parameters()
    lines = [f"        .{k}({v})" for k, v in params.items()]
    more = max(platform.streams - 1, 1)   # width of the shell's *_more stream ports
    slots = len(platform.slots)           # the shell's per-slot module boundary (rm_*), unused here
    return f"""// generated by fpgashare.vivado.flow from {platform.path.name}; do not edit.
// The shell of {platform.name} for the block design: Verilog, because a module reference's top
// cannot be SystemVerilog. Active-low reset from the block design; TUSER (start of frame) marks
// the first beat of each DMA transfer. The configuration stream is unused on the board: partial
// bitstreams go through the FPGA manager (PCAP).
`timescale 1ns / 1ps
module fpgashare_shell_top (
    (* X_INTERFACE_PARAMETER = "ASSOCIATED_BUSIF s_axil:s_axis:m_axis, ASSOCIATED_RESET resetn" *)
    input  wire        clk,
    input  wire        resetn,
    input  wire [15:0] s_axil_awaddr,
    input  wire        s_axil_awvalid,
    output wire        s_axil_awready,
    input  wire [31:0] s_axil_wdata,
    input  wire [3:0]  s_axil_wstrb,
    input  wire        s_axil_wvalid,
    output wire        s_axil_wready,
    output wire [1:0]  s_axil_bresp,
    output wire        s_axil_bvalid,
    input  wire        s_axil_bready,
    input  wire [15:0] s_axil_araddr,
    input  wire        s_axil_arvalid,
    output wire        s_axil_arready,
    output wire [31:0] s_axil_rdata,
    output wire [1:0]  s_axil_rresp,
    output wire        s_axil_rvalid,
    input  wire        s_axil_rready,
    input  wire [31:0] s_axis_tdata,
    input  wire        s_axis_tvalid,
    output wire        s_axis_tready,
    input  wire        s_axis_tlast,
    output wire [31:0] m_axis_tdata,
    output wire        m_axis_tvalid,
    input  wire        m_axis_tready,
    output wire        m_axis_tlast
);
    reg first_beat;
    always @(posedge clk) begin
        if (!resetn) first_beat <= 1'b1;
        else if (s_axis_tvalid && s_axis_tready) first_beat <= s_axis_tlast;
    end
    wire m_axis_tuser_unused, cfg_tready_unused;
    // Streams 1.. of the shell: no DMA of theirs in this block design yet, so tied off.
    wire [{more - 1}:0] more_tready_unused, more_tvalid_unused, more_tlast_unused, more_tuser_unused;
    wire [{32 * more - 1}:0] more_tdata_unused;
    wire [{32 * slots - 1}:0] rm_ctl_unused, rm_s_tdata_unused;
    wire [7:0] rm_awaddr_unused, rm_araddr_unused;
    wire [31:0] rm_wdata_unused;
    wire [3:0] rm_wstrb_unused;
    shell #(
{(',' + chr(10)).join(lines)}
    ) u_shell (
        .clk(clk), .rst(!resetn),
        .s_axil_awaddr(s_axil_awaddr), .s_axil_awvalid(s_axil_awvalid), .s_axil_awready(s_axil_awready),
        .s_axil_wdata(s_axil_wdata), .s_axil_wstrb(s_axil_wstrb), .s_axil_wvalid(s_axil_wvalid),
        .s_axil_wready(s_axil_wready), .s_axil_bresp(s_axil_bresp), .s_axil_bvalid(s_axil_bvalid),
        .s_axil_bready(s_axil_bready), .s_axil_araddr(s_axil_araddr), .s_axil_arvalid(s_axil_arvalid),
        .s_axil_arready(s_axil_arready), .s_axil_rdata(s_axil_rdata), .s_axil_rresp(s_axil_rresp),
        .s_axil_rvalid(s_axil_rvalid), .s_axil_rready(s_axil_rready),
        .s_axis_tdata(s_axis_tdata), .s_axis_tvalid(s_axis_tvalid), .s_axis_tready(s_axis_tready),
        .s_axis_tlast(s_axis_tlast), .s_axis_tuser(first_beat),
        .m_axis_tdata(m_axis_tdata), .m_axis_tvalid(m_axis_tvalid), .m_axis_tready(m_axis_tready),
        .m_axis_tlast(m_axis_tlast), .m_axis_tuser(m_axis_tuser_unused),
        .s_axis_cfg_tdata(32'd0), .s_axis_cfg_tvalid(1'b0), .s_axis_cfg_tready(cfg_tready_unused),
        .s_axis_cfg_tlast(1'b0),
        .s_axis_more_tdata({{{32 * more}{{1'b0}}}}), .s_axis_more_tvalid({{{more}{{1'b0}}}}),
        .s_axis_more_tready(more_tready_unused), .s_axis_more_tlast({{{more}{{1'b0}}}}),
        .s_axis_more_tuser({{{more}{{1'b0}}}}), .m_axis_more_tdata(more_tdata_unused),
        .m_axis_more_tvalid(more_tvalid_unused), .m_axis_more_tready({{{more}{{1'b0}}}}),
        .m_axis_more_tlast(more_tlast_unused), .m_axis_more_tuser(more_tuser_unused),
        // the simulation's boundary for modules simulated outside the shell: unused on a board
        .rm_ctl(rm_ctl_unused), .rm_sts({{{32 * slots}{{1'b0}}}}), .rm_s_tdata(rm_s_tdata_unused),
        .rm_m_tdata({{{32 * slots}{{1'b0}}}}), .rm_rdata({{{32 * slots}{{1'b0}}}}),
        .rm_axil_awaddr(rm_awaddr_unused), .rm_axil_araddr(rm_araddr_unused), .rm_axil_wdata(rm_wdata_unused),
        .rm_axil_wstrb(rm_wstrb_unused)
    );
endmodule
"""


def _rm_wrapper(platform: Platform, module: str) -> str:
    params = platform.rtl_parameters()
    dnn = ", ".join(f".{k}({v})" for k, v in params.items() if k.startswith("DNN_"))
    return f"""// generated by fpgashare.vivado.flow from {platform.path.name}; do not edit.
// {module} (module id {KINDS[module].module_id}) as the reconfigurable module of a {platform.name} slot.
`resetall
`timescale 1ns / 1ps
`default_nettype none

/* verilator lint_off DECLFILENAME */   // every module's wrapper is the partition's module fpgashare_rm
module fpgashare_rm #(
    parameter int DATA_W = 32
) (
    `include "rm_ports.svh"
);
    rm_library #(
        .MODULE_ID({KINDS[module].module_id}), .DATA_W(DATA_W), .MAX_W({platform.max_width}),
        {dnn}
    ) u_rm (.*);
endmodule
/* verilator lint_on DECLFILENAME */

`resetall
"""


def _bd_tcl(platform: Platform) -> str:
    mhz = platform.fabric_clock_hz / 1e6
    if platform.family == "zynq7000":
        ps = f"""    set ps [create_bd_cell -type ip -vlnv xilinx.com:ip:processing_system7 ps]
    apply_bd_automation -rule xilinx.com:bd_rule:processing_system7 \\
        -config {{make_external "FIXED_IO, DDR" apply_board_preset "1"}} $ps
    set_property -dict [list CONFIG.PCW_FPGA0_PERIPHERAL_FREQMHZ {mhz:g} CONFIG.PCW_USE_M_AXI_GP0 1 \\
        CONFIG.PCW_USE_S_AXI_HP0 1] $ps
    set clk ps/FCLK_CLK0
    set clk_rstn ps/FCLK_RESET0_N
    set ctrl_master ps/M_AXI_GP0
    set mem_slave ps/S_AXI_HP0
    connect_bd_net [get_bd_pins $clk] [get_bd_pins ps/M_AXI_GP0_ACLK] [get_bd_pins ps/S_AXI_HP0_ACLK]"""
    else:
        ps = f"""    set ps [create_bd_cell -type ip -vlnv xilinx.com:ip:zynq_ultra_ps_e ps]
    apply_bd_automation -rule xilinx.com:bd_rule:zynq_ultra_ps_e -config {{apply_board_preset "1"}} $ps
    set_property -dict [list CONFIG.PSU__CRL_APB__PL0_REF_CTRL__FREQMHZ {mhz:g} CONFIG.PSU__USE__M_AXI_GP0 1 \\
        CONFIG.PSU__USE__M_AXI_GP1 0 CONFIG.PSU__USE__M_AXI_GP2 0 CONFIG.PSU__USE__S_AXI_GP2 1] $ps
    set clk ps/pl_clk0
    set clk_rstn ps/pl_resetn0
    set ctrl_master ps/M_AXI_HPM0_FPD
    set mem_slave ps/S_AXI_HP0_FPD
    connect_bd_net [get_bd_pins $clk] [get_bd_pins ps/maxihpm0_fpd_aclk] [get_bd_pins ps/saxihp0_fpd_aclk]"""
    return f"""# generated by fpgashare.vivado.flow from {platform.path.name}; do not edit.
# The block design of {platform.name}: the PS, the shell (module reference shell_ctrl), one AXI DMA per
# video stream (axi_dma_<i>, simple mode) between the PS's HP port and the shell's streams.
proc fs_create_bd {{}} {{
    global fs_bd fs_video_streams
    create_bd_design $fs_bd
{ps}
    set rst [create_bd_cell -type ip -vlnv xilinx.com:ip:proc_sys_reset rst_fabric]
    connect_bd_net [get_bd_pins $clk] [get_bd_pins rst_fabric/slowest_sync_clk]
    connect_bd_net [get_bd_pins $clk_rstn] [get_bd_pins rst_fabric/ext_reset_in]
    set shell [create_bd_cell -type module -reference fpgashare_shell_top shell_ctrl]
    connect_bd_net [get_bd_pins $clk] [get_bd_pins shell_ctrl/clk]
    connect_bd_net [get_bd_pins rst_fabric/peripheral_aresetn] [get_bd_pins shell_ctrl/resetn]
    set ctrl [create_bd_cell -type ip -vlnv xilinx.com:ip:smartconnect ctrl_ic]
    set_property -dict [list CONFIG.NUM_SI 1 CONFIG.NUM_MI [expr {{1 + $fs_video_streams}}]] $ctrl
    set mem [create_bd_cell -type ip -vlnv xilinx.com:ip:smartconnect mem_ic]
    set_property -dict [list CONFIG.NUM_SI [expr {{2 * $fs_video_streams}}] CONFIG.NUM_MI 1] $mem
    foreach ic {{ctrl_ic mem_ic}} {{
        connect_bd_net [get_bd_pins $clk] [get_bd_pins $ic/aclk]
        connect_bd_net [get_bd_pins rst_fabric/peripheral_aresetn] [get_bd_pins $ic/aresetn]
    }}
    connect_bd_intf_net [get_bd_intf_pins $ctrl_master] [get_bd_intf_pins ctrl_ic/S00_AXI]
    connect_bd_intf_net [get_bd_intf_pins ctrl_ic/M00_AXI] [get_bd_intf_pins shell_ctrl/s_axil]
    connect_bd_intf_net [get_bd_intf_pins mem_ic/M00_AXI] [get_bd_intf_pins $mem_slave]
    for {{set i 0}} {{$i < $fs_video_streams}} {{incr i}} {{
        set dma [create_bd_cell -type ip -vlnv xilinx.com:ip:axi_dma axi_dma_$i]
        set_property -dict [list CONFIG.c_include_sg 0 CONFIG.c_sg_length_width 26 \\
            CONFIG.c_m_axi_mm2s_data_width 32 CONFIG.c_m_axis_mm2s_tdata_width 32 \\
            CONFIG.c_m_axi_s2mm_data_width 32 CONFIG.c_s_axis_s2mm_tdata_width 32] $dma
        foreach pin {{s_axi_lite_aclk m_axi_mm2s_aclk m_axi_s2mm_aclk}} {{
            connect_bd_net [get_bd_pins $clk] [get_bd_pins axi_dma_$i/$pin]
        }}
        connect_bd_net [get_bd_pins rst_fabric/peripheral_aresetn] [get_bd_pins axi_dma_$i/axi_resetn]
        connect_bd_intf_net [get_bd_intf_pins ctrl_ic/M0[expr {{$i + 1}}]_AXI] [get_bd_intf_pins axi_dma_$i/S_AXI_LITE]
        connect_bd_intf_net [get_bd_intf_pins axi_dma_$i/M_AXI_MM2S] [get_bd_intf_pins mem_ic/S0[expr {{2 * $i}}]_AXI]
        connect_bd_intf_net [get_bd_intf_pins axi_dma_$i/M_AXI_S2MM] \\
            [get_bd_intf_pins mem_ic/S0[expr {{2 * $i + 1}}]_AXI]
        connect_bd_intf_net [get_bd_intf_pins axi_dma_$i/M_AXIS_MM2S] [get_bd_intf_pins shell_ctrl/s_axis]
        connect_bd_intf_net [get_bd_intf_pins shell_ctrl/m_axis] [get_bd_intf_pins axi_dma_$i/S_AXIS_S2MM]
    }}
    assign_bd_address
    set_property range 64K [get_bd_addr_segs -of_objects [get_bd_addr_spaces -of_objects [get_bd_cells ps]] \\
        -filter {{NAME =~ "*shell_ctrl*"}}]
    validate_bd_design
    save_bd_design
}}
"""


def _settings_tcl(platform: Platform, static: list[str], rms: dict[str, list[str]]) -> str:
    board = BOARDS[platform.name]
    slots = [f"{{{_tcl_list([s.name, s.index, 'pblock_' + s.name.replace('/', '_')])}}}" for s in platform.slots]
    pblocks = [f"{s.index} {{{_tcl_list(board.pblocks[s.name])}}}" for s in platform.slots]
    module_slots = [f"{m} {{{_tcl_list(s.index for s in platform.slots_for(m))}}}" for m in sorted(platform.modules)]
    natives = [f"{{{s.index} {m}}} {file_name(s, m)[:-4]}" for m in sorted(platform.modules)
               for s in platform.slots_for(m)]
    relocatable = [f"{{{g[0].index} {m}}} {relocatable_file_name(platform, m, g[0])[:-4]}"
                   for m in sorted(platform.modules) for g in shape_groups(platform, m)]
    rm_sources = [f"{m} {{{_tcl_list(files)}}}" for m, files in sorted(rms.items())]
    return f"""# generated by fpgashare.vivado.flow from {platform.path.name}; do not edit.
set fs_platform {_tcl_word(platform.name)}
set fs_part {platform.part}
set fs_board_part {board.board_part}
set fs_family {platform.family}
set fs_bd {BD_NAME}
set fs_video_streams {VIDEO_STREAMS}
# slots: name, index, pblock
set fs_slots [list {" ".join(slots)}]
set fs_pblock_ranges [dict create {" ".join(pblocks)}]
set fs_modules [list {_tcl_list(sorted(platform.modules))}]
set fs_module_slots [dict create {" ".join(module_slots)}]
# {{slot module}} -> output name (without .bit/.bin), as the registry names it
set fs_partials [dict create {" ".join(natives)}]
# {{first slot of the shape, module}} -> relocatable name
set fs_relocatable [dict create {" ".join(relocatable)}]
set fs_include_dirs [list rtl]
set fs_static_sources [list {_tcl_list(static)}]
set fs_rm_sources [dict create {" ".join(rm_sources)}]
"""


BUILD_TCL = """# generated by fpgashare.vivado.flow; run: vivado -mode batch -source build.tcl [-tclargs OUT_DIR]
set fs_here [file dirname [file normalize [info script]]]
cd $fs_here
set fs_out [expr {[llength $argv] > 0 ? [lindex $argv 0] : "out"}]
source settings.tcl
source bd.tcl
source dfx_flow.tcl
"""


def write_flow(platform: Platform, out: Path) -> dict:
    """Write the Vivado build folder for ``platform`` into ``out``; return its summary (also
    written as ``flow.json``)."""
    if platform.name not in BOARDS:
        raise FpgashareError(f"no board design for platform {platform.name!r} (known: {', '.join(BOARDS)})")
    board = BOARDS[platform.name]
    names = {s.name for s in platform.slots}
    if set(board.pblocks) != names:
        raise FpgashareError(f"the floorplan of {platform.name} names slots {sorted(board.pblocks)}, "
                             f"the manifest {sorted(names)}")
    rtl_out = out / "rtl"
    rtl_out.mkdir(parents=True, exist_ok=True)
    library = _modules_in(_rtl_dir())
    library.update(_modules_in(_template_dir()))      # the board's rp_slot and the partition black box
    top = rtl_out / "fpgashare_shell_top.v"
    top.write_text(_shell_top(platform))
    static = [top.name] + [p.name for p in rtl_closure("shell", library)]
    rms: dict[str, list[str]] = {}
    lib_rm = _modules_in(_rtl_dir())
    for module in sorted(platform.modules):
        wrapper = rtl_out / f"rm_{module}.sv"
        wrapper.write_text(_rm_wrapper(platform, module))
        rms[module] = [wrapper.name] + [p.name for p in rtl_closure("rm_library", lib_rm)]
    copied = set()
    for files in [static, *rms.values()]:
        for name in files:
            source = _template_dir() / name if (_template_dir() / name).exists() else _rtl_dir() / name
            if source.exists() and name not in copied:
                shutil.copyfile(source, rtl_out / name)
                copied.add(name)
    for header in sorted(_rtl_dir().glob("*.svh")):
        shutil.copyfile(header, rtl_out / header.name)
    shutil.copyfile(_template_dir() / "dfx_flow.tcl", out / "dfx_flow.tcl")
    (out / "settings.tcl").write_text(_settings_tcl(platform, [f"rtl/{n}" for n in static],
                                                    {m: [f"rtl/{n}" for n in f] for m, f in rms.items()}))
    (out / "bd.tcl").write_text(_bd_tcl(platform))
    (out / "build.tcl").write_text(BUILD_TCL)
    summary = {
        "platform": platform.name, "part": platform.part, "board_part": board.board_part,
        "slots": {s.name: {"index": s.index, "pblock": list(board.pblocks[s.name])} for s in platform.slots},
        "modules": {m: [s.name for s in platform.slots_for(m)] for m in sorted(platform.modules)},
        "partials": sorted(file_name(s, m) for m in platform.modules for s in platform.slots_for(m)),
        "relocatable": sorted(relocatable_file_name(platform, m, g[0]) for m in platform.modules
                              for g in shape_groups(platform, m)),
        "shell": ["shell.bit", "shell.hwh"],
        "static_sources": [f"rtl/{n}" for n in static],
        "rm_sources": {m: [f"rtl/{n}" for n in f] for m, f in rms.items()},
    }
    (out / "flow.json").write_text(json.dumps(summary, indent=2) + "\n")
    return summary


def main(argv: list[str] | None = None) -> int:
    """``python -m fpgashare.vivado.flow --platform P --out DIR``."""
    parser = argparse.ArgumentParser(prog="python -m fpgashare.vivado.flow",
                                     description="write the Vivado build (block design, DFX shell, partials)")
    parser.add_argument("--platform", required=True, help="platform manifest (TOML) or name")
    parser.add_argument("--out", required=True, help="output folder")
    args = parser.parse_args(argv)
    try:
        summary = write_flow(load_platform(args.platform), Path(args.out))
    except FpgashareError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 2
    sys.stdout.write(f"wrote the Vivado build of {summary['platform']} to {args.out}: "
                     f"vivado -mode batch -source {Path(args.out) / 'build.tcl'}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

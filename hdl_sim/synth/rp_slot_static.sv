// rp_slot (synthesis view): the static side of one reconfigurable partition, the decoupler, with
// the partition itself a black box (rm_partition_box) as a DFX static build sees it. It replaces
// hdl_sim/rtl/rp_slot.sv (the ReSim-style wrapper holding every module, for simulation only) when
// the static shell is synthesized; same module name and ports, so shell.sv is read unchanged.
// The slot's reset on load and its active-module id belong to the DFX controller on a real board.
`resetall
`timescale 1ns / 1ps
`default_nettype none

(* blackbox *)
module rm_partition_box (   // the RM port list of rm_ports.svh at the widest stream (NPPC 4: 128 bits)
    input  wire               clk,
    input  wire               rst,
    input  wire [127:0]       s_axis_tdata,
    input  wire               s_axis_tvalid,
    output wire               s_axis_tready,
    input  wire               s_axis_tlast,
    input  wire               s_axis_tuser,
    output wire [127:0]       m_axis_tdata,
    output wire               m_axis_tvalid,
    input  wire               m_axis_tready,
    output wire               m_axis_tlast,
    output wire               m_axis_tuser,
    input  wire [7:0]         s_axil_awaddr,
    input  wire               s_axil_awvalid,
    output wire               s_axil_awready,
    input  wire [31:0]        s_axil_wdata,
    input  wire [3:0]         s_axil_wstrb,
    input  wire               s_axil_wvalid,
    output wire               s_axil_wready,
    output wire [1:0]         s_axil_bresp,
    output wire               s_axil_bvalid,
    input  wire               s_axil_bready,
    input  wire [7:0]         s_axil_araddr,
    input  wire               s_axil_arvalid,
    output wire               s_axil_arready,
    output wire [31:0]        s_axil_rdata,
    output wire [1:0]         s_axil_rresp,
    output wire               s_axil_rvalid,
    input  wire               s_axil_rready
);
endmodule

module rp_slot #(
    parameter int DATA_W = 32,
    parameter int MAX_W = 1920,
    parameter int NPPC = 1,           // the modules' pixels per beat: the static side does not depend on it
    parameter logic [31:0] MODULE_MASK = 32'b0000_0000_0011_1110,
    parameter logic [31:0] SEED = 32'h1234_5678,
    parameter int DNN_P = 8,
    parameter int DNN_ACT_ENTRIES = 4096,
    parameter int DNN_W_ENTRIES = 1024,
    parameter int DNN_PG_ENTRIES = 64,
    parameter int DNN_MAX_LAYERS = 16,
    parameter int DNN_URAM = 1,            // dnn_tile memories in UltraRAM (1) or block RAM (0)
    parameter int EXTERNAL = 0              // the simulation's external-module boundary: unused here
) (
    input  wire [4:0]         active_module,
    input  wire               rm_rst,
    input  wire               decouple,
    output wire               decouple_status,
    output wire [31:0]        x_ctl,
    input  wire [31:0]        x_sts,
    output wire [DATA_W-1:0]  x_s_tdata,
    input  wire [DATA_W-1:0]  x_m_tdata,
    input  wire [31:0]        x_rdata,
    `include "rm_ports.svh"
);
    `include "rp_decoupled.svh"

    // A narrower stream (NPPC 1: 32 bits) uses the box's low bits; the rest are tied off.
    wire [127:0] box_m_tdata;
    assign rp_m_tdata = box_m_tdata[DATA_W-1:0];
    rm_partition_box u_rm (
        .clk, .rst(rst || rm_rst),
        .s_axis_tdata(128'(rp_s_tdata)), .s_axis_tvalid(rp_s_tvalid), .s_axis_tready(rp_s_tready),
        .s_axis_tlast(rp_s_tlast), .s_axis_tuser(rp_s_tuser),
        .m_axis_tdata(box_m_tdata), .m_axis_tvalid(rp_m_tvalid), .m_axis_tready(rp_m_tready),
        .m_axis_tlast(rp_m_tlast), .m_axis_tuser(rp_m_tuser),
        .s_axil_awaddr(rp_awaddr), .s_axil_awvalid(rp_awvalid), .s_axil_awready(rp_awready),
        .s_axil_wdata(rp_wdata), .s_axil_wstrb(rp_wstrb), .s_axil_wvalid(rp_wvalid),
        .s_axil_wready(rp_wready), .s_axil_bresp(rp_bresp), .s_axil_bvalid(rp_bvalid),
        .s_axil_bready(rp_bready), .s_axil_araddr(rp_araddr), .s_axil_arvalid(rp_arvalid),
        .s_axil_arready(rp_arready), .s_axil_rdata(rp_rdata), .s_axil_rresp(rp_rresp),
        .s_axil_rvalid(rp_rvalid), .s_axil_rready(rp_rready)
    );

    wire unused_slot = &{1'b0, active_module, MODULE_MASK, SEED, box_m_tdata};
    // The simulation's boundary for modules simulated outside the shell (hdl_sim/rtl/rp_slot.sv): tied off.
    assign x_ctl = '0;
    assign x_s_tdata = '0;
    wire unused_external = &{1'b0, EXTERNAL, x_sts, x_m_tdata, x_rdata};
endmodule

`resetall

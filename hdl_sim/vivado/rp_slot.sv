// rp_slot (board build): one DFX reconfigurable partition. Replaces hdl_sim/rtl/rp_slot.sv when the
// board flow (runtime/vivado/flow.py, dfx_flow.tcl) synthesizes the static shell: same module name,
// parameters and ports, but the partition is one black-box cell (fpgashare_rm) that each partial
// bitstream fills, instead of every module behind a mux (the simulation's ReSim-style wrapper).
// The dfx_decoupler stays in the static region, as PG375's decoupler would.
`resetall
`timescale 1ns / 1ps
`default_nettype none

module rp_slot #(
    parameter int DATA_W = 32,
    parameter int MAX_W = 1920,
    parameter int NPPC = 1,                 // the partials' pixels per beat (each RM is built at it)
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
    initial begin
        if (DATA_W != 32) $error("rp_slot (board): the partition's ports are 32 bits wide");
        if (NPPC != 1 && NPPC != 4) $error("rp_slot (board): NPPC must be 1 or 4");
    end

    `include "rp_decoupled.svh"

    // The reconfigurable partition: HD.RECONFIGURABLE in dfx_flow.tcl; every load resets it.
    fpgashare_rm u_rm (
        .clk, .rst(rst || rm_rst),
        .s_axis_tdata(rp_s_tdata), .s_axis_tvalid(rp_s_tvalid), .s_axis_tready(rp_s_tready),
        .s_axis_tlast(rp_s_tlast), .s_axis_tuser(rp_s_tuser),
        .m_axis_tdata(rp_m_tdata), .m_axis_tvalid(rp_m_tvalid), .m_axis_tready(rp_m_tready),
        .m_axis_tlast(rp_m_tlast), .m_axis_tuser(rp_m_tuser),
        .s_axil_awaddr(rp_awaddr), .s_axil_awvalid(rp_awvalid), .s_axil_awready(rp_awready),
        .s_axil_wdata(rp_wdata), .s_axil_wstrb(rp_wstrb), .s_axil_wvalid(rp_wvalid),
        .s_axil_wready(rp_wready), .s_axil_bresp(rp_bresp), .s_axil_bvalid(rp_bvalid),
        .s_axil_bready(rp_bready), .s_axil_araddr(rp_araddr), .s_axil_arvalid(rp_arvalid),
        .s_axil_arready(rp_arready), .s_axil_rdata(rp_rdata), .s_axil_rresp(rp_rresp),
        .s_axil_rvalid(rp_rvalid), .s_axil_rready(rp_rready)
    );

    wire unused_slot = &{1'b0, active_module, MODULE_MASK, SEED, MAX_W[0], DNN_P[0], DNN_ACT_ENTRIES[0],
                         DNN_W_ENTRIES[0], DNN_PG_ENTRIES[0], DNN_MAX_LAYERS[0], DNN_URAM[0]};
    // The simulation's boundary for modules simulated outside the shell (hdl_sim/rtl/rp_slot.sv): tied off.
    assign x_ctl = '0;
    assign x_s_tdata = '0;
    wire unused_external = &{1'b0, EXTERNAL, x_sts, x_m_tdata, x_rdata};
endmodule

`resetall

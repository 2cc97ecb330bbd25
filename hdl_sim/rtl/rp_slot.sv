// rp_slot: one reconfigurable partition, in the manner of ReSim / Intel's PR simulation wrappers.
// Every RM the slot can hold (MODULE_MASK bit = module id) is instantiated behind a mux driven by
// the configuration port's active module id; id 0 (blank, or being written) selects rm_blank's junk.
// Unselected RMs have their clock gated off, and a load resets the new one, as configuration
// would. The dfx_decoupler sits between the mux and the static side.
// Simulation only: synthesis reads hdl_sim/synth/rp_slot_static.sv in its place (the decoupler and
// the partition as a black box), and each module on its own through hdl_sim/synth/rm_partition.sv.
`resetall
`timescale 1ns / 1ps
`default_nettype none

module rp_slot #(
    parameter int DATA_W = 32,
    parameter int MAX_W = 1920,
    parameter int NPPC = 1,
    parameter logic [31:0] MODULE_MASK = 32'b0000_0000_0011_1110,
    parameter logic [31:0] SEED = 32'h1234_5678,
    parameter int DNN_P = 8,
    parameter int DNN_ACT_ENTRIES = 4096,
    parameter int DNN_W_ENTRIES = 1024,
    parameter int DNN_PG_ENTRIES = 64,
    parameter int DNN_MAX_LAYERS = 16,
    parameter int DNN_URAM = 1,            // dnn_tile memories in UltraRAM (1) or block RAM (0)
    parameter int EXTERNAL = 0
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
    localparam int NM = 32;  // module ids 0..31 (0 = blank)
    localparam bit EXT = (EXTERNAL != 0);

    // The decoupler and the partition-side nets rp_* it drives (shared by every view of the slot).
    `include "rp_decoupled.svh"

    // Per-module signals, indexed by module id (0 = the blank).
    wire [4:0] sel = active_module;
    wire [NM-1:0] i_tready, o_tvalid, o_tlast, o_tuser, l_awready, l_wready, l_bvalid, l_arready, l_rvalid;
    wire [DATA_W-1:0] o_tdata [NM];
    wire [1:0] l_bresp [NM];
    wire [1:0] l_rresp [NM];
    wire [31:0] l_rdata [NM];

    if (EXT) begin : g_mux_external
        // The blank (id 0) is here; every other id is the module outside, behind the boundary.
        wire ext = (sel != 5'd0);
        assign rp_s_tready = ext ? x_sts[0] : i_tready[0];
        assign rp_m_tdata  = ext ? x_m_tdata : o_tdata[0];
        assign rp_m_tvalid = ext ? x_sts[1] : o_tvalid[0];
        assign rp_m_tlast  = ext ? x_sts[2] : o_tlast[0];
        assign rp_m_tuser  = ext ? x_sts[3] : o_tuser[0];
        assign rp_awready  = ext ? x_sts[4] : l_awready[0];
        assign rp_wready   = ext ? x_sts[5] : l_wready[0];
        assign rp_bvalid   = ext ? x_sts[6] : l_bvalid[0];
        assign rp_arready  = ext ? x_sts[7] : l_arready[0];
        assign rp_rvalid   = ext ? x_sts[8] : l_rvalid[0];
        assign rp_bresp    = ext ? x_sts[10:9] : l_bresp[0];
        assign rp_rresp    = ext ? x_sts[12:11] : l_rresp[0];
        assign rp_rdata    = ext ? x_rdata : l_rdata[0];
        wire unused_mux = &{1'b0, i_tready[NM-1:1], o_tvalid[NM-1:1], o_tlast[NM-1:1], o_tuser[NM-1:1],
                            l_awready[NM-1:1], l_wready[NM-1:1], l_bvalid[NM-1:1], l_arready[NM-1:1],
                            l_rvalid[NM-1:1]};
    end else begin : g_mux_library
        assign rp_s_tready = i_tready[sel];
        assign rp_m_tdata  = o_tdata[sel];
        assign rp_m_tvalid = o_tvalid[sel];
        assign rp_m_tlast  = o_tlast[sel];
        assign rp_m_tuser  = o_tuser[sel];
        assign rp_awready  = l_awready[sel];
        assign rp_wready   = l_wready[sel];
        assign rp_bresp    = l_bresp[sel];
        assign rp_bvalid   = l_bvalid[sel];
        assign rp_arready  = l_arready[sel];
        assign rp_rdata    = l_rdata[sel];
        assign rp_rresp    = l_rresp[sel];
        assign rp_rvalid   = l_rvalid[sel];
    end

    for (genvar m = 0; m < NM; m++) begin : g_rm
        if (m == 0 || (!EXT && MODULE_MASK[m])) begin : g_present
            wire on = (sel == 5'(m));
            // The blank (id 0) is the junk source and never stops. Any other module runs only while
            // selected (its clock is gated off otherwise) and is reset by every load into the slot.
            wire run = (m == 0) || on || rst;
            wire rm_reset = rst || (m != 0 && rm_rst);
            wire gclk;
            clock_gate u_gate (.clk, .en(run), .gclk);
            rm_library #(
                .MODULE_ID(m), .DATA_W(DATA_W), .MAX_W(MAX_W), .NPPC(NPPC), .SEED(SEED), .DNN_P(DNN_P),
                .DNN_ACT_ENTRIES(DNN_ACT_ENTRIES), .DNN_W_ENTRIES(DNN_W_ENTRIES),
                .DNN_PG_ENTRIES(DNN_PG_ENTRIES), .DNN_MAX_LAYERS(DNN_MAX_LAYERS), .DNN_URAM(DNN_URAM)
            ) u_rm (
                .clk(gclk), .rst(rm_reset),
                .s_axis_tdata(rp_s_tdata), .s_axis_tvalid(rp_s_tvalid && on), .s_axis_tready(i_tready[m]),
                .s_axis_tlast(rp_s_tlast), .s_axis_tuser(rp_s_tuser),
                .m_axis_tdata(o_tdata[m]), .m_axis_tvalid(o_tvalid[m]), .m_axis_tready(rp_m_tready && on),
                .m_axis_tlast(o_tlast[m]), .m_axis_tuser(o_tuser[m]),
                .s_axil_awaddr(rp_awaddr), .s_axil_awvalid(rp_awvalid && on), .s_axil_awready(l_awready[m]),
                .s_axil_wdata(rp_wdata), .s_axil_wstrb(rp_wstrb), .s_axil_wvalid(rp_wvalid && on),
                .s_axil_wready(l_wready[m]), .s_axil_bresp(l_bresp[m]), .s_axil_bvalid(l_bvalid[m]),
                .s_axil_bready(rp_bready && on), .s_axil_araddr(rp_araddr), .s_axil_arvalid(rp_arvalid && on),
                .s_axil_arready(l_arready[m]), .s_axil_rdata(l_rdata[m]), .s_axil_rresp(l_rresp[m]),
                .s_axil_rvalid(l_rvalid[m]), .s_axil_rready(rp_rready && on)
            );
        end else begin : g_absent
            assign i_tready[m] = 1'b0;
            assign o_tdata[m] = '0;
            assign {o_tvalid[m], o_tlast[m], o_tuser[m]} = '0;
            assign {l_awready[m], l_wready[m], l_bvalid[m], l_arready[m], l_rvalid[m]} = '0;
            assign l_bresp[m] = 2'b00;
            assign l_rresp[m] = 2'b00;
            assign l_rdata[m] = 32'h0;
        end
    end

    // The boundary of the external modules: the static side's signals as the selected module sees them.
    if (EXT) begin : g_boundary
        assign x_ctl = {16'd0, decouple_status, rp_rready, rp_arvalid, rp_bready, rp_wvalid, rp_awvalid, rp_m_tready, rp_s_tuser,
                        rp_s_tlast, rp_s_tvalid, rst || rm_rst, sel};
        assign x_s_tdata = rp_s_tdata;
    end else begin : g_no_boundary
        assign x_ctl = '0;
        assign x_s_tdata = '0;
    end

    wire unused_slot = &{1'b0, MODULE_MASK[0], x_sts[31:13], EXT ? 1'b0 : ^{x_sts[12:0], x_m_tdata, x_rdata}};
endmodule

`resetall

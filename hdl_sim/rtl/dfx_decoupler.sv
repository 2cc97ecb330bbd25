// dfx_decoupler: isolates a reconfigurable partition from the static side, like the DFX Decoupler
// (PG375). With decouple = 1 the static side sees TVALID = TREADY = 0 on both streams, and AXI-Lite
// accesses are answered here with SLVERR instead of reaching the partition. The AXI-Lite mode only
// switches between transactions, so a response is never lost or invented mid-flight.
`resetall
`timescale 1ns / 1ps
`default_nettype none

module dfx_decoupler #(
    parameter int DATA_W = 32
) (
    input  wire               clk,
    input  wire               rst,
    input  wire               decouple,
    output wire               decouple_status,
    // static -> partition stream
    input  wire [DATA_W-1:0]  s_axis_tdata,
    input  wire               s_axis_tvalid,
    output wire               s_axis_tready,
    input  wire               s_axis_tlast,
    input  wire               s_axis_tuser,
    output wire [DATA_W-1:0]  rp_s_axis_tdata,
    output wire               rp_s_axis_tvalid,
    input  wire               rp_s_axis_tready,
    output wire               rp_s_axis_tlast,
    output wire               rp_s_axis_tuser,
    // partition -> static stream
    input  wire [DATA_W-1:0]  rp_m_axis_tdata,
    input  wire               rp_m_axis_tvalid,
    output wire               rp_m_axis_tready,
    input  wire               rp_m_axis_tlast,
    input  wire               rp_m_axis_tuser,
    output wire [DATA_W-1:0]  m_axis_tdata,
    output wire               m_axis_tvalid,
    input  wire               m_axis_tready,
    output wire               m_axis_tlast,
    output wire               m_axis_tuser,
    output wire [7:0]         rp_axil_awaddr,
    output wire               rp_axil_awvalid,
    input  wire               rp_axil_awready,
    output wire [31:0]        rp_axil_wdata,
    output wire [3:0]         rp_axil_wstrb,
    output wire               rp_axil_wvalid,
    input  wire               rp_axil_wready,
    input  wire [1:0]         rp_axil_bresp,
    input  wire               rp_axil_bvalid,
    output wire               rp_axil_bready,
    output wire [7:0]         rp_axil_araddr,
    output wire               rp_axil_arvalid,
    input  wire               rp_axil_arready,
    input  wire [31:0]        rp_axil_rdata,
    input  wire [1:0]         rp_axil_rresp,
    input  wire               rp_axil_rvalid,
    output wire               rp_axil_rready,
    // static -> partition AXI-Lite (the slave side)
    `include "axil_ports.svh"
);
    wire d = decouple;
    assign decouple_status = d;

    assign rp_s_axis_tdata  = s_axis_tdata;
    assign rp_s_axis_tvalid = s_axis_tvalid && !d;
    assign rp_s_axis_tlast  = s_axis_tlast;
    assign rp_s_axis_tuser  = s_axis_tuser;
    assign s_axis_tready    = rp_s_axis_tready && !d;

    assign m_axis_tdata     = d ? '0 : rp_m_axis_tdata;
    assign m_axis_tvalid    = rp_m_axis_tvalid && !d;
    assign m_axis_tlast     = rp_m_axis_tlast && !d;
    assign m_axis_tuser     = rp_m_axis_tuser && !d;
    assign rp_m_axis_tready = m_axis_tready && !d;

    // AXI-Lite: pending_w/r track a transaction forwarded to the partition until its response.
    logic lite_dec, pending_w, pending_r, own_b, own_r;
    always_ff @(posedge clk) begin
        if (!pending_w && !pending_r && !own_b && !own_r) lite_dec <= d;
        if (!lite_dec && rp_axil_awvalid && rp_axil_awready) pending_w <= 1'b1;
        if (pending_w && rp_axil_bvalid && s_axil_bready) pending_w <= 1'b0;
        if (!lite_dec && rp_axil_arvalid && rp_axil_arready) pending_r <= 1'b1;
        if (pending_r && rp_axil_rvalid && s_axil_rready) pending_r <= 1'b0;
        if (lite_dec && s_axil_awvalid && s_axil_wvalid && !own_b) own_b <= 1'b1;
        else if (own_b && s_axil_bready) own_b <= 1'b0;
        if (lite_dec && s_axil_arvalid && !own_r) own_r <= 1'b1;
        else if (own_r && s_axil_rready) own_r <= 1'b0;
        if (rst) begin
            lite_dec <= 1'b1;
            {pending_w, pending_r, own_b, own_r} <= '0;
        end
    end

    assign rp_axil_awaddr  = s_axil_awaddr;
    assign rp_axil_wdata   = s_axil_wdata;
    assign rp_axil_wstrb   = s_axil_wstrb;
    assign rp_axil_araddr  = s_axil_araddr;
    assign rp_axil_awvalid = s_axil_awvalid && !lite_dec;
    assign rp_axil_wvalid  = s_axil_wvalid && !lite_dec;
    assign rp_axil_arvalid = s_axil_arvalid && !lite_dec;
    assign rp_axil_bready  = s_axil_bready && !lite_dec;
    assign rp_axil_rready  = s_axil_rready && !lite_dec;

    assign s_axil_awready = lite_dec ? (s_axil_awvalid && s_axil_wvalid && !own_b) : rp_axil_awready;
    assign s_axil_wready  = lite_dec ? (s_axil_awvalid && s_axil_wvalid && !own_b) : rp_axil_wready;
    assign s_axil_bvalid  = lite_dec ? own_b : rp_axil_bvalid;
    assign s_axil_bresp   = lite_dec ? 2'b10 : rp_axil_bresp;
    assign s_axil_arready = lite_dec ? (s_axil_arvalid && !own_r) : rp_axil_arready;
    assign s_axil_rvalid  = lite_dec ? own_r : rp_axil_rvalid;
    assign s_axil_rresp   = lite_dec ? 2'b10 : rp_axil_rresp;
    assign s_axil_rdata   = lite_dec ? 32'h0 : rp_axil_rdata;
endmodule

`resetall

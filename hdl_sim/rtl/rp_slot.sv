// rp_slot: one reconfigurable partition, in the manner of ReSim / Intel's PR simulation wrappers.
// Every RM the slot can hold (MODULE_MASK bit = module id) is instantiated behind a mux driven by
// the configuration port's active module id; id 0 (blank, or being written) selects rm_blank's junk.
// Unselected RMs are held in reset, and a load resets the new one, as configuration would. The
// dfx_decoupler sits between the mux and the static side.
`resetall
`timescale 1ns / 1ps
`default_nettype none

module rp_slot #(
    parameter int DATA_W = 32,
    parameter int MAX_W = 1920,
    parameter logic [15:0] MODULE_MASK = 16'b0000_0000_0011_1110,
    parameter logic [31:0] SEED = 32'h1234_5678
) (
    input  wire               clk,
    input  wire               rst,
    input  wire [3:0]         active_module,
    input  wire               rm_rst,
    input  wire               decouple,
    output wire               decouple_status,
    input  wire [DATA_W-1:0]  s_axis_tdata,
    input  wire               s_axis_tvalid,
    output wire               s_axis_tready,
    input  wire               s_axis_tlast,
    input  wire               s_axis_tuser,
    output wire [DATA_W-1:0]  m_axis_tdata,
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
    localparam int NM = 8;   // module ids 0..7 (0 = blank)

    // Partition-side signals (inside the decoupler).
    wire [DATA_W-1:0] rp_s_tdata, rp_m_tdata;
    wire rp_s_tvalid, rp_s_tready, rp_s_tlast, rp_s_tuser;
    wire rp_m_tvalid, rp_m_tready, rp_m_tlast, rp_m_tuser;
    wire [7:0] rp_awaddr, rp_araddr;
    wire [31:0] rp_wdata, rp_rdata;
    wire [3:0] rp_wstrb;
    wire [1:0] rp_bresp, rp_rresp;
    wire rp_awvalid, rp_awready, rp_wvalid, rp_wready, rp_bvalid, rp_bready;
    wire rp_arvalid, rp_arready, rp_rvalid, rp_rready;

    dfx_decoupler #(.DATA_W(DATA_W)) u_decoupler (
        .clk, .rst, .decouple, .decouple_status,
        .s_axis_tdata, .s_axis_tvalid, .s_axis_tready, .s_axis_tlast, .s_axis_tuser,
        .rp_s_axis_tdata(rp_s_tdata), .rp_s_axis_tvalid(rp_s_tvalid), .rp_s_axis_tready(rp_s_tready),
        .rp_s_axis_tlast(rp_s_tlast), .rp_s_axis_tuser(rp_s_tuser),
        .rp_m_axis_tdata(rp_m_tdata), .rp_m_axis_tvalid(rp_m_tvalid), .rp_m_axis_tready(rp_m_tready),
        .rp_m_axis_tlast(rp_m_tlast), .rp_m_axis_tuser(rp_m_tuser),
        .m_axis_tdata, .m_axis_tvalid, .m_axis_tready, .m_axis_tlast, .m_axis_tuser,
        .s_axil_awaddr, .s_axil_awvalid, .s_axil_awready, .s_axil_wdata, .s_axil_wstrb,
        .s_axil_wvalid, .s_axil_wready, .s_axil_bresp, .s_axil_bvalid, .s_axil_bready,
        .s_axil_araddr, .s_axil_arvalid, .s_axil_arready, .s_axil_rdata, .s_axil_rresp,
        .s_axil_rvalid, .s_axil_rready,
        .rp_axil_awaddr(rp_awaddr), .rp_axil_awvalid(rp_awvalid), .rp_axil_awready(rp_awready),
        .rp_axil_wdata(rp_wdata), .rp_axil_wstrb(rp_wstrb), .rp_axil_wvalid(rp_wvalid),
        .rp_axil_wready(rp_wready), .rp_axil_bresp(rp_bresp), .rp_axil_bvalid(rp_bvalid),
        .rp_axil_bready(rp_bready), .rp_axil_araddr(rp_araddr), .rp_axil_arvalid(rp_arvalid),
        .rp_axil_arready(rp_arready), .rp_axil_rdata(rp_rdata), .rp_axil_rresp(rp_rresp),
        .rp_axil_rvalid(rp_rvalid), .rp_axil_rready(rp_rready)
    );

    // Per-module signals, indexed by module id.
    wire [3:0] sel = active_module[3] ? 4'd0 : active_module;   // ids >= 8 do not exist here
    wire [2:0] s3 = sel[2:0];
    logic [NM-1:0] rm_reset, i_tvalid, l_awvalid, l_wvalid, l_arvalid, l_bready, l_rready;
    wire [NM-1:0] i_tready, o_tvalid, o_tlast, o_tuser, l_awready, l_wready, l_bvalid, l_arready, l_rvalid;
    logic [NM-1:0] o_tready;
    wire [DATA_W-1:0] o_tdata [NM];
    wire [1:0] l_bresp [NM];
    wire [1:0] l_rresp [NM];
    wire [31:0] l_rdata [NM];

    always_comb begin
        for (int m = 0; m < NM; m++) begin
            logic on;
            on = (s3 == 3'(m));
            rm_reset[m] = rst || (on ? rm_rst : 1'b1);
            if (m == 0) rm_reset[m] = rst;   // the junk source never stops
            i_tvalid[m] = rp_s_tvalid && on;
            o_tready[m] = rp_m_tready && on;
            l_awvalid[m] = rp_awvalid && on;
            l_wvalid[m] = rp_wvalid && on;
            l_arvalid[m] = rp_arvalid && on;
            l_bready[m] = rp_bready && on;
            l_rready[m] = rp_rready && on;
        end
    end

    assign rp_s_tready = i_tready[s3];
    assign rp_m_tdata  = o_tdata[s3];
    assign rp_m_tvalid = o_tvalid[s3];
    assign rp_m_tlast  = o_tlast[s3];
    assign rp_m_tuser  = o_tuser[s3];
    assign rp_awready  = l_awready[s3];
    assign rp_wready   = l_wready[s3];
    assign rp_bresp    = l_bresp[s3];
    assign rp_bvalid   = l_bvalid[s3];
    assign rp_arready  = l_arready[s3];
    assign rp_rdata    = l_rdata[s3];
    assign rp_rresp    = l_rresp[s3];
    assign rp_rvalid   = l_rvalid[s3];

    rm_blank #(.DATA_W(DATA_W), .SEED(SEED)) u_blank (
            .clk, .rst(rm_reset[0]),
            .s_axis_tdata(rp_s_tdata), .s_axis_tvalid(i_tvalid[0]), .s_axis_tready(i_tready[0]),
            .s_axis_tlast(rp_s_tlast), .s_axis_tuser(rp_s_tuser),
            .m_axis_tdata(o_tdata[0]), .m_axis_tvalid(o_tvalid[0]), .m_axis_tready(o_tready[0]),
            .m_axis_tlast(o_tlast[0]), .m_axis_tuser(o_tuser[0]),
            .s_axil_awaddr(rp_awaddr), .s_axil_awvalid(l_awvalid[0]), .s_axil_awready(l_awready[0]),
            .s_axil_wdata(rp_wdata), .s_axil_wstrb(rp_wstrb), .s_axil_wvalid(l_wvalid[0]),
            .s_axil_wready(l_wready[0]), .s_axil_bresp(l_bresp[0]), .s_axil_bvalid(l_bvalid[0]),
            .s_axil_bready(l_bready[0]), .s_axil_araddr(rp_araddr), .s_axil_arvalid(l_arvalid[0]),
            .s_axil_arready(l_arready[0]), .s_axil_rdata(l_rdata[0]), .s_axil_rresp(l_rresp[0]),
            .s_axil_rvalid(l_rvalid[0]), .s_axil_rready(l_rready[0])
        );

    if (MODULE_MASK[1]) begin : g_conv3x3
        conv3x3 #(.DATA_W(DATA_W), .MAX_W(MAX_W)) u_rm (
            .clk, .rst(rm_reset[1]),
            .s_axis_tdata(rp_s_tdata), .s_axis_tvalid(i_tvalid[1]), .s_axis_tready(i_tready[1]),
            .s_axis_tlast(rp_s_tlast), .s_axis_tuser(rp_s_tuser),
            .m_axis_tdata(o_tdata[1]), .m_axis_tvalid(o_tvalid[1]), .m_axis_tready(o_tready[1]),
            .m_axis_tlast(o_tlast[1]), .m_axis_tuser(o_tuser[1]),
            .s_axil_awaddr(rp_awaddr), .s_axil_awvalid(l_awvalid[1]), .s_axil_awready(l_awready[1]),
            .s_axil_wdata(rp_wdata), .s_axil_wstrb(rp_wstrb), .s_axil_wvalid(l_wvalid[1]),
            .s_axil_wready(l_wready[1]), .s_axil_bresp(l_bresp[1]), .s_axil_bvalid(l_bvalid[1]),
            .s_axil_bready(l_bready[1]), .s_axil_araddr(rp_araddr), .s_axil_arvalid(l_arvalid[1]),
            .s_axil_arready(l_arready[1]), .s_axil_rdata(l_rdata[1]), .s_axil_rresp(l_rresp[1]),
            .s_axil_rvalid(l_rvalid[1]), .s_axil_rready(l_rready[1])
        );
    end else begin : g_no_conv3x3
        assign i_tready[1] = 1'b0;
        assign o_tdata[1] = '0;
        assign o_tvalid[1] = 1'b0;
        assign o_tlast[1] = 1'b0;
        assign o_tuser[1] = 1'b0;
        assign l_awready[1] = 1'b0;
        assign l_wready[1] = 1'b0;
        assign l_bresp[1] = 2'b00;
        assign l_bvalid[1] = 1'b0;
        assign l_arready[1] = 1'b0;
        assign l_rdata[1] = 32'h0;
        assign l_rresp[1] = 2'b00;
        assign l_rvalid[1] = 1'b0;
        wire unused_ctl = &{1'b0, rm_reset[1], i_tvalid[1], o_tready[1], l_awvalid[1],
                            l_wvalid[1], l_arvalid[1], l_bready[1], l_rready[1]};
    end
    if (MODULE_MASK[2]) begin : g_sobel_mag
        sobel_mag #(.DATA_W(DATA_W), .MAX_W(MAX_W)) u_rm (
            .clk, .rst(rm_reset[2]),
            .s_axis_tdata(rp_s_tdata), .s_axis_tvalid(i_tvalid[2]), .s_axis_tready(i_tready[2]),
            .s_axis_tlast(rp_s_tlast), .s_axis_tuser(rp_s_tuser),
            .m_axis_tdata(o_tdata[2]), .m_axis_tvalid(o_tvalid[2]), .m_axis_tready(o_tready[2]),
            .m_axis_tlast(o_tlast[2]), .m_axis_tuser(o_tuser[2]),
            .s_axil_awaddr(rp_awaddr), .s_axil_awvalid(l_awvalid[2]), .s_axil_awready(l_awready[2]),
            .s_axil_wdata(rp_wdata), .s_axil_wstrb(rp_wstrb), .s_axil_wvalid(l_wvalid[2]),
            .s_axil_wready(l_wready[2]), .s_axil_bresp(l_bresp[2]), .s_axil_bvalid(l_bvalid[2]),
            .s_axil_bready(l_bready[2]), .s_axil_araddr(rp_araddr), .s_axil_arvalid(l_arvalid[2]),
            .s_axil_arready(l_arready[2]), .s_axil_rdata(l_rdata[2]), .s_axil_rresp(l_rresp[2]),
            .s_axil_rvalid(l_rvalid[2]), .s_axil_rready(l_rready[2])
        );
    end else begin : g_no_sobel_mag
        assign i_tready[2] = 1'b0;
        assign o_tdata[2] = '0;
        assign o_tvalid[2] = 1'b0;
        assign o_tlast[2] = 1'b0;
        assign o_tuser[2] = 1'b0;
        assign l_awready[2] = 1'b0;
        assign l_wready[2] = 1'b0;
        assign l_bresp[2] = 2'b00;
        assign l_bvalid[2] = 1'b0;
        assign l_arready[2] = 1'b0;
        assign l_rdata[2] = 32'h0;
        assign l_rresp[2] = 2'b00;
        assign l_rvalid[2] = 1'b0;
        wire unused_ctl = &{1'b0, rm_reset[2], i_tvalid[2], o_tready[2], l_awvalid[2],
                            l_wvalid[2], l_arvalid[2], l_bready[2], l_rready[2]};
    end
    if (MODULE_MASK[3]) begin : g_threshold
        threshold #(.DATA_W(DATA_W)) u_rm (
            .clk, .rst(rm_reset[3]),
            .s_axis_tdata(rp_s_tdata), .s_axis_tvalid(i_tvalid[3]), .s_axis_tready(i_tready[3]),
            .s_axis_tlast(rp_s_tlast), .s_axis_tuser(rp_s_tuser),
            .m_axis_tdata(o_tdata[3]), .m_axis_tvalid(o_tvalid[3]), .m_axis_tready(o_tready[3]),
            .m_axis_tlast(o_tlast[3]), .m_axis_tuser(o_tuser[3]),
            .s_axil_awaddr(rp_awaddr), .s_axil_awvalid(l_awvalid[3]), .s_axil_awready(l_awready[3]),
            .s_axil_wdata(rp_wdata), .s_axil_wstrb(rp_wstrb), .s_axil_wvalid(l_wvalid[3]),
            .s_axil_wready(l_wready[3]), .s_axil_bresp(l_bresp[3]), .s_axil_bvalid(l_bvalid[3]),
            .s_axil_bready(l_bready[3]), .s_axil_araddr(rp_araddr), .s_axil_arvalid(l_arvalid[3]),
            .s_axil_arready(l_arready[3]), .s_axil_rdata(l_rdata[3]), .s_axil_rresp(l_rresp[3]),
            .s_axil_rvalid(l_rvalid[3]), .s_axil_rready(l_rready[3])
        );
    end else begin : g_no_threshold
        assign i_tready[3] = 1'b0;
        assign o_tdata[3] = '0;
        assign o_tvalid[3] = 1'b0;
        assign o_tlast[3] = 1'b0;
        assign o_tuser[3] = 1'b0;
        assign l_awready[3] = 1'b0;
        assign l_wready[3] = 1'b0;
        assign l_bresp[3] = 2'b00;
        assign l_bvalid[3] = 1'b0;
        assign l_arready[3] = 1'b0;
        assign l_rdata[3] = 32'h0;
        assign l_rresp[3] = 2'b00;
        assign l_rvalid[3] = 1'b0;
        wire unused_ctl = &{1'b0, rm_reset[3], i_tvalid[3], o_tready[3], l_awvalid[3],
                            l_wvalid[3], l_arvalid[3], l_bready[3], l_rready[3]};
    end
    if (MODULE_MASK[4]) begin : g_downscale2x
        downscale2x #(.DATA_W(DATA_W), .MAX_W(MAX_W)) u_rm (
            .clk, .rst(rm_reset[4]),
            .s_axis_tdata(rp_s_tdata), .s_axis_tvalid(i_tvalid[4]), .s_axis_tready(i_tready[4]),
            .s_axis_tlast(rp_s_tlast), .s_axis_tuser(rp_s_tuser),
            .m_axis_tdata(o_tdata[4]), .m_axis_tvalid(o_tvalid[4]), .m_axis_tready(o_tready[4]),
            .m_axis_tlast(o_tlast[4]), .m_axis_tuser(o_tuser[4]),
            .s_axil_awaddr(rp_awaddr), .s_axil_awvalid(l_awvalid[4]), .s_axil_awready(l_awready[4]),
            .s_axil_wdata(rp_wdata), .s_axil_wstrb(rp_wstrb), .s_axil_wvalid(l_wvalid[4]),
            .s_axil_wready(l_wready[4]), .s_axil_bresp(l_bresp[4]), .s_axil_bvalid(l_bvalid[4]),
            .s_axil_bready(l_bready[4]), .s_axil_araddr(rp_araddr), .s_axil_arvalid(l_arvalid[4]),
            .s_axil_arready(l_arready[4]), .s_axil_rdata(l_rdata[4]), .s_axil_rresp(l_rresp[4]),
            .s_axil_rvalid(l_rvalid[4]), .s_axil_rready(l_rready[4])
        );
    end else begin : g_no_downscale2x
        assign i_tready[4] = 1'b0;
        assign o_tdata[4] = '0;
        assign o_tvalid[4] = 1'b0;
        assign o_tlast[4] = 1'b0;
        assign o_tuser[4] = 1'b0;
        assign l_awready[4] = 1'b0;
        assign l_wready[4] = 1'b0;
        assign l_bresp[4] = 2'b00;
        assign l_bvalid[4] = 1'b0;
        assign l_arready[4] = 1'b0;
        assign l_rdata[4] = 32'h0;
        assign l_rresp[4] = 2'b00;
        assign l_rvalid[4] = 1'b0;
        wire unused_ctl = &{1'b0, rm_reset[4], i_tvalid[4], o_tready[4], l_awvalid[4],
                            l_wvalid[4], l_arvalid[4], l_bready[4], l_rready[4]};
    end
    if (MODULE_MASK[5]) begin : g_rgb2gray
        rgb2gray #(.DATA_W(DATA_W)) u_rm (
            .clk, .rst(rm_reset[5]),
            .s_axis_tdata(rp_s_tdata), .s_axis_tvalid(i_tvalid[5]), .s_axis_tready(i_tready[5]),
            .s_axis_tlast(rp_s_tlast), .s_axis_tuser(rp_s_tuser),
            .m_axis_tdata(o_tdata[5]), .m_axis_tvalid(o_tvalid[5]), .m_axis_tready(o_tready[5]),
            .m_axis_tlast(o_tlast[5]), .m_axis_tuser(o_tuser[5]),
            .s_axil_awaddr(rp_awaddr), .s_axil_awvalid(l_awvalid[5]), .s_axil_awready(l_awready[5]),
            .s_axil_wdata(rp_wdata), .s_axil_wstrb(rp_wstrb), .s_axil_wvalid(l_wvalid[5]),
            .s_axil_wready(l_wready[5]), .s_axil_bresp(l_bresp[5]), .s_axil_bvalid(l_bvalid[5]),
            .s_axil_bready(l_bready[5]), .s_axil_araddr(rp_araddr), .s_axil_arvalid(l_arvalid[5]),
            .s_axil_arready(l_arready[5]), .s_axil_rdata(l_rdata[5]), .s_axil_rresp(l_rresp[5]),
            .s_axil_rvalid(l_rvalid[5]), .s_axil_rready(l_rready[5])
        );
    end else begin : g_no_rgb2gray
        assign i_tready[5] = 1'b0;
        assign o_tdata[5] = '0;
        assign o_tvalid[5] = 1'b0;
        assign o_tlast[5] = 1'b0;
        assign o_tuser[5] = 1'b0;
        assign l_awready[5] = 1'b0;
        assign l_wready[5] = 1'b0;
        assign l_bresp[5] = 2'b00;
        assign l_bvalid[5] = 1'b0;
        assign l_arready[5] = 1'b0;
        assign l_rdata[5] = 32'h0;
        assign l_rresp[5] = 2'b00;
        assign l_rvalid[5] = 1'b0;
        wire unused_ctl = &{1'b0, rm_reset[5], i_tvalid[5], o_tready[5], l_awvalid[5],
                            l_wvalid[5], l_arvalid[5], l_bready[5], l_rready[5]};
    end

    for (genvar m = 6; m < NM; m++) begin : g_unused_ids
        assign i_tready[m] = 1'b0;
        assign o_tdata[m] = '0;
        assign o_tvalid[m] = 1'b0;
        assign o_tlast[m] = 1'b0;
        assign o_tuser[m] = 1'b0;
        assign l_awready[m] = 1'b0;
        assign l_wready[m] = 1'b0;
        assign l_bresp[m] = 2'b00;
        assign l_bvalid[m] = 1'b0;
        assign l_arready[m] = 1'b0;
        assign l_rdata[m] = 32'h0;
        assign l_rresp[m] = 2'b00;
        assign l_rvalid[m] = 1'b0;
        wire unused_ctl = &{1'b0, rm_reset[m], i_tvalid[m], o_tready[m], l_awvalid[m],
                            l_wvalid[m], l_arvalid[m], l_bready[m], l_rready[m]};
    end

    wire unused_slot = &{1'b0, sel[3], MODULE_MASK[15:6], MODULE_MASK[0]};
endmodule

`resetall

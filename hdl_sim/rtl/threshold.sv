// threshold: the per-pixel types of cv2.threshold on 8-bit input (integer thresh).
// TYPE 0 BINARY (x > T ? MAX : 0), 1 BINARY_INV (x > T ? 0 : MAX), 2 TRUNC (x > T ? T : x),
// 3 TOZERO (x > T ? x : 0), 4 TOZERO_INV (x > T ? 0 : x); other TYPE values pass x through and set
// STATUS bit1. Registers: 0 ID (RO), 1 WIDTH, 2 HEIGHT, 3 STATUS (RO), 4 FRAMES (RO; frames begun),
// 5 THRESH, 6 MAXVAL, 7 TYPE.
`resetall
`timescale 1ns / 1ps
`default_nettype none

module threshold #(
    parameter int DATA_W = 8,        // stream width; pixel k of a beat is tdata[8k+7:8k]
    parameter int NPPC = 1,          // pixels per beat
    parameter logic [15:0] MODULE_ID = 16'd3
) (
    `include "rm_ports.svh"
);
    localparam int NREGS = 8;
    localparam logic [NREGS*32-1:0] RESET_VALS =
        {32'd0, 32'd255, 32'd127, 32'd0, 32'd0, 32'd480, 32'd640, 32'd0};

    wire [NREGS*32-1:0] regs;
    logic bad_type_q;
    // .* connects clk, rst and the s_axil_* port by name.
    vision_regs #(.NREGS(NREGS), .MODULE_ID(MODULE_ID), .RESET_VALS(RESET_VALS)) u_regs (
        .*, .status({30'd0, bad_type_q, 1'b0}), .frame_tick(s_axis_tvalid && s_axis_tready && s_axis_tuser)
    );

    wire [7:0] t = regs[5*32 +: 8];
    wire [7:0] mx = regs[6*32 +: 8];
    wire [2:0] typ = regs[7*32 +: 3];
    logic [NPPC*8-1:0] y;
    always_comb begin
        for (int k = 0; k < NPPC; k++) begin
            automatic logic [7:0] x = s_axis_tdata[k*8 +: 8];
            automatic logic above = x > t;
            case (typ)
                3'd0: y[k*8 +: 8] = above ? mx : 8'd0;
                3'd1: y[k*8 +: 8] = above ? 8'd0 : mx;
                3'd2: y[k*8 +: 8] = above ? t : x;
                3'd3: y[k*8 +: 8] = above ? x : 8'd0;
                3'd4: y[k*8 +: 8] = above ? 8'd0 : x;
                default: y[k*8 +: 8] = x;
            endcase
        end
    end

    pixel_stage #(.DATA_W(DATA_W), .NPPC(NPPC)) u_out (
        .clk, .rst, .s_pixel(y), .s_valid(s_axis_tvalid), .s_ready(s_axis_tready), .s_last(s_axis_tlast),
        .s_user(s_axis_tuser), .m_tdata(m_axis_tdata), .m_tvalid(m_axis_tvalid), .m_tready(m_axis_tready),
        .m_tlast(m_axis_tlast), .m_tuser(m_axis_tuser)
    );

    always_ff @(posedge clk) begin
        if (s_axis_tvalid && s_axis_tready && typ > 3'd4) bad_type_q <= 1'b1;
        if (rst) bad_type_q <= 1'b0;
    end

    wire unused = &{1'b0, s_axis_tdata, regs};
endmodule

`resetall

// bg_update: one step of an integer running-average background, b' = b + ((x - b) >> K) with an
// arithmetic (flooring) shift, x (the frame) in tdata[7:0] and b (the background) in tdata[15:8].
// The background lives in memory between frames: the input DMA reads it beside the frame (an
// AXI4-Stream combiner makes the two-byte beat, as for absdiff) and the output, b', is written back
// over it, so the next frame reads the updated background. K = 0 copies the frame; K >= 8 keeps b.
// At NPPC > 1 a beat carries NPPC (x, b) pairs in 32-bit lanes (x in tdata[32k+7:32k], b in
// [32k+15:32k+8]) and the NPPC results leave packed, pixel k in [8k+7:8k].
// Registers: 0 ID (RO), 1 WIDTH, 2 HEIGHT, 3 STATUS (RO), 4 FRAMES (RO; frames begun), 5 K (0..15).
`resetall
`timescale 1ns / 1ps
`default_nettype none

module bg_update #(
    parameter int DATA_W = 16,       // input width; needs the two bytes (32 * NPPC at NPPC > 1)
    parameter int NPPC = 1,          // pixel pairs per beat, each in a 32-bit lane
    parameter logic [15:0] MODULE_ID = 16'd14
) (
    `include "rm_ports.svh"
);
    initial begin
        if (DATA_W < 32 * (NPPC - 1) + 16) $error("bg_update: DATA_W must hold NPPC lanes of two 8-bit pixels");
    end
    localparam int NREGS = 6;
    localparam logic [NREGS*32-1:0] RESET_VALS = {32'd4, 32'd0, 32'd0, 32'd480, 32'd640, 32'd0};

    wire [NREGS*32-1:0] regs;
    // .* connects clk, rst and the s_axil_* port by name.
    vision_regs #(.NREGS(NREGS), .MODULE_ID(MODULE_ID), .RESET_VALS(RESET_VALS)) u_regs (
        .*, .status(32'd0), .frame_tick(s_axis_tvalid && s_axis_tready && s_axis_tuser)
    );

    wire [3:0] k = regs[5*32 +: 4];
    logic [NPPC*8-1:0] y;
    always_comb begin
        for (int n = 0; n < NPPC; n++) begin
            automatic logic signed [9:0] b = $signed({2'b0, s_axis_tdata[n*32+8 +: 8]});
            automatic logic signed [9:0] diff = $signed({2'b0, s_axis_tdata[n*32 +: 8]}) - b;
            y[n*8 +: 8] = 8'(b + (diff >>> k));   // stays within 0..255
        end
    end

    pixel_stage #(.DATA_W(DATA_W), .NPPC(NPPC)) u_out (
        .clk, .rst, .s_pixel(y), .s_valid(s_axis_tvalid), .s_ready(s_axis_tready),
        .s_last(s_axis_tlast), .s_user(s_axis_tuser), .m_tdata(m_axis_tdata), .m_tvalid(m_axis_tvalid),
        .m_tready(m_axis_tready), .m_tlast(m_axis_tlast), .m_tuser(m_axis_tuser)
    );

    wire unused = &{1'b0, s_axis_tdata, regs};
endmodule

`resetall

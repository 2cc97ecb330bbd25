// absdiff: |a - b| of two 8-bit frames that arrive side by side in one beat, a (the current frame)
// in tdata[7:0] and b (the reference: the previous frame or a background) in tdata[15:8], as
// cv2.absdiff(a, b). The shell's input DMA reads both frames from memory and an AXI4-Stream combiner
// in the static side puts them into one beat (2 bytes read per pixel, runtime/catalogue/vision_timing.py), so
// the module keeps the one-stream contract and needs no frame store of its own.
// At NPPC > 1 a beat carries NPPC such pairs in 32-bit lanes (pixel k's a in tdata[32k+7:32k], its b
// in [32k+15:32k+8]) and the results leave packed, pixel k in [8k+7:8k].
// Registers: 0 ID (RO), 1 WIDTH, 2 HEIGHT, 3 STATUS (RO), 4 FRAMES (RO; frames begun).
`resetall
`timescale 1ns / 1ps
`default_nettype none

module absdiff #(
    parameter int DATA_W = 16,       // input width; needs the two bytes (32 * NPPC at NPPC > 1)
    parameter int NPPC = 1,          // pixel pairs per beat, each in a 32-bit lane
    parameter logic [15:0] MODULE_ID = 16'd13
) (
    `include "rm_ports.svh"
);
    initial begin
        if (DATA_W < 32 * (NPPC - 1) + 16) $error("absdiff: DATA_W must hold NPPC lanes of two 8-bit pixels");
    end
    localparam int NREGS = 5;
    localparam logic [NREGS*32-1:0] RESET_VALS = {32'd0, 32'd0, 32'd480, 32'd640, 32'd0};

    wire [NREGS*32-1:0] regs;
    // .* connects clk, rst and the s_axil_* port by name.
    vision_regs #(.NREGS(NREGS), .MODULE_ID(MODULE_ID), .RESET_VALS(RESET_VALS)) u_regs (
        .*, .status(32'd0), .frame_tick(s_axis_tvalid && s_axis_tready && s_axis_tuser)
    );

    logic [NPPC*8-1:0] y;
    always_comb begin
        for (int k = 0; k < NPPC; k++) begin
            automatic logic [7:0] a = s_axis_tdata[k*32 +: 8];
            automatic logic [7:0] b = s_axis_tdata[k*32+8 +: 8];
            y[k*8 +: 8] = a > b ? a - b : b - a;
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

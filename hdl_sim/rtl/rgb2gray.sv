// rgb2gray: 24-bit RGB (R in tdata[7:0], G [15:8], B [23:16]) to 8-bit gray,
// y = (CR*R + CG*G + CB*B + 2^(SHIFT-1)) >> SHIFT. The defaults (9798, 19235, 3735, 15) are
// OpenCV 4.x/5.x's COLOR_RGB2GRAY rule; older builds used 14-bit 4899/9617/1868, hence registers.
// At NPPC > 1 a beat carries NPPC pixels in 32-bit lanes (pixel k's R in tdata[32k+7:32k] ...) and
// the NPPC gray results leave packed, pixel k in [8k+7:8k], as every gray stream at that rate.
// Registers: 0 ID (RO), 1 WIDTH, 2 HEIGHT, 3 STATUS (RO), 4 FRAMES (RO; frames begun),
// 5 CR, 6 CG, 7 CB, 8 SHIFT (1..31).
`resetall
`timescale 1ns / 1ps
`default_nettype none

module rgb2gray #(
    parameter int DATA_W = 24,       // input and output width; input needs 24 bits (32 * NPPC at NPPC > 1)
    parameter int NPPC = 1,          // pixels per beat, each in a 32-bit lane
    parameter logic [15:0] MODULE_ID = 16'd5
) (
    `include "rm_ports.svh"
);
    initial begin
        if (DATA_W < 32 * (NPPC - 1) + 24) $error("rgb2gray: DATA_W must hold NPPC 32-bit lanes of 24-bit RGB");
    end
    localparam int NREGS = 9;
    localparam logic [NREGS*32-1:0] RESET_VALS =
        {32'd15, 32'd3735, 32'd19235, 32'd9798, 32'd0, 32'd0, 32'd480, 32'd640, 32'd0};

    wire [NREGS*32-1:0] regs;
    // .* connects clk, rst and the s_axil_* port by name.
    vision_regs #(.NREGS(NREGS), .MODULE_ID(MODULE_ID), .RESET_VALS(RESET_VALS)) u_regs (
        .*, .status(32'd0), .frame_tick(s_axis_tvalid && s_axis_tready && s_axis_tuser)
    );

    wire [4:0] shift = regs[8*32 +: 5];
    logic [NPPC*8-1:0] y;
    always_comb begin
        for (int k = 0; k < NPPC; k++) begin
            automatic logic [39:0] acc = 40'(s_axis_tdata[k*32 +: 8]) * 40'(regs[5*32 +: 16])
                + 40'(s_axis_tdata[k*32+8 +: 8]) * 40'(regs[6*32 +: 16])
                + 40'(s_axis_tdata[k*32+16 +: 8]) * 40'(regs[7*32 +: 16]);
            if (shift != 0) acc = acc + (40'd1 << (shift - 5'd1));
            acc = acc >> shift;
            y[k*8 +: 8] = (acc > 255) ? 8'd255 : acc[7:0];
        end
    end

    pixel_stage #(.DATA_W(DATA_W), .NPPC(NPPC)) u_out (
        .clk, .rst, .s_pixel(y), .s_valid(s_axis_tvalid),
        .s_ready(s_axis_tready), .s_last(s_axis_tlast), .s_user(s_axis_tuser), .m_tdata(m_axis_tdata),
        .m_tvalid(m_axis_tvalid), .m_tready(m_axis_tready), .m_tlast(m_axis_tlast), .m_tuser(m_axis_tuser)
    );

    wire unused = &{1'b0, s_axis_tdata, regs};
endmodule

`resetall

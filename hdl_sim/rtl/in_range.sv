// in_range: cv2.inRange on a 3-channel 8-bit pixel (tdata[7:0], [15:8], [23:16]): 255 when
// LOk <= xk <= HIk for every channel k, else 0 (an empty range, LO > HI, gives 0 everywhere).
// At NPPC > 1 a beat carries NPPC pixels in 32-bit lanes (pixel k's channels in tdata[32k+23:32k])
// and the NPPC masks leave packed, pixel k in [8k+7:8k].
// Registers: 0 ID (RO), 1 WIDTH, 2 HEIGHT, 3 STATUS (RO), 4 FRAMES (RO; frames begun),
// 5 LO0, 6 HI0, 7 LO1, 8 HI1, 9 LO2, 10 HI2 (8 bits each).
`resetall
`timescale 1ns / 1ps
`default_nettype none

module in_range #(
    parameter int DATA_W = 24,       // input width; needs 24 bits (32 * NPPC at NPPC > 1)
    parameter int NPPC = 1,          // pixels per beat, each in a 32-bit lane
    parameter logic [15:0] MODULE_ID = 16'd11
) (
    `include "rm_ports.svh"
);
    initial begin
        if (DATA_W < 32 * (NPPC - 1) + 24) $error("in_range: DATA_W must hold NPPC 32-bit lanes of 24-bit pixels");
    end
    localparam int NREGS = 11;
    // Full ranges by default: every pixel is in range.
    localparam logic [NREGS*32-1:0] RESET_VALS = {32'd255, 32'd0, 32'd255, 32'd0, 32'd255, 32'd0,
                                                  32'd0, 32'd0, 32'd480, 32'd640, 32'd0};

    wire [NREGS*32-1:0] regs;
    // .* connects clk, rst and the s_axil_* port by name.
    vision_regs #(.NREGS(NREGS), .MODULE_ID(MODULE_ID), .RESET_VALS(RESET_VALS)) u_regs (
        .*, .status(32'd0), .frame_tick(s_axis_tvalid && s_axis_tready && s_axis_tuser)
    );

    logic [NPPC*8-1:0] y;
    always_comb begin
        for (int n = 0; n < NPPC; n++) begin
            automatic logic in_all = 1'b1;
            for (int k = 0; k < 3; k++) begin
                automatic logic [7:0] x = s_axis_tdata[n*32 + k*8 +: 8];
                if (x < regs[(5 + 2*k)*32 +: 8] || x > regs[(6 + 2*k)*32 +: 8]) in_all = 1'b0;
            end
            y[n*8 +: 8] = in_all ? 8'd255 : 8'd0;
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

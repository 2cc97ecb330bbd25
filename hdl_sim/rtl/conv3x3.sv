// conv3x3: signed 3x3 convolution of an 8-bit raster, cv2.BORDER_REPLICATE edges.
// out = sat8(opt_abs(floor((S * MUL + round) / 2^SHIFT))), S = sum(K[r][c] * p[r][c]),
// round = 2^(SHIFT-1) when SHIFT > 0. Presets (Gaussian, box, Sobel, ...) are register values.
//
// Registers (word index): 0 ID (RO), 1 WIDTH, 2 HEIGHT, 3 STATUS (RO; bit0 framing error),
// 4 FRAMES (RO), 5..13 K0..K8 (signed 16-bit, row-major), 14 MUL (unsigned 16-bit),
// 15 SHIFT (0..31), 16 FLAGS (bit0 ABS).
`resetall
`timescale 1ns / 1ps
`default_nettype none

module conv3x3 #(
    parameter int DATA_W = 8,        // stream width; pixel k of a beat is tdata[8k+7:8k]
    parameter int NPPC = 1,          // pixels per beat (rows padded to whole beats, see window_nxn)
    parameter int MAX_W = 1920,
    parameter logic [15:0] MODULE_ID = 16'd1
) (
    `include "rm_ports.svh"
);
    localparam int NREGS = 17;
    // Identity kernel by default: K4 = 1, MUL = 1; 640x480 frames.
    function automatic logic [NREGS*32-1:0] reset_vals();
        logic [NREGS*32-1:0] v;
        v = '0;
        v[1*32 +: 32] = 32'd640;
        v[2*32 +: 32] = 32'd480;
        v[9*32 +: 32] = 32'd1;
        v[14*32 +: 32] = 32'd1;
        return v;
    endfunction
    localparam logic [NREGS*32-1:0] RESET_VALS = reset_vals();

    wire [NREGS*32-1:0] regs;
    wire framing_err;
    wire [NPPC*72-1:0] win;
    wire win_valid, win_last, win_user, win_eof;
    // .* connects clk, rst and the s_axil_* port by name.
    vision_regs #(.NREGS(NREGS), .MODULE_ID(MODULE_ID), .RESET_VALS(RESET_VALS)) u_regs (
        .*, .status({31'd0, framing_err}), .frame_tick(win_valid && m_axis_tready && win_eof)
    );


    window_nxn #(.N(3), .NPPC(NPPC), .MAX_W(MAX_W)) u_win (
        .clk, .rst,
        .cfg_width(regs[1*32 +: 12]), .cfg_height(regs[2*32 +: 12]),
        .s_pixel(s_axis_tdata[NPPC*8-1:0]), .s_valid(s_axis_tvalid), .s_ready(s_axis_tready),
        .s_last(s_axis_tlast),
        .m_window(win), .m_valid(win_valid), .m_ready(m_axis_tready),
        .m_last(win_last), .m_user(win_user), .m_eof(win_eof), .framing_err
    );

    // Window byte 8 is p00 (top-left), byte 0 is p22, so K[n] pairs with byte 8-n. One datapath per lane.
    wire [4:0] shift = regs[15*32 +: 5];
    wire [NPPC*8-1:0] pix;
    for (genvar k = 0; k < NPPC; k++) begin : g_lane
        wire [71:0] w = win[k*72 +: 72];
        logic signed [31:0] acc;
        logic signed [49:0] scaled;
        logic signed [49:0] shifted;
        logic signed [49:0] mag;
        always_comb begin
            acc = '0;
            for (int n = 0; n < 9; n++) begin
                acc = acc + $signed({1'b0, w[(8-n)*8 +: 8]}) * $signed(regs[(5+n)*32 +: 16]);
            end
            scaled = $signed(acc) * $signed({1'b0, regs[14*32 +: 16]});
            if (shift != 0) scaled = scaled + (50'sd1 <<< (shift - 5'd1));
            shifted = scaled >>> shift;
            mag = (regs[16*32] && shifted < 0) ? -shifted : shifted;
        end
        assign pix[k*8 +: 8] = (mag < 0) ? 8'd0 : (mag > 255) ? 8'd255 : mag[7:0];
    end

    assign m_axis_tdata  = DATA_W'(pix);
    assign m_axis_tvalid = win_valid;
    assign m_axis_tlast  = win_last;
    assign m_axis_tuser  = win_user;


    wire unused = &{1'b0, s_axis_tuser, s_axis_tdata, regs};
endmodule

`resetall

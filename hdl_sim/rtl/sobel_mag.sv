// sobel_mag: |Gx| + |Gy| of the 3x3 Sobel kernels, saturated to 8 bits, cv2.BORDER_REPLICATE edges.
// Registers: 0 ID (RO), 1 WIDTH, 2 HEIGHT, 3 STATUS (RO; bit0 framing error), 4 FRAMES (RO).
`resetall
`timescale 1ns / 1ps
`default_nettype none

module sobel_mag #(
    parameter int DATA_W = 8,        // stream width; pixel k of a beat is tdata[8k+7:8k]
    parameter int NPPC = 1,          // pixels per beat (rows padded to whole beats, see window_nxn)
    parameter int MAX_W = 1920,
    parameter logic [15:0] MODULE_ID = 16'd2
) (
    `include "rm_ports.svh"
);
    localparam int NREGS = 5;
    localparam logic [NREGS*32-1:0] RESET_VALS = {32'd0, 32'd0, 32'd480, 32'd640, 32'd0};

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

    // p(r,c) = window byte 8 - (3r + c).
    function automatic signed [11:0] p(input [71:0] w, input int r, input int c);
        p = $signed({4'b0, w[(8 - (3*r + c))*8 +: 8]});
    endfunction
    wire [NPPC*8-1:0] pix;
    for (genvar k = 0; k < NPPC; k++) begin : g_lane
        wire [71:0] w = win[k*72 +: 72];
        logic signed [11:0] gx, gy;
        logic [11:0] mag;
        always_comb begin
            gx = (p(w,0,2) - p(w,0,0)) + 2*(p(w,1,2) - p(w,1,0)) + (p(w,2,2) - p(w,2,0));
            gy = (p(w,2,0) - p(w,0,0)) + 2*(p(w,2,1) - p(w,0,1)) + (p(w,2,2) - p(w,0,2));
            mag = 12'(gx < 0 ? -gx : gx) + 12'(gy < 0 ? -gy : gy);
        end
        assign pix[k*8 +: 8] = mag > 255 ? 8'd255 : mag[7:0];
    end

    assign m_axis_tdata  = DATA_W'(pix);
    assign m_axis_tvalid = win_valid;
    assign m_axis_tlast  = win_last;
    assign m_axis_tuser  = win_user;


    wire unused = &{1'b0, s_axis_tuser, s_axis_tdata, regs};
endmodule

`resetall

// rank3x3: the RANK-th smallest of each 3x3 window (0 = min, 4 = median, 8 = max), cv2.BORDER_REPLICATE
// edges. RANK 0 is cv2.erode, 8 cv2.dilate (3x3 rectangle, BORDER_REPLICATE), 4 cv2.medianBlur(.., 3).
// A sorting network orders each window; the RANK-th value is unique whatever the order of equal
// pixels, so the output is exactly OpenCV's.
// Registers: 0 ID (RO), 1 WIDTH, 2 HEIGHT, 3 STATUS (RO; bit0 framing error), 4 FRAMES (RO).
`resetall
`timescale 1ns / 1ps
`default_nettype none

module rank3x3 #(
    parameter int DATA_W = 8,        // stream width; pixel k of a beat is tdata[8k+7:8k]
    parameter int NPPC = 1,          // pixels per beat (rows padded to whole beats, see window_nxn)
    parameter int MAX_W = 1920,
    parameter int RANK = 4,
    parameter logic [15:0] MODULE_ID = 16'd9
) (
    `include "rm_ports.svh"
);
    initial begin
        if (RANK < 0 || RANK > 8) $error("rank3x3: RANK must be 0..8");
    end
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

    // A 9-input sorting network (25 compare-exchanges, depth 7; Floyd's, in Knuth TAOCP 5.3.4), of
    // which synthesis keeps only the exchanges output RANK depends on (11 to 21).
    localparam int NCE = 25;
    localparam int CE_LO [NCE] = '{0, 1, 2, 4, 0, 2, 3, 5, 0, 1, 4, 7, 1, 3, 5, 0, 2, 3, 6, 2, 4, 6, 1, 3, 5};
    localparam int CE_HI [NCE] = '{3, 7, 5, 8, 7, 4, 8, 6, 2, 3, 5, 8, 4, 6, 7, 1, 4, 5, 8, 3, 5, 7, 2, 4, 6};
    logic [NPPC*8-1:0] pick;
    always_comb begin
        for (int k = 0; k < NPPC; k++) begin
            automatic logic [7:0] v [9];
            for (int i = 0; i < 9; i++) v[i] = win[k*72 + i*8 +: 8];
            for (int e = 0; e < NCE; e++) begin
                automatic logic [7:0] a = v[CE_LO[e]];
                automatic logic [7:0] b = v[CE_HI[e]];
                if (a > b) begin
                    v[CE_LO[e]] = b;
                    v[CE_HI[e]] = a;
                end
            end
            pick[k*8 +: 8] = v[RANK];
        end
    end

    assign m_axis_tdata  = DATA_W'(pick);
    assign m_axis_tvalid = win_valid;
    assign m_axis_tlast  = win_last;
    assign m_axis_tuser  = win_user;

    wire unused = &{1'b0, s_axis_tuser, s_axis_tdata, regs};
endmodule

`resetall

// fast9: FAST-9 (16-pixel circle of radius 3) corner scores with 3x3 non-maximum suppression, equal
// to cv2.FastFeatureDetector_create(THRESH, nonmaxSuppression=True): the output pixel is the
// keypoint's response (OpenCV's score) where OpenCV finds a keypoint, else 0.
//   d_k = v - c_k over the circle; A = max over the 16 arcs of 9 of min d, B the same of min -d;
//   a pixel at least 3 from every edge is a corner when max(A, B) > THRESH, scoring max(A, B) - 1
//   (OpenCV's cornerScore); other pixels score 0. A corner is kept when its score is above all 8
//   neighbours' (strictly), as OpenCV's suppression does.
// A 7x7 window feeds the scores, a 3x3 window over the scores the suppression (both window_nxn,
// NPPC lanes each); frame edges are replicated by both but only scored pixels (3 in) can be kept.
// Registers: 0 ID (RO), 1 WIDTH, 2 HEIGHT, 3 STATUS (RO; bit0 framing error), 4 FRAMES (RO),
// 5 THRESH (0..255).
`resetall
`timescale 1ns / 1ps
`default_nettype none

module fast9 #(
    parameter int DATA_W = 8,        // stream width; pixel k of a beat is tdata[8k+7:8k]
    parameter int NPPC = 1,          // pixels per beat (rows padded to whole beats, see window_nxn)
    parameter int MAX_W = 1920,
    parameter logic [15:0] MODULE_ID = 16'd15
) (
    `include "rm_ports.svh"
);
    localparam int NREGS = 6;
    localparam logic [NREGS*32-1:0] RESET_VALS = {32'd10, 32'd0, 32'd0, 32'd480, 32'd640, 32'd0};

    wire [NREGS*32-1:0] regs;
    wire err7, err3;
    wire [NPPC*72-1:0] nms_win;
    wire nms_valid, nms_last, nms_user, nms_eof;
    // .* connects clk, rst and the s_axil_* port by name.
    vision_regs #(.NREGS(NREGS), .MODULE_ID(MODULE_ID), .RESET_VALS(RESET_VALS)) u_regs (
        .*, .status({31'd0, err7 | err3}), .frame_tick(nms_valid && m_axis_tready && nms_eof)
    );
    wire [11:0] cfg_w = regs[1*32 +: 12];
    wire [11:0] cfg_h = regs[2*32 +: 12];
    wire signed [9:0] thresh = $signed({2'b0, regs[5*32 +: 8]});

    wire [NPPC*7*7*8-1:0] win;
    wire win_valid, win_last, win_user, win_eof, score_ready;
    window_nxn #(.N(7), .NPPC(NPPC), .MAX_W(MAX_W)) u_win7 (
        .clk, .rst, .cfg_width(cfg_w), .cfg_height(cfg_h),
        .s_pixel(s_axis_tdata[NPPC*8-1:0]), .s_valid(s_axis_tvalid), .s_ready(s_axis_tready), .s_last(s_axis_tlast),
        .m_window(win), .m_valid(win_valid), .m_ready(score_ready),
        .m_last(win_last), .m_user(win_user), .m_eof(win_eof), .framing_err(err7)
    );

    // p(r, c) of the 7x7 window; the circle as (row, col) around the centre (3, 3), OpenCV's order.
    function automatic signed [9:0] p(input [7*7*8-1:0] w, input int r, input int c);
        p = $signed({2'b0, w[(48 - (7*r + c))*8 +: 8]});
    endfunction
    localparam int CR [16] = '{0, 0, 1, 2, 3, 4, 5, 6, 6, 6, 5, 4, 3, 2, 1, 0};
    localparam int CC [16] = '{3, 4, 5, 6, 6, 6, 5, 4, 3, 2, 1, 0, 0, 0, 1, 2};

    // Output position of the beat being scored (the edge test): x_q counts beats.
    logic [11:0] x_q, y_q;
    wire [NPPC*8-1:0] score;
    for (genvar lane = 0; lane < NPPC; lane++) begin : g_score
        wire [7*7*8-1:0] w = win[lane*7*7*8 +: 7*7*8];
        /* verilator lint_off WIDTHTRUNC */
        wire [12:0] x = 13'(32'(x_q) * NPPC + lane);
        /* verilator lint_on WIDTHTRUNC */
        logic [7:0] s;
        always_comb begin
            // Min and max of d over the 9-arc from each k, by doubling: runs of 2, 4, 8, then the 9th,
            // sharing every run between the arcs that contain it (4 x 16 comparisons each, not 8 x 16).
            automatic logic signed [9:0] d [16];
            automatic logic signed [9:0] lo [16];     // min of d over the run from k (length 2, 4, 8, 9)
            automatic logic signed [9:0] hi [16];     // max of the same
            automatic logic signed [9:0] lo_prev [16];
            automatic logic signed [9:0] hi_prev [16];
            automatic logic signed [9:0] best = -10'sd256;
            for (int k = 0; k < 16; k++) begin
                d[k] = p(w, 3, 3) - p(w, CR[k], CC[k]);
                lo[k] = d[k];
                hi[k] = d[k];
            end
            for (int span = 1; span < 8; span = 2 * span) begin
                lo_prev = lo;
                hi_prev = hi;
                for (int k = 0; k < 16; k++) begin
                    if (lo_prev[(k + span) % 16] < lo_prev[k]) lo[k] = lo_prev[(k + span) % 16];
                    if (hi_prev[(k + span) % 16] > hi_prev[k]) hi[k] = hi_prev[(k + span) % 16];
                end
            end
            for (int k = 0; k < 16; k++) begin
                if (d[(k + 8) % 16] < lo[k]) lo[k] = d[(k + 8) % 16];
                if (d[(k + 8) % 16] > hi[k]) hi[k] = d[(k + 8) % 16];
                if (lo[k] > best) best = lo[k];
                if (-hi[k] > best) best = -hi[k];
            end
            s = 8'd0;
            if (best > thresh && x >= 3 && y_q >= 3 && x + 13'd3 < 13'(cfg_w) && 13'(y_q) + 13'd3 < 13'(cfg_h))
                s = 8'(best - 10'sd1);
        end
        assign score[lane*8 +: 8] = s;
    end

    always_ff @(posedge clk) begin
        if (win_valid && score_ready) begin
            if (win_eof) begin
                x_q <= '0;
                y_q <= '0;
            end else if (win_last) begin
                x_q <= '0;
                y_q <= y_q + 1'b1;
            end else begin
                x_q <= x_q + 1'b1;
            end
        end
        if (rst) begin
            x_q <= '0;
            y_q <= '0;
        end
    end

    window_nxn #(.N(3), .NPPC(NPPC), .MAX_W(MAX_W)) u_win3 (
        .clk, .rst, .cfg_width(cfg_w), .cfg_height(cfg_h),
        .s_pixel(score), .s_valid(win_valid), .s_ready(score_ready), .s_last(win_last),
        .m_window(nms_win), .m_valid(nms_valid), .m_ready(m_axis_tready),
        .m_last(nms_last), .m_user(nms_user), .m_eof(nms_eof), .framing_err(err3)
    );

    logic [NPPC*8-1:0] kept;
    always_comb begin
        for (int k = 0; k < NPPC; k++) begin
            automatic logic keep = 1'b1;
            for (int n = 0; n < 9; n++) begin
                if (n != 4 && !(nms_win[k*72 + 4*8 +: 8] > nms_win[k*72 + n*8 +: 8])) keep = 1'b0;
            end
            kept[k*8 +: 8] = keep ? nms_win[k*72 + 4*8 +: 8] : 8'd0;
        end
    end

    assign m_axis_tdata  = DATA_W'(kept);
    assign m_axis_tvalid = nms_valid;
    assign m_axis_tlast  = nms_last;
    assign m_axis_tuser  = nms_user;

    wire unused = &{1'b0, s_axis_tuser, s_axis_tdata, regs, win_user, nms_user, cfg_w, cfg_h};
endmodule

`resetall

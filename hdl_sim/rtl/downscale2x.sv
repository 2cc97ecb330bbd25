// downscale2x: 2x2 mean, y = (a + b + c + d + 2) >> 2 (cv2.resize INTER_AREA on even sizes).
// Output is floor(W/2) x floor(H/2); an odd last column or row is consumed and dropped. At NPPC > 1
// input and output rows are whole beats; the output's spare lanes are unspecified.
// Registers: 0 ID (RO), 1 WIDTH, 2 HEIGHT (input size), 3 STATUS (RO; bit0 framing error),
// 4 FRAMES (RO).
`resetall
`timescale 1ns / 1ps
`default_nettype none

module downscale2x #(
    parameter int DATA_W = 8,        // stream width; pixel k of a beat is tdata[8k+7:8k]
    parameter int NPPC = 1,          // pixels per beat: 1 or even (rows padded to whole beats)
    parameter int MAX_W = 1920,
    parameter logic [15:0] MODULE_ID = 16'd4
) (
    `include "rm_ports.svh"
);
    localparam int NREGS = 5;
    localparam logic [NREGS*32-1:0] RESET_VALS = {32'd0, 32'd0, 32'd480, 32'd640, 32'd0};

    wire [NREGS*32-1:0] regs;
    wire framing_err;
    wire frame_done;
    // .* connects clk, rst and the s_axil_* port by name.
    vision_regs #(.NREGS(NREGS), .MODULE_ID(MODULE_ID), .RESET_VALS(RESET_VALS)) u_regs (
        .*, .status({31'd0, framing_err}), .frame_tick(frame_done)
    );

    // c_q: the input beat's index in its row (its column at NPPC 1), r_q: its row.
    wire take = s_axis_tvalid && s_axis_tready;
    wire [11:0] c_q, r_q, w_eff, h_eff, wb;
    wire row_end, frame_end_unused;
    frame_pos #(.NPPC(NPPC)) u_pos (
        .clk, .rst, .cfg_width(regs[1*32 +: 12]), .cfg_height(regs[2*32 +: 12]), .take, .last(s_axis_tlast),
        .x(c_q), .y(r_q), .width(w_eff), .height(h_eff), .row_beats(wb), .row_end, .frame_end(frame_end_unused),
        .framing_err
    );

    if (NPPC == 1) begin : g_one
        logic [8:0] lb [MAX_W/2];      // horizontal pair sums of the even row
        logic [7:0] left_q;
        wire [11:0] ow = w_eff >> 1;
        wire [11:0] oh = h_eff >> 1;
        localparam int KW = $clog2(MAX_W / 2);
        wire [10:0] k = c_q[11:1];
        wire [KW-1:0] kk = k[KW-1:0];
        wire in_col = ({1'b0, k} < ow);
        wire in_row = ({1'b0, r_q[11:1]} < oh);
        wire [8:0] pair = 9'(left_q) + 9'(s_axis_tdata[7:0]);
        wire emit = c_q[0] && r_q[0] && in_col && in_row;
        assign frame_done = take && emit && ({1'b0, k} == ow - 1) &&
                          ({1'b0, r_q[11:1]} == oh - 1);

        pixel_stage #(.DATA_W(DATA_W)) u_out (
            .clk, .rst, .s_pixel(8'((10'(lb[kk]) + 10'(pair) + 10'd2) >> 2)), .s_valid(s_axis_tvalid && emit),
            .s_ready(s_axis_tready), .s_last({1'b0, k} == ow - 1), .s_user((r_q == 1) && (k == 0)),
            .m_tdata(m_axis_tdata), .m_tvalid(m_axis_tvalid), .m_tready(m_axis_tready), .m_tlast(m_axis_tlast),
            .m_tuser(m_axis_tuser)
        );

        always_ff @(posedge clk) begin
            if (take) begin
                left_q <= s_axis_tdata[7:0];
                if (c_q[0] && !r_q[0] && in_col) lb[kk] <= pair;
            end
            if (rst) left_q <= '0;
        end

    end else begin : g_wide
        // NPPC pixels per beat (NPPC even): a beat makes NPPC/2 output pixels, so two input beats fill
        // one output beat. Input beat g of an odd row pairs with the even row's sums of beat g; the
        // even beat's results wait in half_q for the odd one, or go alone (upper lanes spare) when
        // the row ends on an even beat. Output columns from floor(W/2) on are spare lanes.
        localparam int HALF = NPPC / 2;
        localparam int MAX_B = (MAX_W + NPPC - 1) / NPPC;
        localparam int BW = (MAX_B > 1) ? $clog2(MAX_B) : 1;
        logic [HALF*9-1:0] lb [MAX_B];     // horizontal pair sums of the even row, per beat
        logic [HALF*8-1:0] half_q;
        wire [11:0] g_q = c_q;                                          // input beat in the row
        wire [11:0] ob = 12'((32'(w_eff >> 1) + NPPC - 1) / NPPC);     // output beats per row
        wire [11:0] oh = h_eff >> 1;
        wire [11:0] m = g_q >> 1;
        wire [BW-1:0] gg = g_q[BW-1:0];
        wire in_row = ((r_q >> 1) < oh);
        logic [HALF*9-1:0] pairs;
        logic [HALF*8-1:0] res;
        always_comb begin
            for (int k = 0; k < HALF; k++) begin
                pairs[k*9 +: 9] = 9'(s_axis_tdata[2*k*8 +: 8]) + 9'(s_axis_tdata[(2*k+1)*8 +: 8]);
                res[k*8 +: 8] = 8'((10'(lb[gg][k*9 +: 9]) + 10'(pairs[k*9 +: 9]) + 10'd2) >> 2);
            end
        end
        wire emit = r_q[0] && in_row && (g_q[0] || row_end) && (m < ob);
        assign frame_done = take && emit && (m == ob - 1) && ((r_q >> 1) == oh - 1);

        pixel_stage #(.DATA_W(DATA_W), .NPPC(NPPC)) u_out (
            .clk, .rst, .s_pixel(g_q[0] ? {res, half_q} : {(HALF*8)'(0), res}), .s_valid(s_axis_tvalid && emit),
            .s_ready(s_axis_tready), .s_last(m == ob - 1), .s_user((r_q == 1) && (m == 0)),
            .m_tdata(m_axis_tdata), .m_tvalid(m_axis_tvalid), .m_tready(m_axis_tready), .m_tlast(m_axis_tlast),
            .m_tuser(m_axis_tuser)
        );

        always_ff @(posedge clk) begin
            if (take) begin
                if (!r_q[0]) lb[gg] <= pairs;
                if (!g_q[0]) half_q <= res;
            end
            if (rst) half_q <= '0;
        end
    end

    wire unused = &{1'b0, s_axis_tuser, s_axis_tdata, regs, wb, row_end, frame_end_unused};
endmodule

`resetall

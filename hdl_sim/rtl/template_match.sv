// template_match: where a 7x7 template best matches the frame, as
// cv2.minMaxLoc(cv2.matchTemplate(frame, template, cv2.TM_SQDIFF)) gives it: the least sum of
// squared differences over every position where the template lies wholly inside the frame, and its
// top-left corner (the first such position in row-major order on a tie), in registers read after
// the frame. A tracker (Nguyen & Hoe's template tracking) reads where its target went without
// reading a score image back. The pixels pass through unchanged, so the module can end a chain or
// sit inside one.
// A 7x7 window_nxn gives every pixel's window (NPPC lanes a beat); a window whose centre is at least
// 3 from every edge is a template position (top-left = centre - 3). Its score is the sum of 49
// squared differences (at most 49 x 255^2 < 2^22). The running minimum covers the frame's windows
// in output order and is latched into the result registers on its last beat.
// Registers: 0 ID (RO), 1 WIDTH, 2 HEIGHT, 3 STATUS (RO; bit0 framing error), 4 FRAMES (RO),
// 5..17 T0..T12 (the template, row-major, byte k of Tj is template pixel 4j + k; T12 holds one),
// 18 BEST (RO; the least score), 19 BEST_X, 20 BEST_Y (RO; its top-left column and row); all ones
// when the frame is smaller than the template.
`resetall
`timescale 1ns / 1ps
`default_nettype none

module template_match #(
    parameter int DATA_W = 8,        // stream width; pixel k of a beat is tdata[8k+7:8k]
    parameter int NPPC = 1,          // pixels per beat (rows padded to whole beats, see window_nxn)
    parameter int MAX_W = 1920,
    parameter logic [15:0] MODULE_ID = 16'd16
) (
    `include "rm_ports.svh"
);
    localparam int N = 7;
    localparam int R = N / 2;
    localparam int NT = (N * N + 3) / 4;              // template registers
    localparam int NREGS = 5 + NT + 3;
    localparam int BEST = 5 + NT;
    localparam logic [NREGS*32-1:0] RESET_VALS = NREGS*32'({32'd480, 32'd640, 32'd0});
    localparam logic [NREGS-1:0] RO_MASK = {3'b111, NT'(0), 5'b11001};

    wire [NREGS*32-1:0] regs;
    wire framing_err;
    logic [31:0] frames_q, best_q;
    logic [15:0] best_x_q, best_y_q;

    logic [NREGS*32-1:0] ro;
    always_comb begin
        ro = '0;
        ro[0*32 +: 32] = {MODULE_ID, 16'h0001};
        ro[3*32 +: 32] = {31'd0, framing_err};
        ro[4*32 +: 32] = frames_q;
        ro[BEST*32 +: 32] = best_q;
        ro[(BEST + 1)*32 +: 32] = {16'd0, best_x_q};
        ro[(BEST + 2)*32 +: 32] = {16'd0, best_y_q};
    end
    wire [NREGS-1:0] wr_stb_unused;
    // .* connects clk, rst and the s_axil_* port by name.
    axil_regfile #(.NREGS(NREGS), .ADDR_W(8), .RESET_VALS(RESET_VALS), .RO_MASK(RO_MASK)) u_regs (
        .*, .ro_values(ro), .wr_stb(wr_stb_unused)
    );
    wire [11:0] cfg_w = regs[1*32 +: 12];
    wire [11:0] cfg_h = regs[2*32 +: 12];
    wire [NT*32-1:0] tpl = regs[5*32 +: NT*32];

    wire [NPPC*N*N*8-1:0] win;
    wire win_valid, win_last, win_user, win_eof;
    window_nxn #(.N(N), .NPPC(NPPC), .MAX_W(MAX_W)) u_win (
        .clk, .rst, .cfg_width(cfg_w), .cfg_height(cfg_h),
        .s_pixel(s_axis_tdata[NPPC*8-1:0]), .s_valid(s_axis_tvalid), .s_ready(s_axis_tready), .s_last(s_axis_tlast),
        .m_window(win), .m_valid(win_valid), .m_ready(m_axis_tready),
        .m_last(win_last), .m_user(win_user), .m_eof(win_eof), .framing_err(framing_err)
    );
    wire take = win_valid && m_axis_tready;

    // Output position of the beat: x_q counts beats, y_q rows.
    logic [11:0] x_q, y_q;
    logic [NPPC*8-1:0] centre;
    logic [21:0] score [NPPC];
    logic [NPPC-1:0] in_frame;
    for (genvar lane = 0; lane < NPPC; lane++) begin : g_lane
        wire [N*N*8-1:0] w = win[lane*N*N*8 +: N*N*8];
        /* verilator lint_off WIDTHTRUNC */
        wire [12:0] x = 13'(32'(x_q) * NPPC + lane);
        /* verilator lint_on WIDTHTRUNC */
        always_comb begin
            automatic logic [21:0] sum = '0;
            for (int a = 0; a < N * N; a++) begin
                // Window byte (N*N-1-a) is pixel a in row-major order (p(0,0) on top).
                automatic logic signed [8:0] d = $signed({1'b0, w[(N * N - 1 - a) * 8 +: 8]})
                                                 - $signed({1'b0, tpl[a * 8 +: 8]});
                automatic logic signed [17:0] sq = d * d;      // 0 .. 255^2
                sum = sum + 22'($unsigned(sq));
            end
            score[lane] = sum;
        end
        assign centre[lane*8 +: 8] = w[(N * N / 2) * 8 +: 8];
        assign in_frame[lane] = x >= 13'(R) && y_q >= 12'(R) && x + 13'(R) < 13'(cfg_w) && 13'(y_q) + 13'(R) < 13'(cfg_h);
    end

    // The least score so far this frame, lanes in column order; strictly less replaces (first wins).
    logic [31:0] run_q;
    logic [15:0] run_x_q, run_y_q;
    logic [31:0] run_n;
    logic [15:0] run_xn, run_yn;
    always_comb begin
        run_n = win_user ? 32'hFFFF_FFFF : run_q;
        run_xn = win_user ? 16'hFFFF : run_x_q;
        run_yn = win_user ? 16'hFFFF : run_y_q;
        for (int k = 0; k < NPPC; k++) begin
            if (in_frame[k] && 32'(score[k]) < run_n) begin
                run_n = 32'(score[k]);
                run_xn = 16'(32'(x_q) * NPPC + k - R);
                run_yn = 16'(32'(y_q) - R);
            end
        end
    end

    always_ff @(posedge clk) begin
        if (take) begin
            run_q <= run_n;
            run_x_q <= run_xn;
            run_y_q <= run_yn;
            if (win_eof) begin
                best_q <= run_n;
                best_x_q <= run_xn;
                best_y_q <= run_yn;
                frames_q <= frames_q + 1;
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
            run_q <= '1;
            run_x_q <= '1;
            run_y_q <= '1;
            best_q <= '1;
            best_x_q <= '1;
            best_y_q <= '1;
            frames_q <= '0;
            x_q <= '0;
            y_q <= '0;
        end
    end

    assign m_axis_tdata  = DATA_W'(centre);
    assign m_axis_tvalid = win_valid;
    assign m_axis_tlast  = win_last;
    assign m_axis_tuser  = win_user;

    wire unused = &{1'b0, s_axis_tuser, s_axis_tdata, regs, wr_stb_unused};
endmodule

`resetall

// NxN sliding window (N odd, R = N/2) over an 8-bit raster with cv2.BORDER_REPLICATE edges: the
// generalisation of window3x3 for larger neighbourhoods (fast9's 7x7 circle).
//
// The sequencer walks H+R row passes. Pass i consumes input row i (none once i >= H, where the
// bottom rows are replicated) and, from pass R on, emits output row i-R; an emitting pass takes
// W+R steps (R right-edge steps consume nothing and emit the replicated right edge), a pass before R
// takes W. So a frame takes R*W + H*(W+R) steps and emits exactly H*W windows. 2R line buffers keep
// the last rows; a shift register of N column vectors makes the window.
`resetall
`timescale 1ns / 1ps
`default_nettype none

module window_nxn #(
    parameter int N = 7,           // window side (odd, >= 3)
    parameter int MAX_W = 1920,    // longest line the buffers hold
    parameter int DIM_W = 12       // width of the size registers
) (
    input  wire                 clk,
    input  wire                 rst,
    input  wire [DIM_W-1:0]     cfg_width,    // sampled at the start of each frame
    input  wire [DIM_W-1:0]     cfg_height,
    input  wire [7:0]           s_pixel,
    input  wire                 s_valid,
    output wire                 s_ready,
    input  wire                 s_last,       // expected on the last pixel of each row
    output logic [N*N*8-1:0]    m_window,     // row-major, p(0,0) = top-left in the top byte
    output logic                m_valid,
    input  wire                 m_ready,
    output logic                m_last,       // last pixel of an output row
    output logic                m_user,       // first pixel of an output frame
    output logic                m_eof,        // last pixel of an output frame
    output logic                framing_err   // sticky: an input TLAST was early or late
);
    localparam int R = N / 2;
    localparam int AW = $clog2(MAX_W);
    localparam int CW = DIM_W + 2;            // signed pass/step arithmetic
    localparam int LW = $clog2(2 * R);
    localparam logic signed [CW-1:0] RS = CW'(R);
    localparam logic signed [CW-1:0] ONE = CW'(1);
    initial begin
        if (N < 3 || N % 2 == 0) $error("window_nxn: N must be odd and >= 3");
        if (MAX_W < 2 || MAX_W >= (1 << DIM_W)) $error("window_nxn: MAX_W out of range for DIM_W");
    end

    logic [7:0] lb [2*R][MAX_W];   // lb[k] holds row iv-1-k, iv = min(pass, H)
    logic [DIM_W:0] i_q, j_q;
    logic [DIM_W-1:0] w_q, h_q;
    logic [N*8-1:0] sr [N];        // column vectors, sr[N-1] newest; byte a = window row a

    wire at_start = (i_q == '0) && (j_q == '0);
    wire [DIM_W-1:0] w_eff = at_start ? cfg_width : w_q;
    wire [DIM_W-1:0] h_eff = at_start ? cfg_height : h_q;
    wire signed [CW-1:0] i_s = CW'(i_q);
    wire signed [CW-1:0] w_s = CW'(w_eff);
    wire signed [CW-1:0] h_s = CW'(h_eff);

    wire emits_row = (i_s >= RS);
    wire is_flush  = ($signed(CW'(j_q)) >= w_s);
    wire need_in   = !is_flush && (i_s < h_s);
    wire produces  = emits_row && ($signed(CW'(j_q)) >= RS);
    wire pass_end  = ($signed(CW'(j_q)) == (emits_row ? w_s + RS - ONE : w_s - ONE));
    wire last_step = pass_end && (i_s == h_s + RS - ONE);
    wire out_free  = !m_valid || m_ready;
    wire fire      = (need_in ? s_valid : 1'b1) && (produces ? out_free : 1'b1);
    assign s_ready = need_in && (produces ? out_free : 1'b1);

    wire [DIM_W:0] j_in = is_flush ? '0 : j_q;   // keep the index in range on flush steps
    wire [AW-1:0] jj = j_in[AW-1:0];
    wire unused_j_bits = &{1'b0, j_in};

    // The column vector of image rows i-2R .. i (clamped) at column j.
    logic [N*8-1:0] vec;
    always_comb begin
        automatic logic signed [CW-1:0] iv = (i_s < h_s) ? i_s : h_s;
        for (int a = 0; a < N; a++) begin
            automatic logic signed [CW-1:0] q = i_s - RS - RS + CW'(a);
            // The high bits of back are always 0 (0 .. 2R-1 when used): only the low ones index.
            /* verilator lint_off UNUSEDSIGNAL */
            automatic logic signed [CW-1:0] back;
            /* verilator lint_on UNUSEDSIGNAL */
            if (q < 0) q = '0;
            if (q > h_s - ONE) q = h_s - ONE;
            back = iv - ONE - q;               // 0 .. 2R-1 whenever q is not the input row
            if (q == i_s) vec[a*8 +: 8] = s_pixel;
            else vec[a*8 +: 8] = lb[back[LW-1:0]][jj];
        end
    end
    wire [N*8-1:0] cur = is_flush ? sr[N-1] : vec;

    logic [N*N*8-1:0] win;
    always_comb begin
        for (int a = 0; a < N; a++) begin
            for (int b = 0; b < N; b++) begin
                win[(N*N - 1 - (a*N + b))*8 +: 8] = (b < N - 1) ? sr[b + 1][a*8 +: 8] : cur[a*8 +: 8];
            end
        end
    end

    always_ff @(posedge clk) begin
        if (m_valid && m_ready) m_valid <= 1'b0;
        if (at_start) begin
            w_q <= cfg_width;
            h_q <= cfg_height;
        end
        if (fire) begin
            if (need_in) begin
                for (int k = 2 * R - 1; k > 0; k--) lb[k][jj] <= lb[k-1][jj];
                lb[0][jj] <= s_pixel;
                if (s_last != ($signed(CW'(j_q)) == w_s - ONE)) framing_err <= 1'b1;
            end
            if (emits_row) begin
                for (int k = 0; k < N - 1; k++) sr[k] <= (j_q == '0) ? vec : sr[k + 1];
                sr[N-1] <= cur;
            end
            if (produces) begin
                m_window <= win;
                m_valid  <= 1'b1;
                m_last   <= pass_end;
                m_user   <= (i_s == RS) && ($signed(CW'(j_q)) == RS);
                m_eof    <= last_step;
            end
            if (last_step || (h_eff == '0)) begin
                i_q <= '0;
                j_q <= '0;
            end else if (pass_end) begin
                i_q <= i_q + 1'b1;
                j_q <= '0;
            end else begin
                j_q <= j_q + 1'b1;
            end
        end
        if (rst) begin
            i_q <= '0;
            j_q <= '0;
            w_q <= '0;
            h_q <= '0;
            m_valid <= 1'b0;
            m_last <= 1'b0;
            m_user <= 1'b0;
            m_eof <= 1'b0;
            framing_err <= 1'b0;
            m_window <= '0;
            for (int k = 0; k < N; k++) sr[k] <= '0;
        end
    end
endmodule

`resetall

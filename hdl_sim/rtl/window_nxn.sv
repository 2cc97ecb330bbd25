// NxN sliding windows (N odd, R = N/2) over an 8-bit raster with cv2.BORDER_REPLICATE edges, NPPC
// pixels per beat: the one window generator of the library (3x3 for conv3x3, sobel_mag, rank3x3 and
// fast9's suppression; 7x7 for fast9's circle).
//
// A row arrives as B = ceil(W / NPPC) beats, pixel k of a beat in bits [8k+7:8k]. When W is not a
// multiple of NPPC the last beat's spare lanes carry nothing (whatever the DMA padded the row
// with): they are overwritten by the row's last pixel on the way in, which is the replicated right
// edge. Each output beat carries the NPPC windows of the pixels in the same lanes; a window needs
// RB = ceil(R / NPPC) beats of context on each side.
//
// The sequencer walks H+R row passes. Pass i consumes input row i (none once i >= H, where the
// bottom rows are replicated) and, from pass R on, emits output row i-R; an emitting pass takes
// B+RB steps (RB right-edge steps consume nothing and emit the replicated right edge), a pass before
// R takes B. So a frame takes R*B + H*(B+RB) steps and emits exactly H*B window beats.
// 2R line buffers (block-RAM style: one write and one registered read per step, the read issued a
// step ahead with this step's write forwarded when the indices meet) keep the last rows; a shift
// register of 2*RB+1 column beats makes the windows.
`resetall
`timescale 1ns / 1ps
`default_nettype none

module window_nxn #(
    parameter int N = 3,           // window side (odd, >= 3)
    parameter int NPPC = 1,        // pixels per beat: 1, 2, 4 or 8
    parameter int MAX_W = 1920,    // longest line the buffers hold, in pixels
    parameter int DIM_W = 12       // width of the size registers
) (
    input  wire                     clk,
    input  wire                     rst,
    input  wire [DIM_W-1:0]         cfg_width,    // pixels; sampled at the start of each frame
    input  wire [DIM_W-1:0]         cfg_height,
    input  wire [NPPC*8-1:0]        s_pixel,      // NPPC pixels, pixel 0 in the low byte
    input  wire                     s_valid,
    output wire                     s_ready,
    input  wire                     s_last,       // expected on the last beat of each row
    output logic [NPPC*N*N*8-1:0]   m_window,     // lane k: [k*N*N*8 +: N*N*8], row-major, p(0,0) on top
    output logic                    m_valid,
    input  wire                     m_ready,
    output logic                    m_last,       // last beat of an output row
    output logic                    m_user,       // first beat of an output frame
    output logic                    m_eof,        // last beat of an output frame
    output logic                    framing_err   // sticky: an input TLAST was early or late
);
    localparam int R = N / 2;
    localparam int RB = (R + NPPC - 1) / NPPC;
    localparam int NB = 2 * RB + 1;           // column beats a window beat spans
    localparam int PW = NPPC * 8;
    localparam int MAX_B = (MAX_W + NPPC - 1) / NPPC;
    localparam int AW = (MAX_B > 1) ? $clog2(MAX_B) : 1;
    localparam int CW = DIM_W + 2;            // signed pass/step arithmetic
    localparam int LW = (2 * R > 1) ? $clog2(2 * R) : 1;
    localparam logic signed [CW-1:0] RS = CW'(R);
    localparam logic signed [CW-1:0] RBS = CW'(RB);
    localparam logic signed [CW-1:0] ONE = CW'(1);
    initial begin
        if (N < 3 || N % 2 == 0) $error("window_nxn: N must be odd and >= 3");
        if (NPPC != 1 && NPPC != 2 && NPPC != 4 && NPPC != 8) $error("window_nxn: NPPC must be 1, 2, 4 or 8");
        if (MAX_W < 2 || MAX_W >= (1 << DIM_W)) $error("window_nxn: MAX_W out of range for DIM_W");
    end

    logic [DIM_W:0] i_q, j_q;
    logic [DIM_W-1:0] w_q, h_q;
    logic [N*PW-1:0] sr [NB];      // column beats, sr[NB-1] newest; bits [a*PW +: PW] = window row a

    wire at_start = (i_q == '0) && (j_q == '0);
    wire [DIM_W-1:0] w_eff = at_start ? cfg_width : w_q;
    wire [DIM_W-1:0] h_eff = at_start ? cfg_height : h_q;
    wire [DIM_W:0] wb_eff = (DIM_W + 1)'((32'(w_eff) + NPPC - 1) / NPPC);   // beats per row
    wire [DIM_W-1:0] w_m1 = w_eff - 1'b1;
    /* verilator lint_off WIDTHTRUNC */
    wire [3:0] last_lane = 4'(32'(w_m1) % NPPC);   // lane of the row's last pixel in its last beat
    /* verilator lint_on WIDTHTRUNC */
    wire signed [CW-1:0] i_s = CW'(i_q);
    wire signed [CW-1:0] j_s = CW'(j_q);
    wire signed [CW-1:0] wb_s = CW'(wb_eff);
    wire signed [CW-1:0] h_s = CW'(h_eff);

    wire emits_row = (i_s >= RS);
    wire is_flush  = (j_s >= wb_s);
    wire need_in   = !is_flush && (i_s < h_s);
    wire produces  = emits_row && (j_s >= RBS);
    wire pass_end  = (j_s == (emits_row ? wb_s + RBS - ONE : wb_s - ONE));
    wire last_step = pass_end && (i_s == h_s + RS - ONE);
    wire out_free  = !m_valid || m_ready;
    wire fire      = (need_in ? s_valid : 1'b1) && (produces ? out_free : 1'b1);
    assign s_ready = need_in && (produces ? out_free : 1'b1);

    // The input beat with the spare lanes of a row's last beat set to the row's last pixel.
    logic [PW-1:0] px;
    always_comb begin
        px = s_pixel;
        if (j_s == wb_s - ONE) begin
            for (int k = 1; k < NPPC; k++) begin
                if (4'(k) > last_lane) px[k*8 +: 8] = s_pixel[last_lane*8 +: 8];
            end
        end
    end

    wire [DIM_W:0] j_in = is_flush ? '0 : j_q;   // keep the index in range on flush steps
    wire [AW-1:0] jj = j_in[AW-1:0];

    // The index the next step reads: the read is registered, so it is issued a step ahead. The row
    // length cannot change between two steps (it is sampled at the frame start, where the index is 0
    // whatever it is), so wb_eff holds.
    wire wraps = last_step || (h_eff == '0) || pass_end;
    wire [DIM_W:0] j_next = rst ? '0 : !fire ? j_q : wraps ? '0 : j_q + 1'b1;
    wire [DIM_W:0] j_in_next = ($signed(CW'(j_next)) >= wb_s) ? '0 : j_next;
    wire [AW-1:0] rd_idx = j_in_next[AW-1:0];
    wire lb_write = fire && need_in;

    // Line buffer k holds row iv-1-k (iv = min(pass, H)); lbv[k] is its word at this step's column.
    wire [PW-1:0] lbv [2*R];
    for (genvar k = 0; k < 2 * R; k++) begin : g_lb
        logic [PW-1:0] mem [MAX_B];
        logic [PW-1:0] rd_q, fwd_q;
        logic fwd;
        wire [PW-1:0] wr_val;
        if (k == 0) begin : g_in
            assign wr_val = px;
        end else begin : g_shift
            assign wr_val = lbv[k - 1];
        end
        always_ff @(posedge clk) begin
            if (lb_write) mem[jj] <= wr_val;
            rd_q <= mem[rd_idx];
            fwd <= lb_write && (jj == rd_idx);
            fwd_q <= wr_val;
        end
        assign lbv[k] = fwd ? fwd_q : rd_q;
    end

    // The column beat of image rows i-2R .. i (clamped) at beat j.
    logic [N*PW-1:0] vec;
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
            if (q == i_s) vec[a*PW +: PW] = px;
            else vec[a*PW +: PW] = lbv[back[LW-1:0]];
        end
    end

    // A column beat with every lane set to lane `lane` (the replicated left or right edge).
    function automatic logic [N*PW-1:0] spread(input logic [N*PW-1:0] v, input int lane);
        for (int a = 0; a < N; a++) begin
            for (int k = 0; k < NPPC; k++) spread[a*PW + k*8 +: 8] = v[a*PW + lane*8 +: 8];
        end
    endfunction
    wire [N*PW-1:0] cur = is_flush ? spread(sr[NB-1], NPPC - 1) : vec;

    // Window (a, b) of lane k is the pixel R beats' worth of lanes back: span position
    // RB*NPPC + k - R + b over the beats sr[1..NB-1], cur.
    logic [NPPC*N*N*8-1:0] win;
    always_comb begin
        for (int k = 0; k < NPPC; k++) begin
            for (int a = 0; a < N; a++) begin
                for (int b = 0; b < N; b++) begin
                    automatic int s = RB * NPPC + k - R + b;
                    automatic int beat = s / NPPC;
                    automatic int lane = s % NPPC;
                    win[k*N*N*8 + (N*N - 1 - (a*N + b))*8 +: 8] =
                        (beat < NB - 1) ? sr[beat + 1][a*PW + lane*8 +: 8] : cur[a*PW + lane*8 +: 8];
                end
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
                if (s_last != (j_s == wb_s - ONE)) framing_err <= 1'b1;
            end
            if (emits_row) begin
                for (int k = 0; k < NB - 1; k++) sr[k] <= (j_q == '0) ? spread(vec, 0) : sr[k + 1];
                sr[NB-1] <= cur;
            end
            if (produces) begin
                m_window <= win;
                m_valid  <= 1'b1;
                m_last   <= pass_end;
                m_user   <= (i_s == RS) && (j_s == RBS);
                m_eof    <= last_step;
            end
            if (wraps) begin
                i_q <= (last_step || (h_eff == '0)) ? '0 : i_q + 1'b1;
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
            for (int k = 0; k < NB; k++) sr[k] <= '0;
        end
    end

    wire unused = &{1'b0, j_in, j_in_next, w_m1};
endmodule

`resetall

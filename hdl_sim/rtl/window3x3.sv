// 3x3 sliding window over an 8-bit raster with cv2.BORDER_REPLICATE edges.
//
// The sequencer walks H+1 row passes of W+1 steps. Pass i consumes input row i (none on pass H,
// where the bottom row is replicated) and emits output row i-1; step W of a pass consumes nothing
// and emits the right-edge pixel. So one frame takes (H+1)*(W+1) steps and emits exactly H*W windows.
// Line buffers are block-RAM style: written at the step's column, read one step ahead into a
// register (the index the next step will use), with this step's write forwarded when both match.
`resetall
`timescale 1ns / 1ps
`default_nettype none

module window3x3 #(
    parameter int MAX_W = 1920,    // longest line the buffers hold
    parameter int DIM_W = 12       // width of the size registers
) (
    input  wire              clk,
    input  wire              rst,
    input  wire [DIM_W-1:0]  cfg_width,    // sampled at the start of each frame
    input  wire [DIM_W-1:0]  cfg_height,
    input  wire [7:0]        s_pixel,
    input  wire              s_valid,
    output wire              s_ready,
    input  wire              s_last,       // expected on the last pixel of each row
    output logic [71:0]      m_window,     // {p00,p01,p02,p10,...,p22}, p00 = top-left, MSB first
    output logic             m_valid,
    input  wire              m_ready,
    output logic             m_last,       // last pixel of an output row
    output logic             m_user,       // first pixel of an output frame
    output logic             m_eof,        // last pixel of an output frame
    output logic             framing_err   // sticky: an input TLAST was early or late
);
    initial begin
        if (MAX_W < 2 || MAX_W >= (1 << DIM_W)) $error("window3x3: MAX_W out of range for DIM_W");
    end

    localparam int AW = $clog2(MAX_W);
    logic [7:0] lb_a [MAX_W];   // row i-1
    logic [7:0] lb_b [MAX_W];   // row i-2
    logic [DIM_W-1:0] i_q, j_q, w_q, h_q;
    logic [23:0] c_prev, c_cur; // column vectors {top, mid, bot}

    wire at_start = (i_q == '0) && (j_q == '0);
    wire [DIM_W-1:0] w_eff = at_start ? cfg_width : w_q;
    wire [DIM_W-1:0] h_eff = at_start ? cfg_height : h_q;

    wire is_flush  = (j_q == w_eff);
    wire need_in   = !is_flush && (i_q < h_eff);
    wire produces  = (i_q != '0) && (j_q != '0);
    wire out_free  = !m_valid || m_ready;
    wire fire      = (need_in ? s_valid : 1'b1) && (produces ? out_free : 1'b1);
    assign s_ready = need_in && (produces ? out_free : 1'b1);

    wire [DIM_W-1:0] j_in = is_flush ? '0 : j_q;   // keep the index in range on flush steps
    wire [AW-1:0] jj = j_in[AW-1:0];
    wire unused_j_bits = &{1'b0, j_in};
    wire [7:0] a, b;            // lb_a[jj], lb_b[jj] of this step, from the registered reads
    wire [7:0] top = (i_q == 1) ? a : b;
    wire [7:0] bot = (i_q < h_eff) ? s_pixel : a;
    wire [23:0] vec = {top, a, bot};
    wire [23:0] right = is_flush ? c_cur : vec;

    // Column vectors to window rows: window row r takes byte r of each column vector.
    function automatic [71:0] assemble(input [23:0] l, input [23:0] c, input [23:0] rr);
        assemble = {l[23:16], c[23:16], rr[23:16], l[15:8], c[15:8], rr[15:8], l[7:0], c[7:0], rr[7:0]};
    endfunction

    wire last_step = is_flush && (i_q == h_eff);

    // The column index of the next step. The row length a step sees cannot change between two
    // steps (it is sampled at the frame start, where the index is 0 whatever it is), so w_eff holds.
    wire wraps = last_step || (h_eff == '0) || is_flush || ((i_q == '0) && (j_q == w_eff - 1));
    wire [DIM_W-1:0] j_next = rst ? '0 : !fire ? j_q : wraps ? '0 : j_q + 1'b1;
    wire [DIM_W-1:0] j_in_next = (j_next == w_eff) ? '0 : j_next;
    wire [AW-1:0] rd_idx = j_in_next[AW-1:0];
    wire lb_write = fire && need_in;
    logic [7:0] rd_a, rd_b, fwd_a, fwd_b;
    logic fwd;
    always_ff @(posedge clk) begin
        if (lb_write) begin
            lb_b[jj] <= a;
            lb_a[jj] <= s_pixel;
        end
        rd_a <= lb_a[rd_idx];
        rd_b <= lb_b[rd_idx];
        fwd <= lb_write && (jj == rd_idx);
        fwd_a <= s_pixel;
        fwd_b <= a;
    end
    assign a = fwd ? fwd_a : rd_a;
    assign b = fwd ? fwd_b : rd_b;
    wire unused_j_next = &{1'b0, j_in_next};

    always_ff @(posedge clk) begin
        if (m_valid && m_ready) m_valid <= 1'b0;
        if (at_start) begin
            w_q <= cfg_width;
            h_q <= cfg_height;
        end
        if (fire) begin
            if (need_in) begin
                if (s_last != (j_q == w_eff - 1)) framing_err <= 1'b1;
            end
            if (i_q != '0) begin
                if (j_q == '0) begin
                    c_prev <= vec;
                    c_cur  <= vec;
                end else if (!is_flush) begin
                    c_prev <= c_cur;
                    c_cur  <= vec;
                end
            end
            if (produces) begin
                m_window <= assemble(c_prev, c_cur, right);
                m_valid  <= 1'b1;
                m_last   <= is_flush;
                m_user   <= (i_q == 1) && (j_q == 1);
                m_eof    <= last_step;
            end
            // Advance: pass 0 has no flush step since it emits nothing.
            if (last_step || (h_eff == '0)) begin
                i_q <= '0;
                j_q <= '0;
            end else if (is_flush || ((i_q == '0) && (j_q == w_eff - 1))) begin
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
            c_prev <= '0;
            c_cur <= '0;
            m_window <= '0;
        end
    end
endmodule

`resetall

// dnn_tile: an int8 dataflow tile (one chiplet of a multi-chip-module accelerator) that runs a
// contiguous segment of a network's layers. Output-stationary P x P MAC array: each cycle one
// kernel tap of P input channels for P output channels of one output pixel (P*P MACs).
//
// Per image: receive the segment's input tensor, run every layer buffer to buffer (ping-pong),
// send the last layer's output. Arithmetic (runtime/dnn/reference.py is the bit-exact twin):
// int32 wrapping sums of int8 x int8, + bias, y = (acc * M + 2^(S-1)) >>> S, saturate to int8
// ([0, 127] with ReLU). Layers: k x k conv (stride, zero padding), fc (= conv whose kernel is the
// whole input), 2x2 max-pool (stride 2).
//
// Tensors are HWC in "entries" of P int8 channels (channel groups padded with zeros); an entry
// travels as P/4 stream words, byte 0 = lowest channel. A layer takes
//   1 + OH * OW * OG * (KH * KW * CG + 2)  cycles   (max-pool: KH = KW = 2, CG = 1),
// receive takes one cycle per word, send P/4 + 1 cycles per entry.
//
// Load stream (MODE = 1; runtime/dnn/tile_format.py writes it): sections of {id[31:28],
// count[27:0]} then count words. 1 descriptors (8 words per layer), 2 weights (P*P/4 words per
// entry, entry = (og, ky, kx, cg), byte o*P + i = weight[og*P + o][ky][kx][cg*P + i]), 3 bias,
// 4 multiplier, 5 shift (one word per output channel, in output-group order).
// Descriptor: d0 {relu[2], kind[1:0]: 0 conv/fc, 1 max-pool}, d1 {W, H}, d2 {OG, CG},
// d3 {OW, OH}, d4 {pad, stride, KW, KH} (bytes), d5 weight base entry, d6 parameter base group.
//
// Memories, each with one write and one read port so that synthesis maps them as it should: both
// activation buffers in one array, weights in a wide part plus a block RAM part (URAM = 1: the wide
// part is UltraRAM, 7 columns at P = 8, and the block RAM holds the entry's last byte), both in
// UltraRAM when URAM = 1 and in block RAM when URAM = 0 (dnn_ram.sv; 7-series parts have no
// UltraRAM); bias/multiplier/shift one block RAM per output lane, descriptors LUT-RAM.
// Tap, weight, parameter and output addresses advance by additions; two weights share one DSP.
//
// Registers: 0 ID, 1 WIDTH, 2 HEIGHT (unused), 3 STATUS (RO: bit0 bad load stream, bit1 descriptor
// out of range), 4 FRAMES (RO), 5 MODE (1 = the next packets are load streams), 6 NLAYERS (RO),
// 7 IMAGE_CYCLES (RO, last image, first word in to last word out), 8 INFO (RO {MAX_LAYERS, P}),
// 9 ACT_ENTRIES, 10 W_ENTRIES, 11 PG_ENTRIES (RO), 16 + l LAYER_CYCLES[l] (RO, last image).
`resetall
`timescale 1ns / 1ps
`default_nettype none

module dnn_tile #(
    parameter int DATA_W = 32,
    parameter int P = 8,                 // MAC array is P x P; a multiple of 4
    parameter int ACT_ENTRIES = 4096,    // entries per activation buffer (two buffers)
    parameter int W_ENTRIES = 1024,      // weight entries of P*P int8
    parameter int PG_ENTRIES = 64,       // output-channel groups of bias/multiplier/shift
    parameter int MAX_LAYERS = 16,
    parameter int URAM = 1,              // activations and wide weight part in UltraRAM (1) or block RAM (0)
    parameter logic [15:0] MODULE_ID = 16'd6
) (
    `include "rm_ports.svh"
);
    localparam int NREGS = 16 + MAX_LAYERS;
    localparam int WPE = P / 4;          // stream words per activation entry
    localparam int WPW = P * P / 4;      // load words per weight entry
    localparam int AA = $clog2(ACT_ENTRIES);
    localparam int WA = $clog2(W_ENTRIES);
    localparam int GA = $clog2(PG_ENTRIES);
    localparam int LA = $clog2(MAX_LAYERS);
    initial begin
        if (P % 4 != 0 || DATA_W < 32) $error("dnn_tile: P must be a multiple of 4 and DATA_W at least 32");
    end

    // ---- registers
    localparam logic [NREGS-1:0] RO_MASK = {{MAX_LAYERS{1'b1}}, 16'b0000_1111_1101_1001};
    function automatic logic [NREGS*32-1:0] reset_vals();
        logic [NREGS*32-1:0] v;
        v = '0;
        v[1*32 +: 32] = 32'd1;
        v[2*32 +: 32] = 32'd1;
        return v;
    endfunction
    wire [NREGS*32-1:0] regs;
    wire [NREGS-1:0] wr_stb_unused;
    logic [NREGS*32-1:0] ro;
    logic [31:0] frames_q, image_cycles_q;
    logic [31:0] layer_cycles_q [MAX_LAYERS];
    logic [LA:0] nlayers_q;
    logic bad_load_q, bad_desc_q;
    always_comb begin
        ro = '0;
        ro[0*32 +: 32] = {MODULE_ID, 16'h0001};
        ro[3*32 +: 32] = {30'd0, bad_desc_q, bad_load_q};
        ro[4*32 +: 32] = frames_q;
        ro[6*32 +: 32] = 32'(nlayers_q);
        ro[7*32 +: 32] = image_cycles_q;
        ro[8*32 +: 32] = {8'(MAX_LAYERS), 8'(P), 16'd0};
        ro[9*32 +: 32] = 32'(ACT_ENTRIES);
        ro[10*32 +: 32] = 32'(W_ENTRIES);
        ro[11*32 +: 32] = 32'(PG_ENTRIES);
        for (int l = 0; l < MAX_LAYERS; l++) ro[(16 + l)*32 +: 32] = layer_cycles_q[l];
    end
    axil_regfile #(.NREGS(NREGS), .ADDR_W(8), .RESET_VALS(reset_vals()), .RO_MASK(RO_MASK)) u_regs (
        .*, .ro_values(ro), .wr_stb(wr_stb_unused)
    );
    wire load_mode = regs[5*32];

    // ---- memories (dnn_ram: one write and one read port, as block RAM / UltraRAM need)
    // Weights: UltraRAM is 72 bits wide, so an entry's top 9 * (P*P/9) bytes fill whole UltraRAM
    // columns and the remaining bytes sit in block RAM beside them (P = 8: 7 columns + 8 bits).
    localparam int WLO = ((P * P) % 9 == 0 ? 9 : (P * P) % 9) * 8;   // bits kept in block RAM

    // ---- control
    typedef enum logic [2:0] {S_RECV, S_SETUP, S_ISSUE, S_DRAIN, S_WRITE, S_SEND_RD, S_SEND} state_t;
    state_t state;
    logic [LA:0] layer;
    logic src;                           // buffer the current layer reads; it writes !src
    logic [31:0] image_count;            // cycles since the image's first word
    logic counting;

    // Current layer's descriptor (latched in S_SETUP).
    logic pool, relu;
    logic [15:0] in_w, cg_n, og_n, out_h, out_w;
    logic [15:0] in_h;
    logic [7:0] kh, kw, stride, pad;
    logic [31:0] wbase, pbase;

    // ---- receive and load
    logic [3:0] sec_id;
    logic [27:0] sec_left;
    logic [31:0] sec_idx;
    logic [31:0] recv_words;
    logic [P*8-1:0] entry_q;             // activation entry being assembled (a shift register)
    logic [P*P*8-1:0] went_q;            // weight entry being assembled (a shift register)
    wire recv_fire = s_axis_tvalid && s_axis_tready;
    assign s_axis_tready = (state == S_RECV);
    wire [31:0] w_in = s_axis_tdata[31:0];   // a wider stream (NPPC 4) carries the word in its low lane
    wire [31:0] wlane = sec_idx % 32'(WPW);
    wire [31:0] went = sec_idx / 32'(WPW);
    wire [31:0] plane = sec_idx % 32'(P);
    wire [31:0] pgrp = sec_idx / 32'(P);
    wire load_word = (state == S_RECV) && recv_fire && load_mode && sec_left != 0;
    // An entry's words arrive lowest lane first: shift each in from the top.
    logic [P*8-1:0] entry_next;
    logic [P*P*8-1:0] went_next;
    always_comb begin
        entry_next = entry_q >> 32;
        entry_next[P*8-32 +: 32] = w_in;
        went_next = went_q >> 32;
        went_next[P*P*8-32 +: 32] = w_in;
    end

    // Descriptors: one memory per word d0..d6 of a layer (d7 is unused), written at a constant lane.
    logic [31:0] dsc [7];                // the current layer's descriptor words
    for (genvar k = 0; k < 7; k++) begin : g_desc
        logic [31:0] mem [MAX_LAYERS];
        always_ff @(posedge clk) begin
            if (load_word && sec_id == fpgashare_pkg::SEC_DESC && sec_idx < 32'(MAX_LAYERS * 8) && sec_idx[2:0] == 3'(k))
                mem[sec_idx[LA+2:3]] <= w_in;
        end
        assign dsc[k] = mem[layer[LA-1:0]];
    end
    wire [31:0] d0 = dsc[0], d1 = dsc[1], d2 = dsc[2], d3 = dsc[3], d4 = dsc[4];
    // The first layer's input size, kept apart for the receive counters.
    logic [15:0] l0_h, l0_w, l0_cg;
    // Receive position (entry word, channel group, column, row) of the first layer's input.
    logic [15:0] rx_c, rx_x, rx_y;
    wire [LA:0] last_l = nlayers_q - 1'b1;
    wire rx_word_last = (recv_words % 32'(WPE)) == 32'(WPE - 1);
    wire rx_last = rx_word_last && rx_c == l0_cg - 1 && rx_x == l0_w - 1 && rx_y == l0_h - 1;

    // ---- compute loop counters; addresses advance by additions (no multiplier per tap)
    logic [15:0] oy, ox, og, ky, kx, cg;
    logic signed [25:0] iy0, ix0;        // input pixel of tap (0, 0): out * stride - pad
    wire signed [25:0] iy = iy0 + $signed(26'(ky));
    wire signed [25:0] ix = ix0 + $signed(26'(kx));
    wire in_bounds = iy >= 0 && ix >= 0 && iy < $signed(26'(in_h)) && ix < $signed(26'(in_w));
    // Activation entry (iy * in_w + ix) * cg_n + channel group, kept for: the tap (a_cur), the
    // tap row's start (a_trow), the output pixel (a_pix, with the pool's group a_pixg) and the row.
    logic [31:0] a_cur, a_trow, a_pix, a_pixg, a_line;
    logic [31:0] row_len, step_x, step_y;   // entries per input row, per output column / row
    logic [31:0] w_addr;                 // wbase + ((og * kh + ky) * kw + kx) * cg_n + cg
    logic [31:0] p_addr;                 // pbase + og
    logic [31:0] d_addr;                 // (oy * out_w + ox) * og_n + og
    wire last_tap = (kx == 16'(kw) - 1) && (ky == 16'(kh) - 1) && (pool || cg == cg_n - 1);
    wire last_out = (og == og_n - 1) && (ox == out_w - 1) && (oy == out_h - 1);
    // Setup products, once per layer.
    wire [31:0] su_row_len = 32'(d1[31:16]) * 32'(d2[15:0]);
    wire [31:0] su_pad = 32'(d4[31:24]);
    wire [31:0] su_start = -(su_pad * (su_row_len + 32'(d2[15:0])));

    // MAC stage (one cycle after issue).
    logic b_valid, b_first, b_oob;
    logic [P*8-1:0] act_q;               // the activation read port's register
    wire [P*8-1:0] a_q = act_q;
    logic [P*P*8-1:0] w_q;
    logic [P*32-1:0] bias_q, mult_q;
    logic [P*6-1:0] shift_q;
    logic signed [31:0] acc [P];
    logic signed [7:0] pmax [P];

    // Bias, multiplier and shift: one block RAM per output lane, {shift, multiplier, bias} per
    // group, each field written at its constant place.
    for (genvar o = 0; o < P; o++) begin : g_lane
        (* ram_style = "block" *) logic [69:0] prm [PG_ENTRIES];
        wire we = load_word && pgrp < 32'(PG_ENTRIES) && plane == 32'(o);
        always_ff @(posedge clk) begin
            if (we && sec_id == fpgashare_pkg::SEC_BIAS) prm[pgrp[GA-1:0]][31:0] <= w_in;
            if (we && sec_id == fpgashare_pkg::SEC_MULT) prm[pgrp[GA-1:0]][63:32] <= w_in;
            if (we && sec_id == fpgashare_pkg::SEC_SHIFT) prm[pgrp[GA-1:0]][69:64] <= w_in[5:0];
            if (state == S_ISSUE) {shift_q[o*6 +: 6], mult_q[o*32 +: 32], bias_q[o*32 +: 32]} <= prm[GA'(p_addr)];
        end
    end

    // Dot products: two int8 weights share one multiplier (WP486's INT8 packing),
    // (wh * 2^18 + wl) * a, summed over up to 8 inputs; the low 18 bits then hold sum(wl * a),
    // which lies in [-130048, 131072], and the rest sum(wh * a).
    localparam int CHUNK = 8;
    function automatic logic signed [31:0] sext18(input logic [17:0] v);
        return 32'($signed(v));
    endfunction
    // The P dot products of a MAC step, output k in [32k+31:32k].
    function automatic logic [P*32-1:0] dot_products(input logic [P*P*8-1:0] w, input logic [P*8-1:0] a);
        logic [P*32-1:0] d;
        d = '0;
        for (int k = 0; k < P / 2; k++) begin
            for (int c0 = 0; c0 < P; c0 += CHUNK) begin
                logic signed [39:0] t;
                logic [17:0] r;
                logic neg;
                t = '0;
                for (int i = c0; i < c0 + CHUNK && i < P; i++) begin
                    logic [7:0] wl, wh;
                    logic signed [26:0] pk;
                    wl = w[((2*k)*P + i)*8 +: 8];
                    wh = w[((2*k + 1)*P + i)*8 +: 8];
                    pk = {9'($signed(wh)) - 9'(wl[7]), {10{wl[7]}}, wl};
                    t = t + pk * $signed(a[i*8 +: 8]);
                end
                r = t[17:0];
                neg = r > 18'd131072;
                d[(2*k)*32 +: 32] = d[(2*k)*32 +: 32] + (neg ? sext18(r) : 32'(r));
                d[(2*k+1)*32 +: 32] = d[(2*k+1)*32 +: 32] + 32'($signed(t[39:18])) + 32'(neg);
            end
        end
        return d;
    endfunction
    // Simulation speed only: the products are used only while b_valid, and Verilator evaluates this
    // block every cycle the tile is clocked (idle included), so the simulator skips it otherwise;
    // synthesis (no VERILATOR define) sees the plain array.
`ifdef VERILATOR
    wire dot_needed = b_valid;
`else
    wire dot_needed = 1'b1;
`endif
    logic [P*32-1:0] dots;
    always_comb dots = dot_needed ? dot_products(w_q, a_q) : '0;
    logic signed [31:0] dot [P];
    for (genvar o = 0; o < P; o++) begin : g_dot
        assign dot[o] = $signed(dots[o*32 +: 32]);
    end

    // One output lane: the accumulator plus bias, times the multiplier, rounded and shifted, saturated
    // to int8 (ReLU clamps at 0), or the pool's maximum.
    function automatic logic [7:0] requantize(input logic signed [31:0] acc_o, input logic [31:0] bias,
                                              input logic [31:0] mult, input logic [5:0] s,
                                              input logic signed [7:0] pmax_o, input logic is_pool,
                                              input logic is_relu);
        logic signed [31:0] sum;
        logic signed [63:0] prod, y;
        sum = acc_o + $signed(bias);
        prod = 64'(sum) * $signed({32'd0, mult});
        y = (prod + (64'sd1 <<< (s - 6'd1))) >>> s;
        if (is_pool) return pmax_o;
        if (y > 127) return 8'sd127;
        if (y < (is_relu ? 0 : -128)) return is_relu ? 8'sd0 : -8'sd128;
        return y[7:0];
    endfunction
    logic [P*8-1:0] out_entry;           // requantized (or pooled) result of the output being written
`ifdef VERILATOR
    wire out_needed = state == S_WRITE;   // as dot_needed: written to memory only in S_WRITE
`else
    wire out_needed = 1'b1;
`endif
    always_comb begin
        for (int o = 0; o < P; o++)
            out_entry[o*8 +: 8] = out_needed ? requantize(acc[o], bias_q[o*32 +: 32], mult_q[o*32 +: 32],
                                                          shift_q[o*6 +: 6], pmax[o], pool, relu) : 8'd0;
    end

    // ---- send
    logic [31:0] send_entry;
    logic [$clog2(WPE + 1)-1:0] send_word;
    assign m_axis_tvalid = (state == S_SEND);
    assign m_axis_tdata = DATA_W'(act_q[32'(send_word) * 32 +: 32]);
    // The last layer's counters walk its output again while sending: last_out marks the last entry.
    assign m_axis_tlast = (state == S_SEND) && last_out && (32'(send_word) == WPE - 1);
    assign m_axis_tuser = (state == S_SEND) && (send_entry == 0) && (send_word == 0);
    wire send_fire = m_axis_tvalid && m_axis_tready;

    // ---- the activation memory's one write port (receive, or a layer's output) and one read port
    wire [AA-1:0] recv_entry = AA'(recv_words / 32'(WPE));
    wire act_we = (state == S_WRITE) ? d_addr < 32'(ACT_ENTRIES)
        : (state == S_RECV && recv_fire && !load_mode && rx_word_last && recv_words / 32'(WPE) < 32'(ACT_ENTRIES));
    wire [AA:0] act_wa = (state == S_WRITE) ? {!src, AA'(d_addr)} : {1'b0, recv_entry};
    wire [P*8-1:0] act_wd = (state == S_WRITE) ? out_entry : entry_next;
    wire [AA:0] act_ra = {src, (state == S_SEND_RD) ? AA'(send_entry) : AA'(a_cur)};
    // act holds both ping-pong buffers: address {buffer, entry}.
    dnn_ram #(.WIDTH(P*8), .DEPTH(2*ACT_ENTRIES), .URAM(URAM)) u_act (
        .clk, .we(act_we), .wa(act_wa), .wd(act_wd),
        .re(state == S_ISSUE || state == S_SEND_RD), .ra(act_ra), .rd(act_q)
    );
    wire w_we = load_word && sec_id == fpgashare_pkg::SEC_WEIGHTS && wlane == WPW - 1 && went < 32'(W_ENTRIES);
    dnn_ram #(.WIDTH(P*P*8-WLO), .DEPTH(W_ENTRIES), .URAM(URAM)) u_wmem_hi (
        .clk, .we(w_we), .wa(went[WA-1:0]), .wd(went_next[P*P*8-1:WLO]),
        .re(state == S_ISSUE), .ra(WA'(w_addr)), .rd(w_q[P*P*8-1:WLO])
    );
    dnn_ram #(.WIDTH(WLO), .DEPTH(W_ENTRIES), .URAM(0)) u_wmem_lo (
        .clk, .we(w_we), .wa(went[WA-1:0]), .wd(went_next[WLO-1:0]),
        .re(state == S_ISSUE), .ra(WA'(w_addr)), .rd(w_q[WLO-1:0])
    );

    // Events the blocks below share.
    wire image_word = (state == S_RECV) && recv_fire && !load_mode;   // a word of an image's input
    wire image_start = image_word && nlayers_q != 0 && rx_last;       // its last word: compute
    wire send_last = (state == S_SEND) && send_fire && 32'(send_word) == WPE - 1 && last_out;
    wire issue_bad = (in_bounds && a_cur >= 32'(ACT_ENTRIES)) ||
                     (!pool && (w_addr >= 32'(W_ENTRIES) || p_addr >= 32'(PG_ENTRIES)));

    // ---- load stream: section headers, positions within sections, the first layer's input size
    always_ff @(posedge clk) begin : load_parser
        if ((state == S_RECV) && recv_fire && load_mode) begin
            if (sec_left == 0) begin
                sec_id <= w_in[31:28];
                sec_left <= w_in[27:0];
                sec_idx <= '0;
                if (w_in[31:28] == fpgashare_pkg::SEC_DESC) nlayers_q <= '0;
                if (w_in[31:28] == 0 || w_in[31:28] > fpgashare_pkg::SEC_SHIFT) bad_load_q <= 1'b1;
            end else begin
                sec_left <= sec_left - 1;
                sec_idx <= sec_idx + 1;
                case (sec_id)
                    fpgashare_pkg::SEC_DESC: if (sec_idx < 32'(MAX_LAYERS * 8)) begin
                        if (sec_idx == 32'd1) {l0_w, l0_h} <= w_in;
                        if (sec_idx == 32'd2) l0_cg <= w_in[15:0];
                        if (sec_idx[2:0] == 3'd7) nlayers_q <= (LA+1)'(sec_idx[31:3] + 1);
                    end else bad_load_q <= 1'b1;
                    fpgashare_pkg::SEC_WEIGHTS: begin
                        went_q <= went_next;
                        if (wlane == WPW - 1 && went >= 32'(W_ENTRIES)) bad_load_q <= 1'b1;
                    end
                    fpgashare_pkg::SEC_BIAS, fpgashare_pkg::SEC_MULT, fpgashare_pkg::SEC_SHIFT:
                        if (pgrp >= 32'(PG_ENTRIES)) bad_load_q <= 1'b1;
                    default: ;
                endcase
            end
        end
        if (rst) begin
            {sec_id, sec_left, sec_idx} <= '0;
            bad_load_q <= 1'b0;
            nlayers_q <= '0;
        end
    end

    // ---- image receive: the entry being assembled and the position in the first layer's input
    always_ff @(posedge clk) begin : image_receive
        if (image_word) begin
            entry_q <= entry_next;
            recv_words <= recv_words + 1;
            if (rx_word_last) begin
                if (rx_c != l0_cg - 1) rx_c <= rx_c + 1;
                else begin
                    rx_c <= '0;
                    if (rx_x != l0_w - 1) rx_x <= rx_x + 1;
                    else begin
                        rx_x <= '0;
                        rx_y <= rx_y + 1;
                    end
                end
            end
            if (nlayers_q == 0) begin        // no network loaded: drop the word
                recv_words <= '0;
                {rx_c, rx_x, rx_y} <= '0;
            end else if (rx_last) {rx_c, rx_x, rx_y} <= '0;
        end
        if (send_last) recv_words <= '0;
        if (rst) begin
            recv_words <= '0;
            {rx_c, rx_x, rx_y} <= '0;
        end
    end

    // ---- statistics and error flags of the registers
    always_ff @(posedge clk) begin : statistics
        if (counting) image_count <= image_count + 1;
        if (state != S_RECV && state != S_SEND && state != S_SEND_RD && layer <= last_l)
            layer_cycles_q[layer[LA-1:0]] <= layer_cycles_q[layer[LA-1:0]] + 1;
        if (image_word) begin
            if (recv_words == 0) begin
                counting <= 1'b1;
                image_count <= 32'd1;
                for (int l = 0; l < MAX_LAYERS; l++) layer_cycles_q[l] <= '0;
            end
            if (nlayers_q == 0) begin
                bad_desc_q <= 1'b1;
                counting <= 1'b0;
            end
        end
        if (state == S_ISSUE && issue_bad) bad_desc_q <= 1'b1;
        if (state == S_WRITE && d_addr >= 32'(ACT_ENTRIES)) bad_desc_q <= 1'b1;
        if (send_last) begin
            counting <= 1'b0;
            image_cycles_q <= image_count + 1;
            frames_q <= frames_q + 1;
        end
        if (rst) begin
            {counting, image_count, image_cycles_q, frames_q} <= '0;
            bad_desc_q <= 1'b0;
            for (int l = 0; l < MAX_LAYERS; l++) layer_cycles_q[l] <= '0;
        end
    end

    // ---- MAC / max stage: one cycle behind issue
    always_ff @(posedge clk) begin : mac_stage
        b_valid <= state == S_ISSUE;
        if (state == S_ISSUE) begin
            b_first <= (ky == 0) && (kx == 0) && (pool || cg == 0);
            b_oob <= !in_bounds;
        end
        if (b_valid) begin
            for (int o = 0; o < P; o++) begin
                logic signed [7:0] m;
                m = b_first ? -8'sd128 : pmax[o];
                acc[o] <= (b_first ? 32'sd0 : acc[o]) + (b_oob ? 32'sd0 : dot[o]);
                if ($signed(a_q[o*8 +: 8]) > m) m = $signed(a_q[o*8 +: 8]);
                pmax[o] <= m;
            end
        end
        if (rst) b_valid <= 1'b0;
    end

    // ---- sequencer: layer by layer, output by output, tap by tap; addresses by additions
    always_ff @(posedge clk) begin : sequencer
        case (state)
            S_RECV: if (image_start) begin
                state <= S_SETUP;
                layer <= '0;
                src <= 1'b0;
            end
            S_SETUP: begin
                pool <= d0[0];
                relu <= d0[2];
                in_h <= d1[15:0];
                in_w <= d1[31:16];
                cg_n <= d2[15:0];
                og_n <= d2[31:16];
                out_h <= d3[15:0];
                out_w <= d3[31:16];
                kh <= d4[7:0];
                kw <= d4[15:8];
                stride <= d4[23:16];
                pad <= d4[31:24];
                wbase <= dsc[5];
                pbase <= dsc[6];
                w_addr <= dsc[5];
                p_addr <= dsc[6];
                d_addr <= '0;
                row_len <= su_row_len;
                step_x <= 32'(d4[23:16]) * 32'(d2[15:0]);
                step_y <= 32'(d4[23:16]) * su_row_len;
                iy0 <= -$signed(26'(d4[31:24]));
                ix0 <= -$signed(26'(d4[31:24]));
                {a_cur, a_trow, a_pix, a_pixg, a_line} <= {5{su_start}};
                {oy, ox, og, ky, kx, cg} <= '0;
                state <= S_ISSUE;
            end
            S_ISSUE: begin
                w_addr <= w_addr + 1;
                if (last_tap) begin
                    {ky, kx, cg} <= '0;
                    state <= S_DRAIN;
                end else if (!pool && cg != cg_n - 1) begin
                    cg <= cg + 1;
                    a_cur <= a_cur + 1;
                end else begin
                    cg <= '0;
                    if (kx != 16'(kw) - 1) begin
                        kx <= kx + 1;
                        a_cur <= a_cur + (pool ? 32'(cg_n) : 32'd1);
                    end else begin
                        kx <= '0;
                        ky <= ky + 1;
                        a_trow <= a_trow + row_len;
                        a_cur <= a_trow + row_len;
                    end
                end
            end
            S_DRAIN: state <= S_WRITE;
            S_WRITE: begin
                if (last_out) begin
                    {oy, ox, og} <= '0;
                    layer <= layer + 1'b1;
                    src <= !src;
                    if (layer == last_l) begin
                        state <= S_SEND_RD;
                        send_entry <= '0;
                    end else state <= S_SETUP;
                end else begin
                    state <= S_ISSUE;
                    // Next output (og fastest, then ox, then oy) and the addresses that follow it.
                    d_addr <= d_addr + 1;
                    if (og != og_n - 1) begin
                        og <= og + 1;
                        p_addr <= p_addr + 1;
                        a_cur <= pool ? a_pixg + 1 : a_pix;
                        a_trow <= pool ? a_pixg + 1 : a_pix;
                        a_pixg <= a_pixg + 1;
                    end else begin
                        og <= '0;
                        p_addr <= pbase;
                        w_addr <= wbase;
                        if (ox != out_w - 1) begin
                            ox <= ox + 1;
                            ix0 <= ix0 + $signed(26'(stride));
                            {a_cur, a_trow, a_pix, a_pixg} <= {4{a_pix + step_x}};
                        end else begin
                            ox <= '0;
                            oy <= oy + 1;
                            ix0 <= -$signed(26'(pad));
                            iy0 <= iy0 + $signed(26'(stride));
                            a_line <= a_line + step_y;
                            {a_cur, a_trow, a_pix, a_pixg} <= {4{a_line + step_y}};
                        end
                    end
                end
            end
            S_SEND_RD: begin
                send_word <= '0;
                state <= S_SEND;
            end
            S_SEND: if (send_fire) begin
                if (32'(send_word) != WPE - 1) send_word <= send_word + 1'b1;
                else if (!last_out) begin
                    send_entry <= send_entry + 1;
                    state <= S_SEND_RD;
                    if (og != og_n - 1) og <= og + 1;
                    else begin
                        og <= '0;
                        if (ox != out_w - 1) ox <= ox + 1;
                        else begin
                            ox <= '0;
                            oy <= oy + 1;
                        end
                    end
                end else state <= S_RECV;
            end
            default: state <= S_RECV;
        endcase
        if (rst) begin
            state <= S_RECV;
            {layer, src} <= '0;
        end
    end

    wire unused = &{1'b0, wr_stb_unused, regs, s_axis_tdata, s_axis_tlast, s_axis_tuser, d0[31:3], d0[1]};
endmodule

`resetall

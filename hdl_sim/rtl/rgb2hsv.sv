// rgb2hsv: 24-bit RGB (R in tdata[7:0], G [15:8], B [23:16]) to H [7:0], S [15:8], V [23:16], exactly
// cv2.cvtColor(COLOR_RGB2HSV) on 8-bit (H in 0..179). OpenCV's integer rule with 12-bit reciprocal tables:
//   V = max, d = V - min, S = (d * SDIV[V] + 2^11) >> 12, SDIV[i] = round(255 * 2^12 / i),
//   H' = G - B (V == R), B - R + 2d (V == G), R - G + 4d (else), H = (H' * HDIV[d] + 2^11) >> 12,
//   HDIV[i] = round(180 * 2^12 / (6 i)), H += 180 if negative; round is half-to-even (cvRound);
//   SDIV[0] = HDIV[0] = 0. Checked against cv2 on all 2^24 colours (runtime/catalogue/vision_ref.py's golden).
// At NPPC > 1 a beat carries NPPC pixels in 32-bit lanes, in and out (pixel k in tdata[32k+23:32k]).
// Registers: 0 ID (RO), 1 WIDTH, 2 HEIGHT, 3 STATUS (RO), 4 FRAMES (RO; frames begun).
`resetall
`timescale 1ns / 1ps
`default_nettype none

module rgb2hsv #(
    parameter int DATA_W = 24,       // input and output width; both need 24 bits (32 * NPPC at NPPC > 1)
    parameter int NPPC = 1,          // pixels per beat, each in a 32-bit lane
    parameter logic [15:0] MODULE_ID = 16'd10
) (
    `include "rm_ports.svh"
);
    initial begin
        if (DATA_W < 32 * (NPPC - 1) + 24) $error("rgb2hsv: DATA_W must hold NPPC 32-bit lanes of 24-bit pixels");
    end
    localparam int NREGS = 5;
    localparam logic [NREGS*32-1:0] RESET_VALS = {32'd0, 32'd0, 32'd480, 32'd640, 32'd0};

    // round(num / den), ties to even, as cvRound of the double quotient.
    function automatic int round_div(input int num, input int den);
        int q, r;
        q = num / den;
        r = num % den;
        if (2 * r > den || (2 * r == den && q[0])) q = q + 1;
        return q;
    endfunction
    function automatic logic [256*20-1:0] sdiv_rom();
        logic [256*20-1:0] t;
        t = '0;
        for (int i = 1; i < 256; i++) t[i*20 +: 20] = 20'(round_div(255 << 12, i));
        return t;
    endfunction
    function automatic logic [256*17-1:0] hdiv_rom();
        logic [256*17-1:0] t;
        t = '0;
        for (int i = 1; i < 256; i++) t[i*17 +: 17] = 17'(round_div(180 << 12, 6 * i));
        return t;
    endfunction
    localparam logic [256*20-1:0] SDIV = sdiv_rom();
    localparam logic [256*17-1:0] HDIV = hdiv_rom();

    wire [NREGS*32-1:0] regs;
    // .* connects clk, rst and the s_axil_* port by name.
    vision_regs #(.NREGS(NREGS), .MODULE_ID(MODULE_ID), .RESET_VALS(RESET_VALS)) u_regs (
        .*, .status(32'd0), .frame_tick(s_axis_tvalid && s_axis_tready && s_axis_tuser)
    );

    // One pixel: {V, S, H}.
    function automatic logic [23:0] hsv_of(input logic [7:0] r, input logic [7:0] g, input logic [7:0] b);
        logic [7:0] v, vmin, d, s, h;
        logic signed [11:0] hp;
        logic signed [31:0] h_acc;
        v = (r > g) ? r : g;
        if (b > v) v = b;
        vmin = (r < g) ? r : g;
        if (b < vmin) vmin = b;
        d = v - vmin;
        s = 8'((28'(d) * 28'(SDIV[v*20 +: 20]) + 28'd2048) >> 12);
        if (v == r) hp = $signed({4'd0, g}) - $signed({4'd0, b});
        else if (v == g) hp = $signed({4'd0, b}) - $signed({4'd0, r}) + $signed({3'd0, d, 1'b0});
        else hp = $signed({4'd0, r}) - $signed({4'd0, g}) + $signed({2'd0, d, 2'b0});
        h_acc = (32'(hp) * $signed({15'd0, HDIV[d*17 +: 17]}) + 32'sd2048) >>> 12;
        if (h_acc < 0) h_acc = h_acc + 32'sd180;
        h = h_acc[7:0];
        return {v, s, h};
    endfunction

    // pixel_stage counts bytes: four per 32-bit lane (the fourth zero).
    logic [NPPC*32-1:0] y;
    always_comb begin
        for (int k = 0; k < NPPC; k++)
            y[k*32 +: 32] = {8'd0, hsv_of(s_axis_tdata[k*32 +: 8], s_axis_tdata[k*32+8 +: 8], s_axis_tdata[k*32+16 +: 8])};
    end
    pixel_stage #(.DATA_W(DATA_W), .NPPC(4 * NPPC)) u_out (
        .clk, .rst, .s_pixel(y), .s_valid(s_axis_tvalid), .s_ready(s_axis_tready), .s_last(s_axis_tlast),
        .s_user(s_axis_tuser), .m_tdata(m_axis_tdata), .m_tvalid(m_axis_tvalid), .m_tready(m_axis_tready),
        .m_tlast(m_axis_tlast), .m_tuser(m_axis_tuser)
    );

    wire unused = &{1'b0, s_axis_tdata, regs};
endmodule

`resetall

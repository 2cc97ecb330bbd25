// conv3x3: signed 3x3 convolution of an 8-bit raster, cv2.BORDER_REPLICATE edges.
// out = sat8(opt_abs(floor((S * MUL + round) / 2^SHIFT))), S = sum(K[r][c] * p[r][c]),
// round = 2^(SHIFT-1) when SHIFT > 0. Presets (Gaussian, box, Sobel, ...) are register values.
//
// Registers (word index): 0 ID (RO), 1 WIDTH, 2 HEIGHT, 3 STATUS (RO; bit0 framing error),
// 4 FRAMES (RO), 5..13 K0..K8 (signed 16-bit, row-major), 14 MUL (unsigned 16-bit),
// 15 SHIFT (0..31), 16 FLAGS (bit0 ABS).
`resetall
`timescale 1ns / 1ps
`default_nettype none

module conv3x3 #(
    parameter int DATA_W = 8,        // stream width; the pixel is tdata[7:0]
    parameter int MAX_W = 1920,
    parameter logic [15:0] MODULE_ID = 16'd1
) (
    `include "rm_ports.svh"
);
    localparam int NREGS = 17;
    // Identity kernel by default: K4 = 1, MUL = 1; 640x480 frames.
    function automatic logic [NREGS*32-1:0] reset_vals();
        logic [NREGS*32-1:0] v;
        v = '0;
        v[1*32 +: 32] = 32'd640;
        v[2*32 +: 32] = 32'd480;
        v[9*32 +: 32] = 32'd1;
        v[14*32 +: 32] = 32'd1;
        return v;
    endfunction
    localparam logic [NREGS*32-1:0] RESET_VALS = reset_vals();
    localparam logic [NREGS-1:0] RO_MASK = 17'b0_0000_0000_0001_1001;

    wire [NREGS*32-1:0] regs;
    wire [NREGS-1:0] wr_stb_unused;  // no register here acts on a write strobe
    logic [NREGS*32-1:0] ro;
    logic [31:0] frames_q;
    wire framing_err;

    always_comb begin
        ro = '0;
        ro[0*32 +: 32] = {MODULE_ID, 16'h0001};
        ro[3*32 +: 32] = {31'd0, framing_err};
        ro[4*32 +: 32] = frames_q;
    end

    // .* connects clk, rst, the s_axil_* port and regs by name.
    axil_regfile #(.NREGS(NREGS), .ADDR_W(8), .RESET_VALS(RESET_VALS), .RO_MASK(RO_MASK)) u_regs (
        .*, .ro_values(ro), .wr_stb(wr_stb_unused)
    );

    wire [71:0] win;
    wire win_valid, win_last, win_user, win_eof;

    window3x3 #(.MAX_W(MAX_W)) u_win (
        .clk, .rst,
        .cfg_width(regs[1*32 +: 12]), .cfg_height(regs[2*32 +: 12]),
        .s_pixel(s_axis_tdata[7:0]), .s_valid(s_axis_tvalid), .s_ready(s_axis_tready),
        .s_last(s_axis_tlast),
        .m_window(win), .m_valid(win_valid), .m_ready(m_axis_tready),
        .m_last(win_last), .m_user(win_user), .m_eof(win_eof), .framing_err
    );

    // Window byte 8 is p00 (top-left), byte 0 is p22, so K[n] pairs with byte 8-n.
    logic signed [31:0] acc;
    logic signed [49:0] scaled;
    logic signed [49:0] shifted;
    logic signed [49:0] mag;
    logic [7:0] pix;
    wire [4:0] shift = regs[15*32 +: 5];
    always_comb begin
        acc = '0;
        for (int n = 0; n < 9; n++) begin
            acc = acc + $signed({1'b0, win[(8-n)*8 +: 8]}) * $signed(regs[(5+n)*32 +: 16]);
        end
        scaled = $signed(acc) * $signed({1'b0, regs[14*32 +: 16]});
        if (shift != 0) scaled = scaled + (50'sd1 <<< (shift - 5'd1));
        shifted = scaled >>> shift;
        mag = (regs[16*32] && shifted < 0) ? -shifted : shifted;
        pix = (mag < 0) ? 8'd0 : (mag > 255) ? 8'd255 : mag[7:0];
    end

    assign m_axis_tdata  = DATA_W'(pix);
    assign m_axis_tvalid = win_valid;
    assign m_axis_tlast  = win_last;
    assign m_axis_tuser  = win_user;

    always_ff @(posedge clk) begin
        if (win_valid && m_axis_tready && win_eof) frames_q <= frames_q + 1;
        if (rst) frames_q <= '0;
    end

    wire unused = &{1'b0, wr_stb_unused, s_axis_tuser, s_axis_tdata, regs};
endmodule

`resetall

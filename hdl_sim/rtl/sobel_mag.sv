// sobel_mag: |Gx| + |Gy| of the 3x3 Sobel kernels, saturated to 8 bits, cv2.BORDER_REPLICATE edges.
// Registers: 0 ID (RO), 1 WIDTH, 2 HEIGHT, 3 STATUS (RO; bit0 framing error), 4 FRAMES (RO).
`resetall
`timescale 1ns / 1ps
`default_nettype none

module sobel_mag #(
    parameter int DATA_W = 8,
    parameter int MAX_W = 1920,
    parameter logic [15:0] MODULE_ID = 16'd2
) (
    `include "rm_ports.svh"
);
    localparam int NREGS = 5;
    localparam logic [NREGS*32-1:0] RESET_VALS = {32'd0, 32'd0, 32'd480, 32'd640, 32'd0};
    localparam logic [NREGS-1:0] RO_MASK = 5'b11001;

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

    // p(r,c) = window byte 8 - (3r + c).
    function automatic signed [11:0] p(input [71:0] w, input int r, input int c);
        p = $signed({4'b0, w[(8 - (3*r + c))*8 +: 8]});
    endfunction
    logic signed [11:0] gx, gy;
    logic [11:0] mag;
    always_comb begin
        gx = (p(win,0,2) - p(win,0,0)) + 2*(p(win,1,2) - p(win,1,0)) + (p(win,2,2) - p(win,2,0));
        gy = (p(win,2,0) - p(win,0,0)) + 2*(p(win,2,1) - p(win,0,1)) + (p(win,2,2) - p(win,0,2));
        mag = 12'(gx < 0 ? -gx : gx) + 12'(gy < 0 ? -gy : gy);
    end

    assign m_axis_tdata  = DATA_W'(mag > 255 ? 8'd255 : mag[7:0]);
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

// moments: the raw moments m00, m10, m01 of a binary mask (any nonzero pixel counts as 1), as
// cv2.moments(mask, binaryImage=True), so a tracker reads the blob's centroid (m10/m00, m01/m00)
// from registers instead of the mask. The pixels pass through unchanged (one output register), so
// the module can end a chain or sit inside one. The sums cover the frame's every accepted pixel and
// are latched into the result registers when its last pixel is accepted; FRAMES counts frames
// completed, so software reads the results once FRAMES has advanced.
// Registers: 0 ID (RO), 1 WIDTH, 2 HEIGHT, 3 STATUS (RO; bit0 framing error), 4 FRAMES (RO),
// 5 M00, 6 M10_LO, 7 M10_HI, 8 M01_LO, 9 M01_HI (RO; 64-bit sums split in 32-bit words).
`resetall
`timescale 1ns / 1ps
`default_nettype none

module moments #(
    parameter int DATA_W = 8,        // stream width; pixel k of a beat is tdata[8k+7:8k]
    parameter int NPPC = 1,          // pixels per beat (rows padded to whole beats; spare lanes not counted)
    parameter logic [15:0] MODULE_ID = 16'd12
) (
    `include "rm_ports.svh"
);
    localparam int NREGS = 10;
    localparam logic [NREGS*32-1:0] RESET_VALS = {32'd0, 32'd0, 32'd0, 32'd0, 32'd0, 32'd0, 32'd0,
                                                  32'd480, 32'd640, 32'd0};
    localparam logic [NREGS-1:0] RO_MASK = 10'b11_1111_1001;

    wire [NREGS*32-1:0] regs;
    logic [31:0] frames_q, m00_q, n00;
    logic [47:0] m10_q, m01_q, n10, n01;   // latched results and running sums
    wire [11:0] x_q, y_q, w_eff, h_eff, wb;
    wire framing_err, row_end, frame_end;

    logic [NREGS*32-1:0] ro;
    always_comb begin
        ro = '0;
        ro[0*32 +: 32] = {MODULE_ID, 16'h0001};
        ro[3*32 +: 32] = {31'd0, framing_err};
        ro[4*32 +: 32] = frames_q;
        ro[5*32 +: 32] = m00_q;
        ro[6*32 +: 64] = 64'(m10_q);
        ro[8*32 +: 64] = 64'(m01_q);
    end
    wire [NREGS-1:0] wr_stb_unused;
    // .* connects clk, rst and the s_axil_* port by name.
    axil_regfile #(.NREGS(NREGS), .ADDR_W(8), .RESET_VALS(RESET_VALS), .RO_MASK(RO_MASK)) u_regs (
        .*, .ro_values(ro), .wr_stb(wr_stb_unused)
    );

    wire take = s_axis_tvalid && s_axis_tready;
    // x_q counts beats; lane k of a beat is column x_q * NPPC + k, counted while inside the row.
    frame_pos #(.NPPC(NPPC)) u_pos (
        .clk, .rst, .cfg_width(regs[1*32 +: 12]), .cfg_height(regs[2*32 +: 12]), .take, .last(s_axis_tlast),
        .x(x_q), .y(y_q), .width(w_eff), .height(h_eff), .row_beats(wb), .row_end, .frame_end, .framing_err
    );
    wire at_start = (x_q == '0) && (y_q == '0);
    logic [3:0] ones;          // set pixels in this beat
    logic [15:0] xsum;         // sum of their columns
    always_comb begin
        ones = '0;
        xsum = '0;
        for (int k = 0; k < NPPC; k++) begin
            automatic logic [15:0] col = 16'(32'(x_q) * NPPC + k);
            if (|s_axis_tdata[k*8 +: 8] && col < 16'(w_eff)) begin
                ones = ones + 4'd1;
                xsum = xsum + col;
            end
        end
    end
    // The sums so far including this beat (what is latched on the frame's last beat).
    wire [31:0] s00 = (at_start ? 32'd0 : n00) + 32'(ones);
    wire [47:0] s10 = (at_start ? 48'd0 : n10) + 48'(xsum);
    wire [47:0] s01 = (at_start ? 48'd0 : n01) + 48'(y_q) * 48'(ones);

    pixel_stage #(.DATA_W(DATA_W), .NPPC(NPPC)) u_out (
        .clk, .rst, .s_pixel(s_axis_tdata[NPPC*8-1:0]), .s_valid(s_axis_tvalid), .s_ready(s_axis_tready),
        .s_last(s_axis_tlast), .s_user(s_axis_tuser), .m_tdata(m_axis_tdata), .m_tvalid(m_axis_tvalid),
        .m_tready(m_axis_tready), .m_tlast(m_axis_tlast), .m_tuser(m_axis_tuser)
    );

    always_ff @(posedge clk) begin
        if (take) begin
            n00 <= s00;
            n10 <= s10;
            n01 <= s01;
            if (frame_end) begin
                m00_q <= s00;
                m10_q <= s10;
                m01_q <= s01;
                frames_q <= frames_q + 1;
            end
        end
        if (rst) begin
            n00 <= '0;
            n10 <= '0;
            n01 <= '0;
            m00_q <= '0;
            m10_q <= '0;
            m01_q <= '0;
            frames_q <= '0;
        end
    end

    wire unused = &{1'b0, s_axis_tuser, s_axis_tdata, regs, wr_stb_unused, h_eff, wb, row_end};
endmodule

`resetall

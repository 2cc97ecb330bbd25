// threshold: the per-pixel types of cv2.threshold on 8-bit input (integer thresh).
// TYPE 0 BINARY (x > T ? MAX : 0), 1 BINARY_INV (x > T ? 0 : MAX), 2 TRUNC (x > T ? T : x),
// 3 TOZERO (x > T ? x : 0), 4 TOZERO_INV (x > T ? 0 : x); other TYPE values pass x through and set
// STATUS bit1. Registers: 0 ID (RO), 1 WIDTH, 2 HEIGHT, 3 STATUS (RO), 4 FRAMES (RO; frames begun),
// 5 THRESH, 6 MAXVAL, 7 TYPE.
`resetall
`timescale 1ns / 1ps
`default_nettype none

module threshold #(
    parameter int DATA_W = 8,
    parameter logic [15:0] MODULE_ID = 16'd3
) (
    `include "rm_ports.svh"
);
    localparam int NREGS = 8;
    localparam logic [NREGS*32-1:0] RESET_VALS =
        {32'd0, 32'd255, 32'd127, 32'd0, 32'd0, 32'd480, 32'd640, 32'd0};
    localparam logic [NREGS-1:0] RO_MASK = 8'b0001_1001;

    wire [NREGS*32-1:0] regs;
    wire [NREGS-1:0] wr_stb_unused;  // no register here acts on a write strobe
    logic [NREGS*32-1:0] ro;
    logic [31:0] frames_q;
    logic bad_type_q;
    always_comb begin
        ro = '0;
        ro[0*32 +: 32] = {MODULE_ID, 16'h0001};
        ro[3*32 +: 32] = {30'd0, bad_type_q, 1'b0};
        ro[4*32 +: 32] = frames_q;
    end

    // .* connects clk, rst, the s_axil_* port and regs by name.
    axil_regfile #(.NREGS(NREGS), .ADDR_W(8), .RESET_VALS(RESET_VALS), .RO_MASK(RO_MASK)) u_regs (
        .*, .ro_values(ro), .wr_stb(wr_stb_unused)
    );

    wire [7:0] x = s_axis_tdata[7:0];
    wire [7:0] t = regs[5*32 +: 8];
    wire [7:0] mx = regs[6*32 +: 8];
    wire [2:0] typ = regs[7*32 +: 3];
    wire above = x > t;
    logic [7:0] y;
    always_comb begin
        case (typ)
            3'd0: y = above ? mx : 8'd0;
            3'd1: y = above ? 8'd0 : mx;
            3'd2: y = above ? t : x;
            3'd3: y = above ? x : 8'd0;
            3'd4: y = above ? 8'd0 : x;
            default: y = x;
        endcase
    end

    logic [7:0] y_q;
    logic valid_q, last_q, user_q;
    assign s_axis_tready = !valid_q || m_axis_tready;
    assign m_axis_tdata  = DATA_W'(y_q);
    assign m_axis_tvalid = valid_q;
    assign m_axis_tlast  = last_q;
    assign m_axis_tuser  = user_q;

    always_ff @(posedge clk) begin
        if (valid_q && m_axis_tready) valid_q <= 1'b0;
        if (s_axis_tvalid && s_axis_tready) begin
            y_q <= y;
            valid_q <= 1'b1;
            last_q <= s_axis_tlast;
            user_q <= s_axis_tuser;
            if (s_axis_tuser) frames_q <= frames_q + 1;
            if (typ > 3'd4) bad_type_q <= 1'b1;
        end
        if (rst) begin
            valid_q <= 1'b0;
            last_q <= 1'b0;
            user_q <= 1'b0;
            y_q <= '0;
            frames_q <= '0;
            bad_type_q <= 1'b0;
        end
    end

    wire unused = &{1'b0, wr_stb_unused, s_axis_tdata, regs};
endmodule

`resetall

// rgb2gray: 24-bit RGB (R in tdata[7:0], G [15:8], B [23:16]) to 8-bit gray,
// y = (CR*R + CG*G + CB*B + 2^(SHIFT-1)) >> SHIFT. The defaults (9798, 19235, 3735, 15) are
// OpenCV 4.x/5.x's COLOR_RGB2GRAY rule; older builds used 14-bit 4899/9617/1868, hence registers.
// Registers: 0 ID (RO), 1 WIDTH, 2 HEIGHT, 3 STATUS (RO), 4 FRAMES (RO; frames begun),
// 5 CR, 6 CG, 7 CB, 8 SHIFT (1..31).
`resetall
`timescale 1ns / 1ps
`default_nettype none

module rgb2gray #(
    parameter int DATA_W = 24,       // input and output width; input needs 24 bits
    parameter logic [15:0] MODULE_ID = 16'd5
) (
    `include "rm_ports.svh"
);
    initial begin
        if (DATA_W < 24) $error("rgb2gray: DATA_W must hold 24-bit RGB");
    end
    localparam int NREGS = 9;
    localparam logic [NREGS*32-1:0] RESET_VALS =
        {32'd15, 32'd3735, 32'd19235, 32'd9798, 32'd0, 32'd0, 32'd480, 32'd640, 32'd0};
    localparam logic [NREGS-1:0] RO_MASK = 9'b0_0001_1001;

    wire [NREGS*32-1:0] regs;
    wire [NREGS-1:0] wr_stb_unused;  // no register here acts on a write strobe
    logic [NREGS*32-1:0] ro;
    logic [31:0] frames_q;
    always_comb begin
        ro = '0;
        ro[0*32 +: 32] = {MODULE_ID, 16'h0001};
        ro[4*32 +: 32] = frames_q;
    end

    // .* connects clk, rst, the s_axil_* port and regs by name.
    axil_regfile #(.NREGS(NREGS), .ADDR_W(8), .RESET_VALS(RESET_VALS), .RO_MASK(RO_MASK)) u_regs (
        .*, .ro_values(ro), .wr_stb(wr_stb_unused)
    );

    wire [4:0] shift = regs[8*32 +: 5];
    logic [39:0] acc;
    always_comb begin
        acc = 40'(s_axis_tdata[7:0]) * 40'(regs[5*32 +: 16])
            + 40'(s_axis_tdata[15:8]) * 40'(regs[6*32 +: 16])
            + 40'(s_axis_tdata[23:16]) * 40'(regs[7*32 +: 16]);
        if (shift != 0) acc = acc + (40'd1 << (shift - 5'd1));
        acc = acc >> shift;
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
            y_q <= (acc > 255) ? 8'd255 : acc[7:0];
            valid_q <= 1'b1;
            last_q <= s_axis_tlast;
            user_q <= s_axis_tuser;
            if (s_axis_tuser) frames_q <= frames_q + 1;
        end
        if (rst) begin
            valid_q <= 1'b0;
            last_q <= 1'b0;
            user_q <= 1'b0;
            y_q <= '0;
            frames_q <= '0;
        end
    end

    wire unused = &{1'b0, wr_stb_unused, s_axis_tdata, regs};
endmodule

`resetall

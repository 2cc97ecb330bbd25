// vision_regs: the register block every vision module shares. Registers 0 ID {MODULE_ID, 16'h0001}
// (RO), 1 WIDTH, 2 HEIGHT, 3 STATUS (RO, from the module), 4 FRAMES (RO, counts frame_tick), then
// the module's own registers from 5 up (RW): MREG_* in fpgashare_pkg (the hardware tables).
// RESET_VALS gives every register's reset value.
`resetall
`timescale 1ns / 1ps
`default_nettype none

module vision_regs import fpgashare_pkg::*; #(
    parameter int NREGS = 5,
    parameter logic [15:0] MODULE_ID = 16'd0,
    parameter logic [NREGS*32-1:0] RESET_VALS = '0
) (
    input  wire               clk,
    input  wire               rst,
    output wire [NREGS*32-1:0] regs,
    input  wire [31:0]        status,
    input  wire               frame_tick,   // one cycle per frame, however the module defines it
    `include "axil_ports.svh"
);
    initial begin
        if (NREGS < MREG_FIRST_OWN) $error("vision_regs: NREGS must be at least MREG_FIRST_OWN (5)");
    end
    localparam logic [NREGS-1:0] RO_MASK = NREGS'((1 << MREG_ID) | (1 << MREG_STATUS) | (1 << MREG_FRAMES));

    logic [31:0] frames_q;
    always_ff @(posedge clk) begin
        if (frame_tick) frames_q <= frames_q + 1;
        if (rst) frames_q <= '0;
    end

    logic [NREGS*32-1:0] ro;
    always_comb begin
        ro = '0;
        ro[MREG_ID*32 +: 32] = {MODULE_ID, 16'h0001};
        ro[MREG_STATUS*32 +: 32] = status;
        ro[MREG_FRAMES*32 +: 32] = frames_q;
    end

    wire [NREGS-1:0] wr_stb_unused;  // no vision register acts on a write strobe
    axil_regfile #(.NREGS(NREGS), .ADDR_W(8), .RESET_VALS(RESET_VALS), .RO_MASK(RO_MASK)) u_regs (
        .*, .ro_values(ro), .wr_stb(wr_stb_unused)
    );
    wire unused = &{1'b0, wr_stb_unused};
endmodule

`resetall

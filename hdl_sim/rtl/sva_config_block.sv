// sva_config_block: the configuration block's read port answers only a pending read (simulation only,
// bound by sva_binds.sv). With no read pending its value to the shell is 0, so while a load runs with
// the processor bus idle the block's outputs to the shell hold still (the harness runs the block alone
// then, hdl_sim/harness/shell_harness.cpp).
`resetall
`timescale 1ns / 1ps
`default_nettype none

module sva_config_block (
    input wire        clk,
    input wire        rst,
    input wire        rd_en,
    input wire [31:0] rd_value
);
    a_read_port_quiet: assert property (@(posedge clk) disable iff (rst) !rd_en |-> rd_value == 32'd0)
        else $error("%m: the read port drives %h with no read pending", rd_value);
endmodule

`resetall

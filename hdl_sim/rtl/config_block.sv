// config_block: the configuration port with its input register slice and the read-only registers
// it owns (CFG_STATUS, CFG_WORDS, CFG_CYCLES, CFG_LOADS), answered through one read port.
//
// What changes every cycle while a partial streams in is here: the port's state and its word and
// cycle counters. The shell (shell.sv) sees only the slots' state (module, loading, failed, RM reset,
// error, fused) and, while its register file has a read of one of these registers pending, that
// register's value; with no read pending rd_value is 0. So while a load runs with the processor bus
// idle, the shell's inputs from here hold still, and a simulation can evaluate this block alone
// (shell.sv's CFG_EXTERNAL, hdl_sim/harness/shell_harness.cpp); and between loads the block holds
// still itself.
`resetall
`timescale 1ns / 1ps
`default_nettype none

module config_block import fpgashare_pkg::*; #(
    parameter int NUM_SLOTS = 2,
    parameter logic [31:0] IDCODE = 32'h03727093,
    parameter int FRAME_WORDS = 101,
    parameter logic [NUM_SLOTS*32-1:0] SLOT_FAR_BASE = '0,
    parameter logic [NUM_SLOTS*32-1:0] SLOT_FRAMES = '0,
    parameter logic [NUM_SLOTS*32-1:0] SLOT_MODULES = '0,
    parameter logic [NUM_SLOTS*32-1:0] SLOT_FUSED_FRAMES = '0,
    parameter logic [NUM_SLOTS*32-1:0] SLOT_FUSED_MODULES = '0,
    parameter logic [NUM_SLOTS*32-1:0] SLOT_FUSED_LAST = '0
) (
    input  wire                    clk,
    input  wire                    rst,
    input  wire [31:0]             s_axis_tdata,
    input  wire                    s_axis_tvalid,
    output wire                    s_axis_tready,
    input  wire                    s_axis_tlast,
    input  wire                    arm,          // pulse: begin a load into arm_slot
    input  wire [3:0]              arm_slot,
    input  wire                    rd_en,        // the shell's register file has a read pending ...
    input  wire [7:0]              rd_index,     // ... of this register (word index)
    output logic [31:0]            rd_value,     // its value if it is one of this block's, else 0
    output wire [NUM_SLOTS*MODULE_ID_BITS-1:0] slot_module,
    output wire [NUM_SLOTS-1:0]    slot_loading,
    output wire [NUM_SLOTS-1:0]    slot_failed,
    output wire [NUM_SLOTS-1:0]    slot_rst,
    output wire [NUM_SLOTS*8-1:0]  slot_error,
    output wire [NUM_SLOTS-1:0]    fused_on
);
    // The input slice: the static region's port starts in flops, as timing closure would want.
    wire [31:0] tdata;
    wire tvalid, tready, tlast, slice_wait;   // slice_wait: full, ordinary backpressure
    sync_fifo #(.W(33), .DEPTH(2)) u_slice (
        .clk, .rst,
        .s_data({s_axis_tlast, s_axis_tdata}), .s_valid(s_axis_tvalid), .s_ready(s_axis_tready),
        .m_data({tlast, tdata}), .m_valid(tvalid), .m_ready(tready), .overflow(slice_wait)
    );

    wire [1:0] status;
    wire [7:0] error;
    wire [3:0] target;
    wire [31:0] words, cycles, loads;
    config_port #(
        .NUM_SLOTS(NUM_SLOTS), .IDCODE(IDCODE), .FRAME_WORDS(FRAME_WORDS),
        .SLOT_FAR_BASE(SLOT_FAR_BASE), .SLOT_FRAMES(SLOT_FRAMES), .SLOT_MODULES(SLOT_MODULES),
        .SLOT_FUSED_FRAMES(SLOT_FUSED_FRAMES), .SLOT_FUSED_MODULES(SLOT_FUSED_MODULES),
        .SLOT_FUSED_LAST(SLOT_FUSED_LAST)
    ) u_cfg (
        .clk, .rst,
        .s_axis_tdata(tdata), .s_axis_tvalid(tvalid), .s_axis_tready(tready), .s_axis_tlast(tlast),
        .arm, .arm_slot,
        .slot_module, .slot_loading, .slot_failed, .slot_rst, .slot_error,
        .status, .error, .target, .words, .cycles, .loads, .fused_on
    );

    always_comb begin
        rd_value = '0;
        if (rd_en) begin
            case (int'(rd_index))
                REG_CFG_STATUS: begin
                    rd_value[CFG_STATUS_STATE_LSB +: CFG_STATUS_STATE_W] = status;
                    rd_value[CFG_STATUS_ERROR_LSB +: CFG_STATUS_ERROR_W] = error;
                    rd_value[CFG_STATUS_TARGET_LSB +: CFG_STATUS_TARGET_W] = target;
                end
                REG_CFG_WORDS: rd_value = words;
                REG_CFG_CYCLES: rd_value = cycles;
                REG_CFG_LOADS: rd_value = loads;
                default: ;
            endcase
        end
    end

    wire unused_block = &{1'b0, slice_wait};
endmodule

`resetall

// sva_config_port: the configuration port's state machine moves only along its edges (simulation
// only, bound by sva_binds.sv onto config_port's phase register). Edges: IDLE -> SYNC on a good arm;
// SYNC -> HDR on the sync word; HDR -> DATA on a packet with data; DATA -> HDR at its end, -> ACT on
// DESYNC; any of the three -> IDLE or DRAIN on an error; ACT -> ACT2 -> IDLE or DRAIN; DRAIN -> IDLE on TLAST. The port takes words only in SYNC, HDR, DATA and
// DRAIN; a slot's RM reset pulses only in the cycle after ACT, and a good load is counted only then.
`resetall
`timescale 1ns / 1ps
`default_nettype none

module sva_config_port #(
    parameter int NUM_SLOTS = 2
) (
    input wire                 clk,
    input wire                 rst,
    input wire                 idle,
    input wire                 sync,
    input wire                 hdr,
    input wire                 data,
    input wire                 act,
    input wire                 act2,
    input wire                 drain,
    input wire                 tready,
    input wire [NUM_SLOTS-1:0] slot_rst,
    input wire [31:0]          loads
);
    wire [6:0] phase = {drain, act2, act, data, hdr, sync, idle};
    logic [6:0] phase_q;
    logic [31:0] loads_q;
    logic was_rst_q;
    always_ff @(posedge clk) begin
        phase_q <= phase;
        loads_q <= loads;
        was_rst_q <= rst;
    end
    wire [6:0] p = phase_q;   // the last cycle's phase, one-hot as phase

    a_one_phase: assert property (@(posedge clk) disable iff (rst) $onehot(phase))
        else $error("%m: the port is in no phase or in several (%b)", phase);
    a_legal_edge: assert property (@(posedge clk) disable iff (rst || was_rst_q)
        (p[0] -> (idle || sync)) &&
        (p[1] -> (sync || hdr || idle || drain)) &&
        (p[2] -> (hdr || data || idle || drain)) &&
        (p[3] -> (data || hdr || act || idle || drain)) &&
        (p[4] -> act2) &&
        (p[5] -> (idle || drain)) &&
        (p[6] -> (drain || idle)))
        else $error("%m: illegal phase change %b -> %b", p, phase);
    a_ready_only_when_taking: assert property (@(posedge clk) disable iff (rst)
        tready |-> (sync || hdr || data || drain))
        else $error("%m: the port offered READY outside SYNC, HDR, DATA and DRAIN");
    a_rm_reset_after_act: assert property (@(posedge clk) disable iff (rst || was_rst_q)
        (slot_rst != '0) |-> p[4] && $onehot(slot_rst))
        else $error("%m: an RM reset outside the activation of one slot");
    a_loads_count_activations: assert property (@(posedge clk) disable iff (rst || was_rst_q)
        loads != loads_q |-> p[5] && loads == loads_q + 1)
        else $error("%m: the good-load count moved outside an activation");
endmodule

`resetall

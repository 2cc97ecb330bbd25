// sva_decoupler: what dfx_decoupler promises (simulation only, bound by sva_binds.sv). While
// DECOUPLE is high no beat crosses between the partition and the static side in either direction
// and the partition sees no VALID; the AXI-Lite side switches between partition and local SLVERR
// answers only with no transaction in flight, and while it answers locally the partition sees no
// request.
`resetall
`timescale 1ns / 1ps
`default_nettype none

module sva_decoupler (
    input wire clk,
    input wire rst,
    input wire decouple,
    input wire in_valid,       // static -> partition, static side
    input wire in_ready,
    input wire rp_in_valid,    // static -> partition, partition side
    input wire out_valid,      // partition -> static, static side
    input wire out_ready,
    input wire rp_out_ready,   // partition -> static, partition side
    input wire lite_local,     // AXI-Lite answered here (SLVERR), not by the partition
    input wire lite_idle,      // no AXI-Lite transaction in flight
    input wire rp_lite_request // AW, W or AR VALID towards the partition
);
    a_no_beat_in: assert property (@(posedge clk) disable iff (rst)
        decouple |-> !(in_valid && in_ready) && !rp_in_valid)
        else $error("%m: a beat entered a decoupled partition");
    a_no_beat_out: assert property (@(posedge clk) disable iff (rst)
        decouple |-> !(out_valid && out_ready) && !rp_out_ready)
        else $error("%m: a beat left a decoupled partition");
    logic lite_local_q, lite_idle_q, was_rst_q;
    always_ff @(posedge clk) begin
        lite_local_q <= lite_local;
        lite_idle_q <= lite_idle;
        was_rst_q <= rst;
    end
    a_lite_switches_between_transactions: assert property (@(posedge clk) disable iff (rst || was_rst_q)
        lite_local != lite_local_q |-> lite_idle_q)
        else $error("%m: the AXI-Lite side switched with a transaction in flight");
    a_lite_local_cuts_requests: assert property (@(posedge clk) disable iff (rst) lite_local |-> !rp_lite_request)
        else $error("%m: a request reached the partition while AXI-Lite is answered locally");
endmodule

`resetall

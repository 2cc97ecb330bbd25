// sva_handshake: checks one valid/ready channel (an AXI4-Stream, or one AXI4-Lite channel) as its
// producer must drive it: once VALID is high without READY, VALID stays high and the payload stays
// the same until the transfer (AXI4-Stream "once TVALID is asserted it must remain asserted until
// the handshake occurs"; AXI A3.2.1 for every AXI4-Lite channel). EN low suspends the check, for a
// channel that is cut on purpose. Simulation only: bound into the RTL by sva_binds.sv, built by every
// simulation (hdl_sim/build.py sim_sources, --assert), never synthesized. A failure stops the model.
`resetall
`timescale 1ns / 1ps
`default_nettype none

module sva_handshake #(
    parameter int W = 1,
    parameter string NAME = "channel"
) (
    input wire         clk,
    input wire         rst,
    input wire         en,
    input wire         valid,
    input wire         ready,
    input wire [W-1:0] payload
);
    // The last cycle's state, kept here rather than through $past so that reset and EN act on the
    // cycle that offered the beat as well as on the one that checks it.
    logic         waiting_q;
    logic [W-1:0] payload_q;
    always_ff @(posedge clk) begin
        waiting_q <= !rst && en && valid && !ready;
        payload_q <= payload;
    end

    a_valid_held: assert property (@(posedge clk) disable iff (rst || !en) waiting_q |-> valid)
        else $error("%m: %s: VALID dropped before READY", NAME);
    a_payload_stable: assert property (@(posedge clk) disable iff (rst || !en) waiting_q |-> payload == payload_q)
        else $error("%m: %s: payload changed while VALID waited for READY", NAME);
endmodule

`resetall

// clock_gate: an integrated clock gate (latch + AND), as a DFX shell gates the clock of a
// partition it does not use. The enable is latched while the clock is low, so the gated clock
// never glitches. In simulation it also means an unselected module costs no evaluation.
`resetall
`timescale 1ns / 1ps
`default_nettype none

module clock_gate (
    input  wire clk,
    input  wire en,
    output wire gclk
);
    logic en_l;
    always_latch begin
        if (!clk) en_l = en;
    end
    assign gclk = clk && en_l;
endmodule

`resetall

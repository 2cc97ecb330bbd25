// pipe_delay: a W-bit value delayed by exactly LATENCY cycles (LATENCY = 0 is a wire).
`resetall
`timescale 1ns / 1ps
`default_nettype none

module pipe_delay #(
    parameter int W = 8,
    parameter int LATENCY = 1
) (
    input  wire          clk,
    input  wire          rst,
    input  wire [W-1:0]  d,
    output wire [W-1:0]  q
);
    initial begin
        if (LATENCY < 0) $error("pipe_delay: LATENCY must be >= 0");
    end
    if (LATENCY == 0) begin : g_wire
        assign q = d;
        wire unused_clk = &{1'b0, clk, rst};
    end else begin : g_regs
        logic [W-1:0] stage [LATENCY];
        assign q = stage[LATENCY-1];
        always_ff @(posedge clk) begin
            stage[0] <= d;
            for (int i = 1; i < LATENCY; i++) stage[i] <= stage[i-1];
            if (rst) begin
                for (int i = 0; i < LATENCY; i++) stage[i] <= '0;
            end
        end
    end
endmodule

`resetall

// dnn_ram: one of dnn_tile's memories, with one write port and one registered read port, as both
// block RAM and UltraRAM offer them. URAM chooses the primitive synthesis maps it to: UltraRAM
// (UltraScale+ only) or block RAM (every family with one, the 7-series included). Behaviour is the
// same either way: a write lands at the clock edge; a read enabled at an edge returns the word
// stored before that edge's write (read-first) on rd from then on.
`resetall
`timescale 1ns / 1ps
`default_nettype none

module dnn_ram #(
    parameter int WIDTH = 64,
    parameter int DEPTH = 4096,
    parameter int URAM = 1
) (
    input  wire                      clk,
    input  wire                      we,
    input  wire [$clog2(DEPTH)-1:0]  wa,
    input  wire [WIDTH-1:0]          wd,
    input  wire                      re,
    input  wire [$clog2(DEPTH)-1:0]  ra,
    output logic [WIDTH-1:0]         rd
);
    if (URAM != 0) begin : g_ultra
        (* ram_style = "ultra" *) logic [WIDTH-1:0] mem [DEPTH];
        always_ff @(posedge clk) begin
            if (we) mem[wa] <= wd;
            if (re) rd <= mem[ra];
        end
    end else begin : g_block
        (* ram_style = "block" *) logic [WIDTH-1:0] mem [DEPTH];
        always_ff @(posedge clk) begin
            if (we) mem[wa] <= wd;
            if (re) rd <= mem[ra];
        end
    end
endmodule

`resetall

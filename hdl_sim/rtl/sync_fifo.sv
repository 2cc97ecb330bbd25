// sync_fifo: first-word-fall-through FIFO of DEPTH W-bit entries (any DEPTH >= 1).
`resetall
`timescale 1ns / 1ps
`default_nettype none

module sync_fifo #(
    parameter int W = 8,
    parameter int DEPTH = 4
) (
    input  wire          clk,
    input  wire          rst,
    input  wire [W-1:0]  s_data,
    input  wire          s_valid,
    output wire          s_ready,
    output wire [W-1:0]  m_data,
    output wire          m_valid,
    input  wire          m_ready,
    output wire          overflow   // a write was attempted while full (must never happen with credits)
);
    initial begin
        if (DEPTH < 1) $error("sync_fifo: DEPTH must be >= 1");
    end
    localparam int AW = (DEPTH > 1) ? $clog2(DEPTH) : 1;
    logic [W-1:0] mem [DEPTH];
    logic [AW-1:0] rd_q, wr_q;
    logic [AW:0] count_q;

    wire full = (count_q == (AW+1)'(DEPTH));
    wire push = s_valid && !full;
    wire pop = m_valid && m_ready;
    assign s_ready = !full;
    assign m_valid = (count_q != 0);
    assign m_data = mem[rd_q];
    assign overflow = s_valid && full;

    function automatic [AW-1:0] next(input [AW-1:0] p);
        next = (p == AW'(DEPTH - 1)) ? '0 : p + 1'b1;
    endfunction

    always_ff @(posedge clk) begin
        if (push) begin
            mem[wr_q] <= s_data;
            wr_q <= next(wr_q);
        end
        if (pop) rd_q <= next(rd_q);
        count_q <= count_q + (AW+1)'(push) - (AW+1)'(pop);
        if (rst) begin
            rd_q <= '0;
            wr_q <= '0;
            count_q <= '0;
        end
    end
endmodule

`resetall

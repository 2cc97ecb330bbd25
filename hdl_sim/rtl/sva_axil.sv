// sva_axil: checks the AXI4-Lite channels one side of N ports drives (simulation only, bound by
// sva_binds.sv). REQUESTS: this side is the master (AW, W, AR must each hold VALID and payload until
// READY). RESPONSES: this side is the slave (B and R must hold VALID and payload until READY, and a
// response answers an accepted request: no B before both AW and W of a write were taken, no R
// before an AR was). The address, write data and strobes are shared by the N ports (as the
// demultiplexer drives them); the responses are per port.
`resetall
`timescale 1ns / 1ps
`default_nettype none

module sva_axil #(
    parameter int N = 1,
    parameter int ADDR_W = 8,
    parameter bit REQUESTS = 1'b0,
    parameter bit RESPONSES = 1'b1,
    parameter string NAME = "axil"
) (
    // One side drives requests, the other responses: each instance reads only the channels it checks.
    /* verilator lint_off UNUSEDSIGNAL */
    input wire                clk,
    input wire                rst,
    input wire [ADDR_W-1:0]   awaddr,
    input wire [N-1:0]        awvalid,
    input wire [N-1:0]        awready,
    input wire [31:0]         wdata,
    input wire [3:0]          wstrb,
    input wire [N-1:0]        wvalid,
    input wire [N-1:0]        wready,
    input wire [N*2-1:0]      bresp,
    input wire [N-1:0]        bvalid,
    input wire [N-1:0]        bready,
    input wire [ADDR_W-1:0]   araddr,
    input wire [N-1:0]        arvalid,
    input wire [N-1:0]        arready,
    input wire [N*32-1:0]     rdata,
    input wire [N*2-1:0]      rresp,
    input wire [N-1:0]        rvalid,
    input wire [N-1:0]        rready
    /* verilator lint_on UNUSEDSIGNAL */
);
    for (genvar k = 0; k < N; k++) begin : g_port
        if (REQUESTS) begin : g_requests
            sva_handshake #(.W(ADDR_W), .NAME({NAME, " AW"})) u_aw (
                .clk, .rst, .en(1'b1), .valid(awvalid[k]), .ready(awready[k]), .payload(awaddr));
            sva_handshake #(.W(36), .NAME({NAME, " W"})) u_w (
                .clk, .rst, .en(1'b1), .valid(wvalid[k]), .ready(wready[k]), .payload({wstrb, wdata}));
            sva_handshake #(.W(ADDR_W), .NAME({NAME, " AR"})) u_ar (
                .clk, .rst, .en(1'b1), .valid(arvalid[k]), .ready(arready[k]), .payload(araddr));
        end
        if (RESPONSES) begin : g_responses
            sva_handshake #(.W(2), .NAME({NAME, " B"})) u_b (
                .clk, .rst, .en(1'b1), .valid(bvalid[k]), .ready(bready[k]), .payload(bresp[k*2 +: 2]));
            sva_handshake #(.W(34), .NAME({NAME, " R"})) u_r (
                .clk, .rst, .en(1'b1), .valid(rvalid[k]), .ready(rready[k]),
                .payload({rresp[k*2 +: 2], rdata[k*32 +: 32]}));

            // Requests taken and responses given so far; a response needs a request it answers.
            logic [31:0] aw_n, w_n, b_n, ar_n, r_n;
            always_ff @(posedge clk) begin
                aw_n <= aw_n + 32'(awvalid[k] && awready[k]);
                w_n  <= w_n + 32'(wvalid[k] && wready[k]);
                b_n  <= b_n + 32'(bvalid[k] && bready[k]);
                ar_n <= ar_n + 32'(arvalid[k] && arready[k]);
                r_n  <= r_n + 32'(rvalid[k] && rready[k]);
                if (rst) {aw_n, w_n, b_n, ar_n, r_n} <= '0;
            end
            a_b_answers_a_write: assert property (@(posedge clk) disable iff (rst)
                bvalid[k] |-> aw_n > b_n && w_n > b_n)
                else $error("%m: %s: B response without an accepted AW and W", NAME);
            a_r_answers_a_read: assert property (@(posedge clk) disable iff (rst) rvalid[k] |-> ar_n > r_n)
                else $error("%m: %s: R response without an accepted AR", NAME);
        end
    end
endmodule

`resetall

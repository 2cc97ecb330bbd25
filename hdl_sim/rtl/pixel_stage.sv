// pixel_stage: the output register of a pointwise module: NPPC 8-bit results per accepted input
// beat (pixel k in [8k+7:8k]), TLAST/TUSER carried along, full throughput (ready while empty or draining).
`resetall
`timescale 1ns / 1ps
`default_nettype none

module pixel_stage #(
    parameter int DATA_W = 8,
    parameter int NPPC = 1
) (
    input  wire               clk,
    input  wire               rst,
    input  wire [NPPC*8-1:0]  s_pixel,     // the results for the beat on the input
    input  wire               s_valid,
    output wire               s_ready,
    input  wire               s_last,
    input  wire               s_user,
    output wire [DATA_W-1:0]  m_tdata,
    output wire               m_tvalid,
    input  wire               m_tready,
    output wire               m_tlast,
    output wire               m_tuser
);
    logic [NPPC*8-1:0] y_q;
    logic valid_q, last_q, user_q;
    assign s_ready  = !valid_q || m_tready;
    assign m_tdata  = DATA_W'(y_q);
    assign m_tvalid = valid_q;
    assign m_tlast  = last_q;
    assign m_tuser  = user_q;
    wire unused = &{1'b0, y_q};   // a narrower output (DATA_W < NPPC * 8) drops the top bytes

    always_ff @(posedge clk) begin
        if (valid_q && m_tready) valid_q <= 1'b0;
        if (s_valid && s_ready) begin
            y_q <= s_pixel;
            valid_q <= 1'b1;
            last_q <= s_last;
            user_q <= s_user;
        end
        if (rst) begin
            valid_q <= 1'b0;
            last_q <= 1'b0;
            user_q <= 1'b0;
            y_q <= '0;
        end
    end
endmodule

`resetall

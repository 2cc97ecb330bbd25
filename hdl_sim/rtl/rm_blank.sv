// rm_blank: what an empty or half-written partition drives. Verilator has no X, so the outputs carry
// a free-running LFSR pattern (TVALID, TDATA, TLAST, TUSER and TREADY all toggle at random, AXI-Lite
// reads return junk) and a missing or late decouple shows up as garbage on the static side.
`resetall
`timescale 1ns / 1ps
`default_nettype none

module rm_blank #(
    parameter int DATA_W = 32,
    parameter logic [31:0] SEED = 32'h1234_5678
) (
    `include "rm_ports.svh"
);
    logic [31:0] x;  // xorshift32
    always_ff @(posedge clk) begin
        x <= (x == 0) ? SEED : (x ^ (x << 13)) ^ ((x ^ (x << 13)) >> 17) ^
             (((x ^ (x << 13)) ^ ((x ^ (x << 13)) >> 17)) << 5);
        if (rst) x <= SEED;
    end

    assign s_axis_tready = x[3];
    assign m_axis_tvalid = x[0];
    assign m_axis_tdata  = DATA_W'({x, x});
    assign m_axis_tlast  = x[1];
    assign m_axis_tuser  = x[2];

    // Legal AXI-Lite handshakes with junk read data, so only the data is wrong, never the protocol.
    logic bvalid_q, rvalid_q;
    assign s_axil_awready = s_axil_awvalid && s_axil_wvalid && !bvalid_q;
    assign s_axil_wready  = s_axil_awready;
    assign s_axil_bvalid  = bvalid_q;
    assign s_axil_bresp   = 2'b00;
    assign s_axil_arready = s_axil_arvalid && !rvalid_q;
    assign s_axil_rvalid  = rvalid_q;
    assign s_axil_rresp   = 2'b00;
    assign s_axil_rdata   = x;
    always_ff @(posedge clk) begin
        if (s_axil_awready) bvalid_q <= 1'b1;
        else if (s_axil_bready) bvalid_q <= 1'b0;
        if (s_axil_arready) rvalid_q <= 1'b1;
        else if (s_axil_rready) rvalid_q <= 1'b0;
        if (rst) begin
            bvalid_q <= 1'b0;
            rvalid_q <= 1'b0;
        end
    end

    wire unused = &{1'b0, s_axis_tdata, s_axis_tvalid, s_axis_tlast, s_axis_tuser, m_axis_tready,
                    s_axil_awaddr, s_axil_wdata, s_axil_wstrb, s_axil_araddr};
endmodule

`resetall

// stream_switch: register-routed AXI-Stream crossbar (Nguyen & Hoe's configurable interconnect).
// Each sink picks one source by route[sink] = {enable, source index}; a source feeds at most one
// sink (the runtime routes chains; route_table.sv keeps the shell's streams from sharing a slot).
// Unrouted sources see TREADY = 0 and wait; a sink routed to a source that does not exist sees nothing.
`resetall
`timescale 1ns / 1ps
`default_nettype none

module stream_switch #(
    parameter int DATA_W = 32,
    parameter int NSRC = 3,
    parameter int NSNK = 3,
    parameter int SEL_W = 4
) (
    input  wire [DATA_W-1:0]  s_tdata [NSRC],
    input  wire [NSRC-1:0]    s_tvalid,
    output logic [NSRC-1:0]   s_tready,
    input  wire [NSRC-1:0]    s_tlast,
    input  wire [NSRC-1:0]    s_tuser,
    output wire [DATA_W-1:0]  m_tdata [NSNK],
    output wire [NSNK-1:0]    m_tvalid,
    input  wire [NSNK-1:0]    m_tready,
    output wire [NSNK-1:0]    m_tlast,
    output wire [NSNK-1:0]    m_tuser,
    input  wire [NSNK*(SEL_W+1)-1:0] route   // per sink: {enable, source}
);
    initial begin
        if (NSRC > (1 << SEL_W)) $error("stream_switch: SEL_W too narrow for NSRC");
    end
    localparam int IW = (NSRC > 1) ? $clog2(NSRC) : 1;

    wire [NSNK-1:0] en;
    wire [SEL_W-1:0] src [NSNK];
    for (genvar k = 0; k < NSNK; k++) begin : g_snk
        assign src[k] = route[k*(SEL_W+1) +: SEL_W];
        assign en[k] = route[k*(SEL_W+1) + SEL_W] && int'(src[k]) < NSRC;
        wire [IW-1:0] i = src[k][IW-1:0];   // meaningful only when en[k]
        // A direct index, not a compare per source: the mux the tools would build anyway.
        assign m_tdata[k]  = en[k] ? s_tdata[i] : '0;
        assign m_tvalid[k] = en[k] && s_tvalid[i];
        assign m_tlast[k]  = en[k] && s_tlast[i];
        assign m_tuser[k]  = en[k] && s_tuser[i];
    end

    always_comb begin
        s_tready = '0;
        for (int k = 0; k < NSNK; k++) begin
            if (en[k]) s_tready[src[k][IW-1:0]] = m_tready[k];
        end
    end
endmodule

`resetall

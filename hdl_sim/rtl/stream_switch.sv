// stream_switch: register-routed AXI-Stream crossbar (Nguyen & Hoe's configurable interconnect).
// Each sink picks one source by route[sink] = {enable, source index}; a source feeds at most one
// sink (the runtime enforces it). Unrouted sources see TREADY = 0 and wait.
`resetall
`timescale 1ns / 1ps
`default_nettype none

module stream_switch #(
    parameter int DATA_W = 32,
    parameter int NSRC = 3,
    parameter int NSNK = 3,
    parameter int SEL_W = 4
) (
    input  wire [NSRC*DATA_W-1:0]  s_tdata,
    input  wire [NSRC-1:0]         s_tvalid,
    output logic [NSRC-1:0]        s_tready,
    input  wire [NSRC-1:0]         s_tlast,
    input  wire [NSRC-1:0]         s_tuser,
    output logic [NSNK*DATA_W-1:0] m_tdata,
    output logic [NSNK-1:0]        m_tvalid,
    input  wire [NSNK-1:0]         m_tready,
    output logic [NSNK-1:0]        m_tlast,
    output logic [NSNK-1:0]        m_tuser,
    input  wire [NSNK*(SEL_W+1)-1:0] route   // per sink: {enable, source}
);
    initial begin
        if (NSRC > (1 << SEL_W)) $error("stream_switch: SEL_W too narrow for NSRC");
    end
    always_comb begin
        s_tready = '0;
        m_tdata = '0;
        m_tvalid = '0;
        m_tlast = '0;
        m_tuser = '0;
        for (int k = 0; k < NSNK; k++) begin
            logic en;
            logic [SEL_W-1:0] src;
            en = route[k*(SEL_W+1) + SEL_W];
            src = route[k*(SEL_W+1) +: SEL_W];
            for (int i = 0; i < NSRC; i++) begin
                if (en && src == SEL_W'(i)) begin
                    m_tdata[k*DATA_W +: DATA_W] = s_tdata[i*DATA_W +: DATA_W];
                    m_tvalid[k] = s_tvalid[i];
                    m_tlast[k] = s_tlast[i];
                    m_tuser[k] = s_tuser[i];
                    s_tready[i] = m_tready[k];
                end
            end
        end
    end
endmodule

`resetall

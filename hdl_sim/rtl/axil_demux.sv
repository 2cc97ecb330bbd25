// axil_demux: one AXI4-Lite master to NPORTS slaves, port = address[15:12], 4 KiB each; a port
// number past NPORTS answers DECERR. Each channel carries one registered transaction at a time.
`resetall
`timescale 1ns / 1ps
`default_nettype none

module axil_demux #(
    parameter int NPORTS = 3
) (
    input  wire                  clk,
    input  wire                  rst,
    output logic [7:0]           m_axil_awaddr,
    output wire [NPORTS-1:0]     m_axil_awvalid,
    input  wire [NPORTS-1:0]     m_axil_awready,
    output logic [31:0]          m_axil_wdata,
    output logic [3:0]           m_axil_wstrb,
    output wire [NPORTS-1:0]     m_axil_wvalid,
    input  wire [NPORTS-1:0]     m_axil_wready,
    input  wire [NPORTS*2-1:0]   m_axil_bresp,
    input  wire [NPORTS-1:0]     m_axil_bvalid,
    output wire [NPORTS-1:0]     m_axil_bready,
    output logic [7:0]           m_axil_araddr,
    output wire [NPORTS-1:0]     m_axil_arvalid,
    input  wire [NPORTS-1:0]     m_axil_arready,
    input  wire [NPORTS*32-1:0]  m_axil_rdata,
    input  wire [NPORTS*2-1:0]   m_axil_rresp,
    input  wire [NPORTS-1:0]     m_axil_rvalid,
    output wire [NPORTS-1:0]     m_axil_rready,
    `define AXIL_ADDR_W 16
    `include "axil_ports.svh"
);
    initial begin
        if (NPORTS < 1 || NPORTS > 16) $error("axil_demux: NPORTS must be 1..16");
    end
    typedef enum logic [1:0] {C_IDLE, C_REQ, C_RESP, C_BACK} ch_t;
    logic [1:0]  bresp_q, rresp_q;   // the responses to the processor, held while BVALID / RVALID wait
    logic [31:0] rdata_q;
    assign s_axil_bresp = bresp_q;
    assign s_axil_rresp = rresp_q;
    assign s_axil_rdata = rdata_q;
    localparam int PW = (NPORTS > 1) ? $clog2(NPORTS) : 1;

    // ---- write channel
    ch_t wst;
    logic [3:0] wport;
    logic aw_done, w_done;
    wire [PW-1:0] wp = wport[PW-1:0];
    wire w_accept = (wst == C_IDLE) && s_axil_awvalid && s_axil_wvalid;
    assign s_axil_awready = w_accept;
    assign s_axil_wready  = w_accept;
    assign s_axil_bvalid  = (wst == C_BACK);
    for (genvar p = 0; p < NPORTS; p++) begin : g_w
        assign m_axil_awvalid[p] = (wst == C_REQ) && (wp == PW'(p)) && !aw_done;
        assign m_axil_wvalid[p]  = (wst == C_REQ) && (wp == PW'(p)) && !w_done;
        assign m_axil_bready[p]  = (wst == C_RESP) && (wp == PW'(p));
    end
    always_ff @(posedge clk) begin
        case (wst)
            C_IDLE: if (w_accept) begin
                m_axil_awaddr <= s_axil_awaddr[7:0];
                m_axil_wdata <= s_axil_wdata;
                m_axil_wstrb <= s_axil_wstrb;
                wport <= s_axil_awaddr[15:12];
                aw_done <= 1'b0;
                w_done <= 1'b0;
                if (int'(s_axil_awaddr[15:12]) >= NPORTS || s_axil_awaddr[11:8] != 0) begin
                    bresp_q <= 2'b11;
                    wst <= C_BACK;
                end else begin
                    wst <= C_REQ;
                end
            end
            C_REQ: begin
                if (m_axil_awready[wp]) aw_done <= 1'b1;
                if (m_axil_wready[wp]) w_done <= 1'b1;
                if ((aw_done || m_axil_awready[wp]) && (w_done || m_axil_wready[wp])) wst <= C_RESP;
            end
            C_RESP: if (m_axil_bvalid[wp]) begin
                bresp_q <= m_axil_bresp[wp*2 +: 2];
                wst <= C_BACK;
            end
            C_BACK: if (s_axil_bready) wst <= C_IDLE;
            default: wst <= C_IDLE;
        endcase
        if (rst) begin
            wst <= C_IDLE;
            wport <= '0;
            aw_done <= 1'b0;
            w_done <= 1'b0;
            bresp_q <= 2'b00;
            m_axil_awaddr <= '0;
            m_axil_wdata <= '0;
            m_axil_wstrb <= '0;
        end
    end

    // ---- read channel
    ch_t rst_q;
    logic [3:0] rport;
    wire [PW-1:0] rp = rport[PW-1:0];
    wire r_accept = (rst_q == C_IDLE) && s_axil_arvalid;
    assign s_axil_arready = r_accept;
    assign s_axil_rvalid  = (rst_q == C_BACK);
    for (genvar p = 0; p < NPORTS; p++) begin : g_r
        assign m_axil_arvalid[p] = (rst_q == C_REQ) && (rp == PW'(p));
        assign m_axil_rready[p]  = (rst_q == C_RESP) && (rp == PW'(p));
    end
    always_ff @(posedge clk) begin
        case (rst_q)
            C_IDLE: if (r_accept) begin
                m_axil_araddr <= s_axil_araddr[7:0];
                rport <= s_axil_araddr[15:12];
                if (int'(s_axil_araddr[15:12]) >= NPORTS || s_axil_araddr[11:8] != 0) begin
                    rresp_q <= 2'b11;
                    rdata_q <= 32'h0;
                    rst_q <= C_BACK;
                end else begin
                    rst_q <= C_REQ;
                end
            end
            C_REQ: if (m_axil_arready[rp]) rst_q <= C_RESP;
            C_RESP: if (m_axil_rvalid[rp]) begin
                rresp_q <= m_axil_rresp[rp*2 +: 2];
                rdata_q <= m_axil_rdata[rp*32 +: 32];
                rst_q <= C_BACK;
            end
            C_BACK: if (s_axil_rready) rst_q <= C_IDLE;
            default: rst_q <= C_IDLE;
        endcase
        if (rst) begin
            rst_q <= C_IDLE;
            rport <= '0;
            rresp_q <= 2'b00;
            rdata_q <= '0;
            m_axil_araddr <= '0;
        end
    end
    wire unused_ports = &{1'b0, wport, rport};
endmodule

`resetall

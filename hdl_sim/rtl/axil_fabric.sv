// axil_fabric: the shell's AXI-Lite control path - the demultiplexer from the processor's port to the
// shell's register file and the slots' windows, the register file, and the route table written through
// it. Everything it drives towards the rest of the shell comes from its flops (the demultiplexer's
// requests, the register file's write strobes and values, the routes), so nothing the data path does
// reaches its outputs within a cycle; and while the processor's bus is idle it holds still, whatever
// streams. Simulation uses both facts: the harness may evaluate it as a model of its own beside the
// shell (the shell built with FABRIC_EXTERNAL = 1) and skip it while it is at rest.
//
// The slots' windows are ports 1..NUM_SLOTS of the demultiplexer (slot k on port k + 1), port 0 the
// register file. Read-only registers read ro_word, which the shell assembles only while a read
// waits (rd_en, rd_index: the register file's pending read).
`resetall
`timescale 1ns / 1ps
`default_nettype none

module axil_fabric import fpgashare_pkg::*; #(
    parameter int NUM_SLOTS = 2,
    parameter int NUM_STREAMS = 1,
    parameter int SEL_W = 4
) (
    input  wire                                  clk,
    input  wire                                  rst,
    // the slots' windows: slot k in bit / slice k
    output wire [7:0]                            m_axil_awaddr,
    output wire [NUM_SLOTS-1:0]                  m_axil_awvalid,
    input  wire [NUM_SLOTS-1:0]                  m_axil_awready,
    output wire [31:0]                           m_axil_wdata,
    output wire [3:0]                            m_axil_wstrb,
    output wire [NUM_SLOTS-1:0]                  m_axil_wvalid,
    input  wire [NUM_SLOTS-1:0]                  m_axil_wready,
    input  wire [NUM_SLOTS*2-1:0]                m_axil_bresp,
    input  wire [NUM_SLOTS-1:0]                  m_axil_bvalid,
    output wire [NUM_SLOTS-1:0]                  m_axil_bready,
    output wire [7:0]                            m_axil_araddr,
    output wire [NUM_SLOTS-1:0]                  m_axil_arvalid,
    input  wire [NUM_SLOTS-1:0]                  m_axil_arready,
    input  wire [NUM_SLOTS*32-1:0]               m_axil_rdata,
    input  wire [NUM_SLOTS*2-1:0]                m_axil_rresp,
    input  wire [NUM_SLOTS-1:0]                  m_axil_rvalid,
    output wire [NUM_SLOTS-1:0]                  m_axil_rready,
    // the register file's side towards the shell
    input  wire [31:0]                           ro_word,     // the read-only register rd_index names, while rd_en
    output wire                                  rd_en,
    output wire [7:0]                            rd_index,
    output wire                                  arm,         // CFG_CTRL written: arm a load into arm_slot
    output wire [3:0]                            arm_slot,
    output wire                                  bypass,      // DEBUG's decoupler bypass
    output wire [(NUM_SLOTS+NUM_STREAMS)*(SEL_W+1)-1:0] route,
    output wire [(NUM_SLOTS+NUM_STREAMS)*32-1:0] route_words,
    output wire [31:0]                           route_err,
    `define AXIL_ADDR_W 16
    `include "axil_ports.svh"
);
    localparam int NP = NUM_SLOTS + 1;
    localparam int NSNK = NUM_SLOTS + NUM_STREAMS;
    localparam int NREGS = SLOT_REG_BASE + SLOT_REG_STRIDE * NUM_SLOTS + NUM_STREAMS - 1;

    wire [7:0] p_awaddr, p_araddr;
    wire [31:0] p_wdata;
    wire [3:0] p_wstrb;
    wire [NP-1:0] p_awvalid, p_awready, p_wvalid, p_wready, p_bvalid, p_bready;
    wire [NP-1:0] p_arvalid, p_arready, p_rvalid, p_rready;
    wire [NP*2-1:0] p_bresp, p_rresp;
    wire [NP*32-1:0] p_rdata;

    axil_demux #(.NPORTS(NP)) u_demux (
        .clk, .rst,
        .s_axil_awaddr, .s_axil_awvalid, .s_axil_awready, .s_axil_wdata, .s_axil_wstrb,
        .s_axil_wvalid, .s_axil_wready, .s_axil_bresp, .s_axil_bvalid, .s_axil_bready,
        .s_axil_araddr, .s_axil_arvalid, .s_axil_arready, .s_axil_rdata, .s_axil_rresp,
        .s_axil_rvalid, .s_axil_rready,
        .m_axil_awaddr(p_awaddr), .m_axil_awvalid(p_awvalid), .m_axil_awready(p_awready),
        .m_axil_wdata(p_wdata), .m_axil_wstrb(p_wstrb), .m_axil_wvalid(p_wvalid),
        .m_axil_wready(p_wready), .m_axil_bresp(p_bresp), .m_axil_bvalid(p_bvalid),
        .m_axil_bready(p_bready), .m_axil_araddr(p_araddr), .m_axil_arvalid(p_arvalid),
        .m_axil_arready(p_arready), .m_axil_rdata(p_rdata), .m_axil_rresp(p_rresp),
        .m_axil_rvalid(p_rvalid), .m_axil_rready(p_rready)
    );
    assign m_axil_awaddr = p_awaddr;
    assign m_axil_araddr = p_araddr;
    assign m_axil_wdata = p_wdata;
    assign m_axil_wstrb = p_wstrb;
    assign m_axil_awvalid = p_awvalid[NP-1:1];
    assign m_axil_wvalid = p_wvalid[NP-1:1];
    assign m_axil_bready = p_bready[NP-1:1];
    assign m_axil_arvalid = p_arvalid[NP-1:1];
    assign m_axil_rready = p_rready[NP-1:1];
    assign p_awready[NP-1:1] = m_axil_awready;
    assign p_wready[NP-1:1] = m_axil_wready;
    assign p_bresp[NP*2-1:2] = m_axil_bresp;
    assign p_bvalid[NP-1:1] = m_axil_bvalid;
    assign p_arready[NP-1:1] = m_axil_arready;
    assign p_rdata[NP*32-1:32] = m_axil_rdata;
    assign p_rresp[NP*2-1:2] = m_axil_rresp;
    assign p_rvalid[NP-1:1] = m_axil_rvalid;

    // ---- the shell's register file (route registers live in the route table, which may refuse a write)
    function automatic logic [NREGS-1:0] ro_mask();
        logic [NREGS-1:0] m;
        m = '1;
        m[REG_CFG_CTRL] = 1'b0;
        m[REG_DEBUG] = 1'b0;
        return m;
    endfunction

    wire [NREGS*32-1:0] regs;
    wire [NREGS-1:0] wr_stb;
    axil_regfile #(.NREGS(NREGS), .ADDR_W(8), .RESET_VALS('0), .RO_MASK(ro_mask())) u_regs (
        .clk, .rst,
        .s_axil_awaddr(p_awaddr), .s_axil_awvalid(p_awvalid[0]), .s_axil_awready(p_awready[0]),
        .s_axil_wdata(p_wdata), .s_axil_wstrb(p_wstrb), .s_axil_wvalid(p_wvalid[0]),
        .s_axil_wready(p_wready[0]), .s_axil_bresp(p_bresp[1:0]), .s_axil_bvalid(p_bvalid[0]),
        .s_axil_bready(p_bready[0]), .s_axil_araddr(p_araddr), .s_axil_arvalid(p_arvalid[0]),
        .s_axil_arready(p_arready[0]), .s_axil_rdata(p_rdata[31:0]), .s_axil_rresp(p_rresp[1:0]),
        .s_axil_rvalid(p_rvalid[0]), .s_axil_rready(p_rready[0]),
        .regs, .ro_values({NREGS{ro_word}}), .wr_stb
    );
    assign bypass = regs[REG_DEBUG*32 + DEBUG_BYPASS_LSB];
    assign arm = wr_stb[REG_CFG_CTRL];
    assign arm_slot = p_wdata[CFG_CTRL_SLOT_LSB +: CFG_CTRL_SLOT_W];
    assign rd_en = p_arvalid[0];   // the register file's read, answered from ro_word at its handshake
    assign rd_index = {2'b00, p_araddr[7:2]};

    // ---- routes: one word per switch sink, written through the register file, checked by the table
    wire [NSNK-1:0] route_wr;
    for (genvar k = 0; k < NUM_SLOTS; k++) begin : g_route_wr
        assign route_wr[k] = wr_stb[SLOT_REG_BASE + SLOT_REG_STRIDE*k + SLOT_ROUTE];
    end
    assign route_wr[NUM_SLOTS] = wr_stb[REG_ROUTE_OUT];
    for (genvar s = 1; s < NUM_STREAMS; s++) begin : g_route_out_wr
        assign route_wr[NUM_SLOTS + s] = wr_stb[SLOT_REG_BASE + SLOT_REG_STRIDE*NUM_SLOTS + s - 1];
    end
    route_table #(.NUM_SLOTS(NUM_SLOTS), .NUM_STREAMS(NUM_STREAMS), .SEL_W(SEL_W)) u_routes (
        .clk, .rst, .wr(route_wr), .wdata(p_wdata), .err_clear(wr_stb[REG_ROUTE_ERR]),
        .words(route_words), .route, .err(route_err)
    );

    wire unused_fabric = &{1'b0, regs, wr_stb};
endmodule

`resetall

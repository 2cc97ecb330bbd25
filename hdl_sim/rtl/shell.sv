// shell: the static region of the simulated board. NUM_SLOTS reconfigurable partitions, each with an
// output link into a register-routed stream switch, NUM_STREAMS video streams (an AXI4-Stream input
// and output each; on a board one DMA channel pair), a configuration port, and a register file.
// Stream 0 is the s_axis / m_axis pair; streams 1..NUM_STREAMS-1 are the slices of the *_more ports
// (width 1 and unused when NUM_STREAMS = 1, so a one-stream shell has the ports it always had).
//
// Address map (AXI4-Lite, 16-bit): 0x0000 shell registers, 0x1000 * (k + 1) slot k's module.
// Shell registers (word index): 0 SHELL_ID, 1 INFO {NUM_SLOTS[31:24], FRAME_WORDS[23:8], 8'h01},
// 2/3 CYCLES lo/hi, 4 CFG_CTRL (write arms a load into slot [3:0]), 5 CFG_STATUS {target[19:16],
// error[15:8], status[1:0]}, 6 CFG_WORDS, 7 CFG_CYCLES, 8 CFG_LOADS, 9 DEBUG (bit0 bypasses every
// decoupler: a fault-injection hook for tests), 10 ROUTE_OUT (stream 0's output), 11 IDCODE,
// 12 LINK_ERR, 13 ROUTE_ERR (write clears), 14 STREAMS, 16 + 4k SLOT_STATUS {decoupled[16],
// error[15:8], module[6:2], state[1:0]}, 17 + 4k SLOT_ROUTE, 18 + 4k SLOT_BEATS_IN,
// 19 + 4k SLOT_BEATS_OUT, 16 + 4 * NUM_SLOTS + s - 1 ROUTE_OUT of stream s >= 1.
// A route is {enable[31], stream[10:8] (slot routes), source[3:0]}: source 0 = the input of the
// route's stream, source k + 1 = slot k's output link. route_table.sv refuses a route that would
// join two streams (a slot in two streams' routes, or a stream >= NUM_STREAMS) and says why in ROUTE_ERR.
// Every index and field above is a name in fpgashare_pkg (REG_*, SLOT_*, *_LSB / *_W), generated from the
// hardware tables (runtime/hwtables/tables.toml) as the runtime's are.
`resetall
`timescale 1ns / 1ps
`default_nettype none

module shell import fpgashare_pkg::*; #(
    parameter int NUM_SLOTS = 2,
    parameter int NUM_STREAMS = 1,          // video streams, 1..NUM_SLOTS (platform streams)
    parameter int DATA_W = 32,              // stream width: 32, or 32 * NPPC when a module takes a pixel per 32-bit lane
    parameter int MAX_W = 1920,
    parameter int NPPC = 1,                 // pixels per stream beat (platform pixels_per_clock)
    parameter logic [31:0] SHELL_ID = 32'hF5A5_0001,
    parameter logic [31:0] IDCODE = 32'h03727093,
    parameter int FRAME_WORDS = 101,
    parameter logic [NUM_SLOTS*32-1:0] SLOT_FAR_BASE = '0,
    parameter logic [NUM_SLOTS*32-1:0] SLOT_FRAMES = '0,
    parameter logic [NUM_SLOTS*32-1:0] SLOT_MODULES = '0,
    parameter logic [NUM_SLOTS*32-1:0] SLOT_FUSED_FRAMES = '0,   // fused regions (config_port.sv)
    parameter logic [NUM_SLOTS*32-1:0] SLOT_FUSED_MODULES = '0,
    parameter logic [NUM_SLOTS*32-1:0] SLOT_FUSED_LAST = '0,
    parameter int LINK_LANE_W = 32,
    parameter int LINK_LATENCY = 1,
    parameter int LINK_CREDITS = 4,
    parameter int DNN_P = 8,
    parameter int DNN_ACT_ENTRIES = 4096,
    parameter int DNN_W_ENTRIES = 1024,
    parameter int DNN_PG_ENTRIES = 64,
    parameter int DNN_MAX_LAYERS = 16,
    parameter int DNN_URAM = 1,            // dnn_tile memories in UltraRAM (1) or block RAM (0)
    parameter int RM_EXTERNAL = 0,          // 1: the slots' modules are simulated outside (rp_slot's EXTERNAL)
    parameter int CFG_EXTERNAL = 0,         // 1: config_block is simulated outside, at the cx_* boundary
    parameter int FABRIC_EXTERNAL = 0       // 1: axil_fabric is simulated outside, at the fx_* boundary
) (
    input  wire               clk,
    input  wire               rst,
    input  wire [DATA_W-1:0]  s_axis_tdata,
    input  wire               s_axis_tvalid,
    output wire               s_axis_tready,
    input  wire               s_axis_tlast,
    input  wire               s_axis_tuser,
    output wire [DATA_W-1:0]  m_axis_tdata,
    output wire               m_axis_tvalid,
    input  wire               m_axis_tready,
    output wire               m_axis_tlast,
    output wire               m_axis_tuser,
    input  wire [31:0]        s_axis_cfg_tdata,
    input  wire               s_axis_cfg_tvalid,
    output wire               s_axis_cfg_tready,
    input  wire               s_axis_cfg_tlast,
    // streams 1..NUM_STREAMS-1, stream s in slice s - 1
    input  wire [(NUM_STREAMS > 1 ? NUM_STREAMS - 1 : 1)*DATA_W-1:0] s_axis_more_tdata,
    input  wire [(NUM_STREAMS > 1 ? NUM_STREAMS - 1 : 1)-1:0]        s_axis_more_tvalid,
    output wire [(NUM_STREAMS > 1 ? NUM_STREAMS - 1 : 1)-1:0]        s_axis_more_tready,
    input  wire [(NUM_STREAMS > 1 ? NUM_STREAMS - 1 : 1)-1:0]        s_axis_more_tlast,
    input  wire [(NUM_STREAMS > 1 ? NUM_STREAMS - 1 : 1)-1:0]        s_axis_more_tuser,
    output wire [(NUM_STREAMS > 1 ? NUM_STREAMS - 1 : 1)*DATA_W-1:0] m_axis_more_tdata,
    output wire [(NUM_STREAMS > 1 ? NUM_STREAMS - 1 : 1)-1:0]        m_axis_more_tvalid,
    input  wire [(NUM_STREAMS > 1 ? NUM_STREAMS - 1 : 1)-1:0]        m_axis_more_tready,
    output wire [(NUM_STREAMS > 1 ? NUM_STREAMS - 1 : 1)-1:0]        m_axis_more_tlast,
    output wire [(NUM_STREAMS > 1 ? NUM_STREAMS - 1 : 1)-1:0]        m_axis_more_tuser,
    // slot k's module boundary in slice k (RM_EXTERNAL = 1; tied off otherwise): rp_slot's x_* ports
    output wire [NUM_SLOTS*32-1:0]     rm_ctl,
    input  wire [NUM_SLOTS*32-1:0]     rm_sts,
    output wire [NUM_SLOTS*DATA_W-1:0] rm_s_tdata,
    input  wire [NUM_SLOTS*DATA_W-1:0] rm_m_tdata,
    input  wire [NUM_SLOTS*32-1:0]     rm_rdata,
    output wire [7:0]                  rm_axil_awaddr,
    output wire [7:0]                  rm_axil_araddr,
    output wire [31:0]                 rm_axil_wdata,
    output wire [3:0]                  rm_axil_wstrb,
    // config_block's boundary (CFG_EXTERNAL = 1; tied off otherwise): the shell's side of its ports;
    // s_axis_cfg_* then go to the block outside and s_axis_cfg_tready is 0 here
    output wire                        cx_arm,
    output wire [3:0]                  cx_arm_slot,
    output wire                        cx_rd_en,
    output wire [7:0]                  cx_rd_index,
    input  wire [31:0]                 cx_rd_value,
    input  wire [NUM_SLOTS*MODULE_ID_BITS-1:0] cx_slot_module,
    input  wire [NUM_SLOTS-1:0]        cx_slot_loading,
    input  wire [NUM_SLOTS-1:0]        cx_slot_failed,
    input  wire [NUM_SLOTS-1:0]        cx_slot_rst,
    input  wire [NUM_SLOTS*8-1:0]      cx_slot_error,
    input  wire [NUM_SLOTS-1:0]        cx_fused_on,
    // axil_fabric's boundary (FABRIC_EXTERNAL = 1; tied off otherwise): what the fabric drives in, the
    // slots' AXI-Lite answers and the read-only word out; s_axil_* then go to the fabric outside and
    // the shell's s_axil_* outputs are 0
    input  wire [7:0]                  fx_awaddr,
    input  wire [NUM_SLOTS-1:0]        fx_awvalid,
    output wire [NUM_SLOTS-1:0]        fx_awready,
    input  wire [31:0]                 fx_wdata,
    input  wire [3:0]                  fx_wstrb,
    input  wire [NUM_SLOTS-1:0]        fx_wvalid,
    output wire [NUM_SLOTS-1:0]        fx_wready,
    output wire [NUM_SLOTS*2-1:0]      fx_bresp,
    output wire [NUM_SLOTS-1:0]        fx_bvalid,
    input  wire [NUM_SLOTS-1:0]        fx_bready,
    input  wire [7:0]                  fx_araddr,
    input  wire [NUM_SLOTS-1:0]        fx_arvalid,
    output wire [NUM_SLOTS-1:0]        fx_arready,
    output wire [NUM_SLOTS*32-1:0]     fx_rdata,
    output wire [NUM_SLOTS*2-1:0]      fx_rresp,
    output wire [NUM_SLOTS-1:0]        fx_rvalid,
    input  wire [NUM_SLOTS-1:0]        fx_rready,
    output wire [31:0]                 fx_ro_word,
    input  wire                        fx_rd_en,
    input  wire [7:0]                  fx_rd_index,
    input  wire                        fx_arm,
    input  wire [3:0]                  fx_arm_slot,
    input  wire                        fx_bypass,
    input  wire [(NUM_SLOTS+NUM_STREAMS)*5-1:0]  fx_route,   // SEL_W + 1 = 5 bits a switch sink
    input  wire [(NUM_SLOTS+NUM_STREAMS)*32-1:0] fx_route_words,
    input  wire [31:0]                 fx_route_err,
    `define AXIL_ADDR_W 16
    `include "axil_ports.svh"
);
    initial begin
        if (NUM_SLOTS < 1 || NUM_SLOTS > 8) $error("shell: NUM_SLOTS must be 1..8");
        if (NUM_STREAMS < 1 || NUM_STREAMS > NUM_SLOTS) $error("shell: NUM_STREAMS must be 1..NUM_SLOTS");
        if (DATA_W != 32 && DATA_W != 32 * NPPC) $error("shell: DATA_W must be 32 or 32 * NPPC");
    end
    localparam int NREGS = SLOT_REG_BASE + SLOT_REG_STRIDE * NUM_SLOTS + NUM_STREAMS - 1;
    localparam int SEL_W = 4;

    localparam int NSNK = NUM_SLOTS + NUM_STREAMS;

    // ---- AXI-Lite control path (axil_fabric.sv: the demultiplexer, the register file, the route
    // table): inside, or outside at the fx_* boundary (FABRIC_EXTERNAL), where a simulation evaluates
    // it as a model of its own and skips it while the processor's bus is idle.
    wire [7:0] p_awaddr, p_araddr;
    wire [31:0] p_wdata;
    wire [3:0] p_wstrb;
    wire [NUM_SLOTS-1:0] p_awvalid, p_awready, p_wvalid, p_wready, p_bvalid, p_bready;
    wire [NUM_SLOTS-1:0] p_arvalid, p_arready, p_rvalid, p_rready;
    wire [NUM_SLOTS*2-1:0] p_bresp, p_rresp;
    wire [NUM_SLOTS*32-1:0] p_rdata;
    wire bypass_decouplers, cfg_arm, cfg_rd_en;
    wire [3:0] cfg_arm_slot;
    wire [7:0] cfg_rd_index;
    wire [NSNK*(SEL_W+1)-1:0] route;
    wire [NSNK*32-1:0] route_words;
    wire [31:0] route_err;
    logic [31:0] ro_word;
    if (FABRIC_EXTERNAL != 0) begin : g_fabric_external
        assign {p_awaddr, p_awvalid, p_wdata, p_wstrb, p_wvalid, p_bready, p_araddr, p_arvalid, p_rready} =
               {fx_awaddr, fx_awvalid, fx_wdata, fx_wstrb, fx_wvalid, fx_bready, fx_araddr, fx_arvalid, fx_rready};
        assign {bypass_decouplers, cfg_arm, cfg_arm_slot, cfg_rd_en, cfg_rd_index} =
               {fx_bypass, fx_arm, fx_arm_slot, fx_rd_en, fx_rd_index};
        assign {route, route_words, route_err} = {fx_route, fx_route_words, fx_route_err};
        assign {fx_awready, fx_wready, fx_bresp, fx_bvalid, fx_arready, fx_rdata, fx_rresp, fx_rvalid} =
               {p_awready, p_wready, p_bresp, p_bvalid, p_arready, p_rdata, p_rresp, p_rvalid};
        assign fx_ro_word = ro_word;
        assign {s_axil_awready, s_axil_wready, s_axil_bresp, s_axil_bvalid} = '0;
        assign {s_axil_arready, s_axil_rdata, s_axil_rresp, s_axil_rvalid} = '0;
        wire unused_axil_in = &{1'b0, s_axil_awaddr, s_axil_awvalid, s_axil_wdata, s_axil_wstrb, s_axil_wvalid,
                                s_axil_bready, s_axil_araddr, s_axil_arvalid, s_axil_rready};
    end else begin : g_fabric_inside
        axil_fabric #(.NUM_SLOTS(NUM_SLOTS), .NUM_STREAMS(NUM_STREAMS), .SEL_W(SEL_W)) u_fabric (
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
            .m_axil_rvalid(p_rvalid), .m_axil_rready(p_rready),
            .ro_word, .rd_en(cfg_rd_en), .rd_index(cfg_rd_index), .arm(cfg_arm), .arm_slot(cfg_arm_slot),
            .bypass(bypass_decouplers), .route, .route_words, .route_err
        );
        assign {fx_awready, fx_wready, fx_bresp, fx_bvalid, fx_arready, fx_rdata, fx_rresp, fx_rvalid} = '0;
        assign fx_ro_word = '0;
        wire unused_fx = &{1'b0, fx_awaddr, fx_awvalid, fx_wdata, fx_wstrb, fx_wvalid, fx_bready, fx_araddr,
                           fx_arvalid, fx_rready, fx_rd_en, fx_rd_index, fx_arm, fx_arm_slot, fx_bypass, fx_route,
                           fx_route_words, fx_route_err};
    end
    // The decouplers pass addresses and write data through unchanged: one copy serves every slot.
    assign rm_axil_awaddr = p_awaddr;
    assign rm_axil_araddr = p_araddr;
    assign rm_axil_wdata = p_wdata;
    assign rm_axil_wstrb = p_wstrb;

    // ---- register slices on every stream crossing the shell boundary: the static region's
    // ports start and end in flops, as timing closure on a real shell would want, so nothing
    // inside depends combinationally on the processor side (and the model settles in one pass).
    wire [2*NUM_STREAMS:0] slice_waits;   // valid while full: ordinary backpressure at a boundary, not an error
    // ---- configuration port, its input slice and the registers they own
    // (config_block.sv): inside, or outside at the cx_* boundary (CFG_EXTERNAL), where a simulation
    // evaluates it as a model of its own.
    wire [NUM_SLOTS*MODULE_ID_BITS-1:0] slot_module;
    wire [NUM_SLOTS-1:0] slot_loading, slot_failed, slot_rst;
    wire [NUM_SLOTS*8-1:0] slot_error;
    // A fused module's other members stay blank, so the shell keeps them decoupled like any blank slot.
    wire [NUM_SLOTS-1:0] slot_fused_on;
    wire [31:0] cfg_rd_value;
    if (CFG_EXTERNAL != 0) begin : g_cfg_external
        assign {cx_arm, cx_arm_slot, cx_rd_en, cx_rd_index} = {cfg_arm, cfg_arm_slot, cfg_rd_en, cfg_rd_index};
        assign cfg_rd_value = cx_rd_value;
        assign {slot_module, slot_loading, slot_failed, slot_rst, slot_error, slot_fused_on} =
               {cx_slot_module, cx_slot_loading, cx_slot_failed, cx_slot_rst, cx_slot_error, cx_fused_on};
        assign s_axis_cfg_tready = 1'b0;
        assign slice_waits[0] = 1'b0;
        wire unused_cfg_in = &{1'b0, s_axis_cfg_tdata, s_axis_cfg_tvalid, s_axis_cfg_tlast};
    end else begin : g_cfg_inside
        config_block #(
            .NUM_SLOTS(NUM_SLOTS), .IDCODE(IDCODE), .FRAME_WORDS(FRAME_WORDS),
            .SLOT_FAR_BASE(SLOT_FAR_BASE), .SLOT_FRAMES(SLOT_FRAMES), .SLOT_MODULES(SLOT_MODULES),
            .SLOT_FUSED_FRAMES(SLOT_FUSED_FRAMES), .SLOT_FUSED_MODULES(SLOT_FUSED_MODULES),
            .SLOT_FUSED_LAST(SLOT_FUSED_LAST)
        ) u_cfg_block (
            .clk, .rst,
            .s_axis_tdata(s_axis_cfg_tdata), .s_axis_tvalid(s_axis_cfg_tvalid),
            .s_axis_tready(s_axis_cfg_tready), .s_axis_tlast(s_axis_cfg_tlast),
            .arm(cfg_arm), .arm_slot(cfg_arm_slot), .rd_en(cfg_rd_en), .rd_index(cfg_rd_index),
            .rd_value(cfg_rd_value),
            .slot_module, .slot_loading, .slot_failed, .slot_rst, .slot_error, .fused_on(slot_fused_on)
        );
        assign {cx_arm, cx_arm_slot, cx_rd_en, cx_rd_index} = '0;
        assign slice_waits[0] = 1'b0;
        wire unused_cx = &{1'b0, cx_rd_value, cx_slot_module, cx_slot_loading, cx_slot_failed, cx_slot_rst,
                           cx_slot_error, cx_fused_on};
    end

    // ---- slots, links and switch. Sources: 0 stream 0's input, k + 1 slot k's link, NUM_SLOTS + s
    // stream s's input; sinks: k slot k's input, NUM_SLOTS + s stream s's output.
    localparam int NSRC = NUM_SLOTS + NUM_STREAMS;
    wire [DATA_W-1:0] src_tdata [NSRC];
    wire [DATA_W-1:0] snk_tdata [NSNK];
    // split_var: these vectors join every slot to every other through the switch; as whole vectors
    // the tool sees a false combinational loop (UNOPTFLAT) and re-evaluates the design to settle it.
    wire [NSRC-1:0] src_tvalid /*verilator split_var*/, src_tready /*verilator split_var*/;
    wire [NSRC-1:0] src_tlast /*verilator split_var*/, src_tuser /*verilator split_var*/;
    wire [NSNK-1:0] snk_tvalid /*verilator split_var*/, snk_tready /*verilator split_var*/;
    wire [NSNK-1:0] snk_tlast /*verilator split_var*/, snk_tuser /*verilator split_var*/;
    wire [NUM_SLOTS-1:0] link_err, decoupled;
    logic [31:0] beats_in [NUM_SLOTS];
    logic [31:0] beats_out [NUM_SLOTS];

    sync_fifo #(.W(DATA_W + 2), .DEPTH(2)) u_in_slice (
        .clk, .rst,
        .s_data({s_axis_tuser, s_axis_tlast, s_axis_tdata}), .s_valid(s_axis_tvalid),
        .s_ready(s_axis_tready),
        .m_data({src_tuser[0], src_tlast[0], src_tdata[0]}), .m_valid(src_tvalid[0]),
        .m_ready(src_tready[0]), .overflow(slice_waits[1])
    );
    sync_fifo #(.W(DATA_W + 2), .DEPTH(2)) u_out_slice (
        .clk, .rst,
        .s_data({snk_tuser[NUM_SLOTS], snk_tlast[NUM_SLOTS], snk_tdata[NUM_SLOTS]}),
        .s_valid(snk_tvalid[NUM_SLOTS]), .s_ready(snk_tready[NUM_SLOTS]),
        .m_data({m_axis_tuser, m_axis_tlast, m_axis_tdata}), .m_valid(m_axis_tvalid),
        .m_ready(m_axis_tready), .overflow(slice_waits[2])
    );

    for (genvar s = 1; s < NUM_STREAMS; s++) begin : g_stream
        sync_fifo #(.W(DATA_W + 2), .DEPTH(2)) u_in_slice (
            .clk, .rst,
            .s_data({s_axis_more_tuser[s-1], s_axis_more_tlast[s-1], s_axis_more_tdata[(s-1)*DATA_W +: DATA_W]}),
            .s_valid(s_axis_more_tvalid[s-1]), .s_ready(s_axis_more_tready[s-1]),
            .m_data({src_tuser[NUM_SLOTS+s], src_tlast[NUM_SLOTS+s], src_tdata[NUM_SLOTS+s]}),
            .m_valid(src_tvalid[NUM_SLOTS+s]), .m_ready(src_tready[NUM_SLOTS+s]), .overflow(slice_waits[2*s+1])
        );
        sync_fifo #(.W(DATA_W + 2), .DEPTH(2)) u_out_slice (
            .clk, .rst,
            .s_data({snk_tuser[NUM_SLOTS+s], snk_tlast[NUM_SLOTS+s], snk_tdata[NUM_SLOTS+s]}),
            .s_valid(snk_tvalid[NUM_SLOTS+s]), .s_ready(snk_tready[NUM_SLOTS+s]),
            .m_data({m_axis_more_tuser[s-1], m_axis_more_tlast[s-1], m_axis_more_tdata[(s-1)*DATA_W +: DATA_W]}),
            .m_valid(m_axis_more_tvalid[s-1]), .m_ready(m_axis_more_tready[s-1]), .overflow(slice_waits[2*s+2])
        );
    end
    if (NUM_STREAMS == 1) begin : g_one_stream
        assign s_axis_more_tready = '0;
        assign m_axis_more_tdata = '0;
        assign m_axis_more_tvalid = '0;
        assign m_axis_more_tlast = '0;
        assign m_axis_more_tuser = '0;
        wire unused_more = &{1'b0, s_axis_more_tdata, s_axis_more_tvalid, s_axis_more_tlast, s_axis_more_tuser,
                             m_axis_more_tready};
    end

    for (genvar k = 0; k < NUM_SLOTS; k++) begin : g_slot
        wire [DATA_W-1:0] o_tdata;
        wire o_tvalid, o_tready, o_tlast, o_tuser;
        wire [31:0] flits_unused;
        wire dec = (slot_module[k*MODULE_ID_BITS +: MODULE_ID_BITS] == MODULE_ID_BITS'(MOD_BLANK) || slot_loading[k] || slot_failed[k])
                   && !bypass_decouplers;

        rp_slot #(
            .DATA_W(DATA_W), .MAX_W(MAX_W), .NPPC(NPPC), .MODULE_MASK(SLOT_MODULES[k*32 +: 32]),
            .SEED(32'h9E37_79B9 * (k + 1)), .DNN_P(DNN_P), .DNN_ACT_ENTRIES(DNN_ACT_ENTRIES),
            .DNN_W_ENTRIES(DNN_W_ENTRIES), .DNN_PG_ENTRIES(DNN_PG_ENTRIES), .DNN_MAX_LAYERS(DNN_MAX_LAYERS),
            .DNN_URAM(DNN_URAM), .EXTERNAL(RM_EXTERNAL)
        ) u_slot (
            .clk, .rst,
            .active_module(slot_module[k*MODULE_ID_BITS +: MODULE_ID_BITS]), .rm_rst(slot_rst[k]),
            .decouple(dec), .decouple_status(decoupled[k]),
            .x_ctl(rm_ctl[k*32 +: 32]), .x_sts(rm_sts[k*32 +: 32]), .x_s_tdata(rm_s_tdata[k*DATA_W +: DATA_W]),
            .x_m_tdata(rm_m_tdata[k*DATA_W +: DATA_W]), .x_rdata(rm_rdata[k*32 +: 32]),
            .s_axis_tdata(snk_tdata[k]), .s_axis_tvalid(snk_tvalid[k]),
            .s_axis_tready(snk_tready[k]), .s_axis_tlast(snk_tlast[k]), .s_axis_tuser(snk_tuser[k]),
            .m_axis_tdata(o_tdata), .m_axis_tvalid(o_tvalid), .m_axis_tready(o_tready),
            .m_axis_tlast(o_tlast), .m_axis_tuser(o_tuser),
            .s_axil_awaddr(p_awaddr), .s_axil_awvalid(p_awvalid[k]), .s_axil_awready(p_awready[k]),
            .s_axil_wdata(p_wdata), .s_axil_wstrb(p_wstrb), .s_axil_wvalid(p_wvalid[k]),
            .s_axil_wready(p_wready[k]), .s_axil_bresp(p_bresp[k*2 +: 2]),
            .s_axil_bvalid(p_bvalid[k]), .s_axil_bready(p_bready[k]),
            .s_axil_araddr(p_araddr), .s_axil_arvalid(p_arvalid[k]), .s_axil_arready(p_arready[k]),
            .s_axil_rdata(p_rdata[k*32 +: 32]), .s_axil_rresp(p_rresp[k*2 +: 2]),
            .s_axil_rvalid(p_rvalid[k]), .s_axil_rready(p_rready[k])
        );

        // The link's lanes widen with the stream (x DATA_W / 32), so a beat is as many flits at any
        // width; the DNN tile's 32-bit words still take one flit each.
        stream_link #(
            .DATA_W(DATA_W), .LANE_W(LINK_LANE_W * (DATA_W / 32)), .LATENCY(LINK_LATENCY), .CREDITS(LINK_CREDITS)
        ) u_link (
            .clk, .rst,
            .s_axis_tdata(o_tdata), .s_axis_tvalid(o_tvalid), .s_axis_tready(o_tready),
            .s_axis_tlast(o_tlast), .s_axis_tuser(o_tuser),
            .m_axis_tdata(src_tdata[k+1]), .m_axis_tvalid(src_tvalid[k+1]),
            .m_axis_tready(src_tready[k+1]), .m_axis_tlast(src_tlast[k+1]), .m_axis_tuser(src_tuser[k+1]),
            .flits_sent(flits_unused), .credit_error(link_err[k])
        );

        always_ff @(posedge clk) begin
            if (snk_tvalid[k] && snk_tready[k]) beats_in[k] <= beats_in[k] + 1;
            if (o_tvalid && o_tready) beats_out[k] <= beats_out[k] + 1;
            if (rst) begin
                beats_in[k] <= '0;
                beats_out[k] <= '0;
            end
        end
    end

    stream_switch #(.DATA_W(DATA_W), .NSRC(NSRC), .NSNK(NSNK), .SEL_W(SEL_W)) u_switch (
        .s_tdata(src_tdata), .s_tvalid(src_tvalid), .s_tready(src_tready), .s_tlast(src_tlast),
        .s_tuser(src_tuser), .m_tdata(snk_tdata), .m_tvalid(snk_tvalid), .m_tready(snk_tready),
        .m_tlast(snk_tlast), .m_tuser(snk_tuser), .route
    );

    // ---- status registers (config_block's own are read through its read port: cfg_rd_value)
    logic [63:0] cycles_q;
    always_ff @(posedge clk) begin
        cycles_q <= cycles_q + 1;
        if (rst) cycles_q <= '0;
    end

    // What the register file's pending read gets if it names a read-only register (0 with no read
    // pending): the read-only registers are assembled only while a read waits, so the counters that
    // move every beat cost the simulation nothing between reads. The register file takes the word at
    // the read's handshake, from the slot of the register read (every slot holds it).
    function automatic logic [31:0] ro_read(input int index);
        logic [NREGS*32-1:0] all;
        all = '0;
        all[REG_SHELL_ID*32 +: 32] = SHELL_ID;
        all[REG_INFO*32 +: 32] = {8'(NUM_SLOTS), 16'(FRAME_WORDS), 8'(INFO_VERSION)};
        all[REG_CYCLES_LO*32 +: 32] = cycles_q[31:0];
        all[REG_CYCLES_HI*32 +: 32] = cycles_q[63:32];
        all[REG_CFG_STATUS*32 +: 32] = cfg_rd_value;
        all[REG_CFG_WORDS*32 +: 32] = cfg_rd_value;
        all[REG_CFG_CYCLES*32 +: 32] = cfg_rd_value;
        all[REG_CFG_LOADS*32 +: 32] = cfg_rd_value;
        all[REG_IDCODE*32 +: 32] = IDCODE;
        all[REG_LINK_ERR*32 +: 32] = 32'(link_err);
        all[REG_ROUTE_ERR*32 +: 32] = route_err;
        all[REG_STREAMS*32 +: 32] = 32'(NUM_STREAMS);
        all[REG_ROUTE_OUT*32 +: 32] = route_words[NUM_SLOTS*32 +: 32];
        for (int s = 1; s < NUM_STREAMS; s++)
            all[(SLOT_REG_BASE + SLOT_REG_STRIDE*NUM_SLOTS + s - 1)*32 +: 32] = route_words[(NUM_SLOTS+s)*32 +: 32];
        for (int k = 0; k < NUM_SLOTS; k++) begin
            int base;
            logic [MODULE_ID_BITS-1:0] module_id;
            logic [1:0] state;
            base = (SLOT_REG_BASE + SLOT_REG_STRIDE*k) * 32;
            module_id = slot_module[k*MODULE_ID_BITS +: MODULE_ID_BITS];
            state = slot_failed[k] ? SLOT_FAILED : slot_loading[k] ? SLOT_LOADING
                  : (module_id != MODULE_ID_BITS'(MOD_BLANK)) ? SLOT_ACTIVE : SLOT_BLANK;
            all[base + SLOT_STATUS*32 + SLOT_STATUS_STATE_LSB +: SLOT_STATUS_STATE_W] = state;
            all[base + SLOT_STATUS*32 + SLOT_STATUS_MODULE_LSB +: SLOT_STATUS_MODULE_W] = module_id;
            all[base + SLOT_STATUS*32 + SLOT_STATUS_ERROR_LSB +: SLOT_STATUS_ERROR_W] = slot_error[k*8 +: 8];
            all[base + SLOT_STATUS*32 + SLOT_STATUS_DECOUPLED_LSB] = decoupled[k];
            all[base + SLOT_ROUTE*32 +: 32] = route_words[k*32 +: 32];
            all[base + SLOT_BEATS_IN*32 +: 32] = beats_in[k];
            all[base + SLOT_BEATS_OUT*32 +: 32] = beats_out[k];
        end
        return all[index*32 +: 32];
    endfunction

    always_comb begin
        ro_word = '0;
        if (cfg_rd_en && int'(cfg_rd_index) < NREGS) ro_word = ro_read(int'(cfg_rd_index));
    end
    wire unused_shell = &{1'b0, slice_waits, slot_fused_on};
endmodule

`resetall

// sva_binds: where the assertion checkers attach to the RTL. Simulation only: hdl_sim/build.py's
// sim_sources adds the sva_*.sv files, and every simulation build (cocotb and the harness) runs
// with --assert, so a broken handshake stops the model where it happens. Only channels the RTL
// itself drives are checked: a testbench that pauses VALID (the harness's input gaps) is not the
// design's fault.
`resetall
`timescale 1ns / 1ps
`default_nettype none

// Every FIFO output (the shell's boundary slices, the link's receive buffer ...).
bind sync_fifo sva_handshake #(.W(W), .NAME("sync_fifo output")) u_sva_out (
    .clk, .rst, .en(1'b1), .valid(m_valid), .ready(m_ready), .payload(m_data));

// A slot's link towards the switch.
bind stream_link sva_handshake #(.W(DATA_W + 2), .NAME("stream_link output")) u_sva_out (
    .clk, .rst, .en(1'b1), .valid(m_axis_tvalid), .ready(m_axis_tready),
    .payload({m_axis_tuser, m_axis_tlast, m_axis_tdata}));

// Every reconfigurable module's output stream, but the blank partition's (rm_blank drives junk on
// purpose: the decoupler must keep it off the static side, which sva_decoupler checks).
bind rm_library sva_handshake #(.W(DATA_W + 2), .NAME("module output")) u_sva_out (
    .clk, .rst, .en(MODULE_ID != MOD_BLANK), .valid(m_axis_tvalid), .ready(m_axis_tready),
    .payload({m_axis_tuser, m_axis_tlast, m_axis_tdata}));

// The decoupler: nothing crosses while decoupled; AXI-Lite switches between transactions.
bind dfx_decoupler sva_decoupler u_sva (
    .clk, .rst, .decouple(decouple),
    .in_valid(s_axis_tvalid), .in_ready(s_axis_tready), .rp_in_valid(rp_s_axis_tvalid),
    .out_valid(m_axis_tvalid), .out_ready(m_axis_tready), .rp_out_ready(rp_m_axis_tready),
    .lite_local(lite_dec), .lite_idle(!pending_w && !pending_r && !own_b && !own_r),
    .rp_lite_request(rp_axil_awvalid || rp_axil_wvalid || rp_axil_arvalid));

// The configuration port's state machine.
bind config_port sva_config_port #(.NUM_SLOTS(NUM_SLOTS)) u_sva (
    .clk, .rst,
    .idle(phase == P_IDLE), .sync(phase == P_SYNC), .hdr(phase == P_HDR), .data(phase == P_DATA),
    .act(phase == P_ACT), .act2(phase == P_ACT2), .drain(phase == P_DRAIN),
    .tready(s_axis_tready), .slot_rst(slot_rst), .loads(loads));

// The configuration block: its read port quiet but for a pending read.
bind config_block sva_config_block u_sva (.clk, .rst, .rd_en, .rd_value);

// Fused regions: one module at a time in a region's frames.
bind config_port sva_fused_region #(
    .NUM_SLOTS(NUM_SLOTS), .MB(MB), .SLOT_FUSED_FRAMES(SLOT_FUSED_FRAMES),
    .SLOT_FUSED_MODULES(SLOT_FUSED_MODULES), .SLOT_FUSED_LAST(SLOT_FUSED_LAST)
) u_sva_fused (.clk, .rst, .fused_on(fused_on), .slot_module(slot_module), .slot_loading(slot_loading));

// AXI-Lite: every register file answers (B, R) by the rules; the shell's demultiplexer forwards
// requests to its ports (AW, W, AR) and answers the processor side by them.
bind axil_regfile sva_axil #(.ADDR_W(ADDR_W), .NAME("axil_regfile")) u_sva (
    .clk, .rst,
    .awaddr(s_axil_awaddr), .awvalid(s_axil_awvalid), .awready(s_axil_awready),
    .wdata(s_axil_wdata), .wstrb(s_axil_wstrb), .wvalid(s_axil_wvalid), .wready(s_axil_wready),
    .bresp(s_axil_bresp), .bvalid(s_axil_bvalid), .bready(s_axil_bready),
    .araddr(s_axil_araddr), .arvalid(s_axil_arvalid), .arready(s_axil_arready),
    .rdata(s_axil_rdata), .rresp(s_axil_rresp), .rvalid(s_axil_rvalid), .rready(s_axil_rready));
bind axil_demux sva_axil #(.ADDR_W(16), .NAME("axil_demux processor side")) u_sva_s (
    .clk, .rst,
    .awaddr(s_axil_awaddr), .awvalid(s_axil_awvalid), .awready(s_axil_awready),
    .wdata(s_axil_wdata), .wstrb(s_axil_wstrb), .wvalid(s_axil_wvalid), .wready(s_axil_wready),
    .bresp(s_axil_bresp), .bvalid(s_axil_bvalid), .bready(s_axil_bready),
    .araddr(s_axil_araddr), .arvalid(s_axil_arvalid), .arready(s_axil_arready),
    .rdata(s_axil_rdata), .rresp(s_axil_rresp), .rvalid(s_axil_rvalid), .rready(s_axil_rready));
bind axil_demux sva_axil #(.N(NPORTS), .ADDR_W(8), .REQUESTS(1'b1), .RESPONSES(1'b0),
                           .NAME("axil_demux port side")) u_sva_m (
    .clk, .rst,
    .awaddr(m_axil_awaddr), .awvalid(m_axil_awvalid), .awready(m_axil_awready),
    .wdata(m_axil_wdata), .wstrb(m_axil_wstrb), .wvalid(m_axil_wvalid), .wready(m_axil_wready),
    .bresp(m_axil_bresp), .bvalid(m_axil_bvalid), .bready(m_axil_bready),
    .araddr(m_axil_araddr), .arvalid(m_axil_arvalid), .arready(m_axil_arready),
    .rdata(m_axil_rdata), .rresp(m_axil_rresp), .rvalid(m_axil_rvalid), .rready(m_axil_rready));

`resetall

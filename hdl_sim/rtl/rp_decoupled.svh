// rp_decoupled.svh: the static side of one slot, the same in every view of rp_slot (simulation
// hdl_sim/rtl/rp_slot.sv, synthesis hdl_sim/synth/rp_slot_static.sv, board hdl_sim/vivado/rp_slot.sv):
// the dfx_decoupler between the slot's ports (rm_ports.svh) and the partition-side nets rp_*, which
// each view then connects to what it holds (every module behind a mux, a black box, the DFX
// partition). Included inside the module body, after its ports; one text so the views cannot drift.
    wire [DATA_W-1:0] rp_s_tdata, rp_m_tdata;
    wire rp_s_tvalid, rp_s_tready, rp_s_tlast, rp_s_tuser;
    wire rp_m_tvalid, rp_m_tready, rp_m_tlast, rp_m_tuser;
    wire [7:0] rp_awaddr, rp_araddr;
    wire [31:0] rp_wdata, rp_rdata;
    wire [3:0] rp_wstrb;
    wire [1:0] rp_bresp, rp_rresp;
    wire rp_awvalid, rp_awready, rp_wvalid, rp_wready, rp_bvalid, rp_bready;
    wire rp_arvalid, rp_arready, rp_rvalid, rp_rready;

    dfx_decoupler #(.DATA_W(DATA_W)) u_decoupler (
        .clk, .rst, .decouple, .decouple_status,
        .s_axis_tdata, .s_axis_tvalid, .s_axis_tready, .s_axis_tlast, .s_axis_tuser,
        .rp_s_axis_tdata(rp_s_tdata), .rp_s_axis_tvalid(rp_s_tvalid), .rp_s_axis_tready(rp_s_tready),
        .rp_s_axis_tlast(rp_s_tlast), .rp_s_axis_tuser(rp_s_tuser),
        .rp_m_axis_tdata(rp_m_tdata), .rp_m_axis_tvalid(rp_m_tvalid), .rp_m_axis_tready(rp_m_tready),
        .rp_m_axis_tlast(rp_m_tlast), .rp_m_axis_tuser(rp_m_tuser),
        .m_axis_tdata, .m_axis_tvalid, .m_axis_tready, .m_axis_tlast, .m_axis_tuser,
        .s_axil_awaddr, .s_axil_awvalid, .s_axil_awready, .s_axil_wdata, .s_axil_wstrb,
        .s_axil_wvalid, .s_axil_wready, .s_axil_bresp, .s_axil_bvalid, .s_axil_bready,
        .s_axil_araddr, .s_axil_arvalid, .s_axil_arready, .s_axil_rdata, .s_axil_rresp,
        .s_axil_rvalid, .s_axil_rready,
        .rp_axil_awaddr(rp_awaddr), .rp_axil_awvalid(rp_awvalid), .rp_axil_awready(rp_awready),
        .rp_axil_wdata(rp_wdata), .rp_axil_wstrb(rp_wstrb), .rp_axil_wvalid(rp_wvalid),
        .rp_axil_wready(rp_wready), .rp_axil_bresp(rp_bresp), .rp_axil_bvalid(rp_bvalid),
        .rp_axil_bready(rp_bready), .rp_axil_araddr(rp_araddr), .rp_axil_arvalid(rp_arvalid),
        .rp_axil_arready(rp_arready), .rp_axil_rdata(rp_rdata), .rp_axil_rresp(rp_rresp),
        .rp_axil_rvalid(rp_rvalid), .rp_axil_rready(rp_rready)
    );

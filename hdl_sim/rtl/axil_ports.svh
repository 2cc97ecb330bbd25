// axil_ports.svh: an AXI4-Lite slave port with an 8-bit byte address, as every module in a slot
// presents it. Included at the end of a port list (no trailing comma).
    input  wire [7:0]         s_axil_awaddr,
    input  wire               s_axil_awvalid,
    output wire               s_axil_awready,
    input  wire [31:0]        s_axil_wdata,
    input  wire [3:0]         s_axil_wstrb,
    input  wire               s_axil_wvalid,
    output wire               s_axil_wready,
    output wire [1:0]         s_axil_bresp,
    output wire               s_axil_bvalid,
    input  wire               s_axil_bready,
    input  wire [7:0]         s_axil_araddr,
    input  wire               s_axil_arvalid,
    output wire               s_axil_arready,
    output wire [31:0]        s_axil_rdata,
    output wire [1:0]         s_axil_rresp,
    output wire               s_axil_rvalid,
    input  wire               s_axil_rready

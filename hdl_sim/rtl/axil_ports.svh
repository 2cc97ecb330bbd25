// axil_ports.svh: the AXI4-Lite slave port list, the one copy every slave includes (the modules in a
// slot through rm_ports.svh, vision_regs, dfx_decoupler, axil_regfile, axil_demux's processor side,
// the shell). Included at the end of a port list (no trailing comma). The byte address is
// `AXIL_ADDR_W bits: 8 (a module's window) unless the includer defines it first, e.g.
//     `define AXIL_ADDR_W 16
//     `include "axil_ports.svh"
// (a parameter name works too: `define AXIL_ADDR_W ADDR_W). This file undefines it again, so one
// includer's width never leaks into the next.
`ifndef AXIL_ADDR_W
`define AXIL_ADDR_W 8
`endif
    input  wire [`AXIL_ADDR_W-1:0] s_axil_awaddr,
    input  wire               s_axil_awvalid,
    output wire               s_axil_awready,
    input  wire [31:0]        s_axil_wdata,
    input  wire [3:0]         s_axil_wstrb,
    input  wire               s_axil_wvalid,
    output wire               s_axil_wready,
    output wire [1:0]         s_axil_bresp,
    output wire               s_axil_bvalid,
    input  wire               s_axil_bready,
    input  wire [`AXIL_ADDR_W-1:0] s_axil_araddr,
    input  wire               s_axil_arvalid,
    output wire               s_axil_arready,
    output wire [31:0]        s_axil_rdata,
    output wire [1:0]         s_axil_rresp,
    output wire               s_axil_rvalid,
    input  wire               s_axil_rready
`undef AXIL_ADDR_W

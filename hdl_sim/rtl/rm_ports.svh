// rm_ports.svh: the port list every reconfigurable module (and the slot around it) presents to the
// static side: clock and reset, an AXI4-Stream input and output of DATA_W bits, an AXI4-Lite slave
// with an 8-bit byte address (axil_ports.svh). Included inside a module's port list; the module
// declares DATA_W.
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
    `include "axil_ports.svh"

// sva_fused_region: a fused region holds one module at a time (simulation only, bound by
// sva_binds.sv onto config_port). While slot h's fused module is active (fused_on[h]), every other
// member of h's region is blank and not loading, so nothing else occupies the region's frames and the
// members stay decoupled; and the host's module is one of those that need the region.
`resetall
`timescale 1ns / 1ps
`default_nettype none

module sva_fused_region #(
    parameter int NUM_SLOTS = 2,
    parameter int MB = 5,
    parameter logic [NUM_SLOTS*32-1:0] SLOT_FUSED_FRAMES = '0,
    parameter logic [NUM_SLOTS*32-1:0] SLOT_FUSED_MODULES = '0,
    parameter logic [NUM_SLOTS*32-1:0] SLOT_FUSED_LAST = '0
) (
    input wire                      clk,
    input wire                      rst,
    input wire [NUM_SLOTS-1:0]      fused_on,
    input wire [NUM_SLOTS*MB-1:0]   slot_module,
    input wire [NUM_SLOTS-1:0]      slot_loading
);
    wire unused_ok = &{1'b0, slot_loading};   // read only where a region is declared
    for (genvar h = 0; h < NUM_SLOTS; h++) begin : g_host
        wire [MB-1:0] held = slot_module[h*MB +: MB];
        a_fused_module: assert property (@(posedge clk) disable iff (rst)
            fused_on[h] |-> SLOT_FUSED_FRAMES[h*32 +: 32] != 0 && SLOT_FUSED_MODULES[h*32 + int'(held)])
            else $error("%m: slot %0d spans its fused region with module %0d, which does not need it", h, held);
        for (genvar j = h + 1; j < NUM_SLOTS; j++) begin : g_member
            if (SLOT_FUSED_FRAMES[h*32 +: 32] != 0 && j <= int'(SLOT_FUSED_LAST[h*32 +: 32])) begin : g_in
                a_member_blank: assert property (@(posedge clk) disable iff (rst)
                    fused_on[h] |-> slot_module[j*MB +: MB] == '0 && !slot_loading[j])
                    else $error("%m: slot %0d holds module %0d inside the fused module of slot %0d",
                                j, slot_module[j*MB +: MB], h);
            end
        end
    end
endmodule

`resetall

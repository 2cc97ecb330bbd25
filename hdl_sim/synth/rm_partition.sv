// rm_partition: the synthesis top of one reconfigurable module, as a DFX flow builds each RM
// out of context: every RM presents this one module name and the common RM port list
// (rm_ports.svh), and MODULE_ID picks which module fills it (the ids of rm_library.sv).
// Synthesis only: the simulated board uses rp_slot.sv's ReSim-style wrapper instead.
`resetall
`timescale 1ns / 1ps
`default_nettype none

module rm_partition #(
    parameter int MODULE_ID = 1,
    parameter int DATA_W = 32,
    parameter int MAX_W = 1920,
    parameter int NPPC = 1,
    parameter int DNN_P = 8,
    parameter int DNN_ACT_ENTRIES = 4096,
    parameter int DNN_W_ENTRIES = 1024,
    parameter int DNN_PG_ENTRIES = 64,
    parameter int DNN_MAX_LAYERS = 16,
    parameter int DNN_URAM = 1             // dnn_tile memories in UltraRAM (1) or block RAM (0)
) (
    `include "rm_ports.svh"
);
    rm_library #(
        .MODULE_ID(MODULE_ID), .DATA_W(DATA_W), .MAX_W(MAX_W), .NPPC(NPPC), .DNN_P(DNN_P),
        .DNN_ACT_ENTRIES(DNN_ACT_ENTRIES), .DNN_W_ENTRIES(DNN_W_ENTRIES),
        .DNN_PG_ENTRIES(DNN_PG_ENTRIES), .DNN_MAX_LAYERS(DNN_MAX_LAYERS), .DNN_URAM(DNN_URAM)
    ) u_rm (.*);
endmodule

`resetall

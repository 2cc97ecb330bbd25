// fpgashare_rm (black box): the reconfigurable partition as the static shell sees it. Each
// module's partial is synthesized out of context from a generated rm_<module>.sv that defines
// this module name with this port list (rm_ports.svh) around the module (runtime/vivado/flow.py).
`resetall
`timescale 1ns / 1ps
`default_nettype none

(* black_box *)
module fpgashare_rm #(
    parameter int DATA_W = 32
) (
    `include "rm_ports.svh"
);
endmodule

`resetall

// fpgashare_rm (black box): the reconfigurable partition as the static shell sees it. Each
// module's partial is synthesized out of context from a generated rm_<module>.sv that defines
// this module name with this port list (rm_ports.svh) around the module (runtime/vivado/flow.py).
`resetall
`timescale 1ns / 1ps
`default_nettype none

// Every partial's file defines this name, so none is named after it; the box is empty on purpose.
/* verilator lint_off DECLFILENAME */
/* verilator lint_off UNUSEDSIGNAL */
/* verilator lint_off UNDRIVEN */
(* black_box *)
module fpgashare_rm #(
    parameter int DATA_W = 32
) (
    `include "rm_ports.svh"
);
endmodule
/* verilator lint_on UNDRIVEN */
/* verilator lint_on UNUSEDSIGNAL */
/* verilator lint_on DECLFILENAME */

`resetall

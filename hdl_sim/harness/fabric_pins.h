// fabric_pins.h: the boundary between the shell and its AXI-Lite control path simulated on its own (the
// shell built with FABRIC_EXTERNAL = 1: axil_fabric.sv, the demultiplexer, the register file and the
// route table). The processor's bus goes to the fabric directly; the harness copies the shell's side
// (the slots' answers, the read-only word) out of the shell, the fabric's model (fabric_model.cpp, a
// shared library) evaluates it, and its outputs towards the shell go back in after its edge.
#pragma once
#include <cstdint>

#include "side_api.h"

namespace fab {

constexpr int MAX_SLOTS = 8;
constexpr int MAX_SINKS = 16;          // slots + streams
constexpr int ROUTE_WORDS = 3;         // MAX_SINKS * 5 route bits

// Bit k of a per-slot field is slot k's; bresp/rresp hold two bits a slot.
struct Pins {
    // to the fabric: the processor's requests and the reset ...
    uint32_t awaddr = 0, awvalid = 0, wdata = 0, wstrb = 0, wvalid = 0, bready = 0;
    uint32_t araddr = 0, arvalid = 0, rready = 0, rst = 0;
    // ... and the shell's side (Side: compared as a whole by the harness)
    struct Side {
        uint32_t awready = 0, wready = 0, bvalid = 0, arready = 0, rvalid = 0, bresp = 0, rresp = 0;
        uint32_t ro_word = 0;
        uint32_t rdata[MAX_SLOTS] = {};
    } side;
    // from the fabric: the processor's answers ...
    uint32_t s_awready = 0, s_wready = 0, s_bresp = 0, s_bvalid = 0, s_arready = 0, s_rdata = 0, s_rresp = 0;
    uint32_t s_rvalid = 0;
    // ... and what the shell sees (all of it from the fabric's flops)
    struct Out {
        uint32_t awaddr = 0, awvalid = 0, wdata = 0, wstrb = 0, wvalid = 0, bready = 0;
        uint32_t araddr = 0, arvalid = 0, rready = 0;
        uint32_t rd_en = 0, rd_index = 0, arm = 0, arm_slot = 0, bypass = 0, route_err = 0;
        uint32_t route[ROUTE_WORDS] = {};
        uint32_t route_words[MAX_SINKS] = {};
    } out;
};

using side::EVAL_CLK;
using side::EVAL_WHOLE;

// What the fabric's library exports (fab_api()).
using Api = side::Api<Pins>;

constexpr int ABI = 1;

}  // namespace fab

// config_pins.h: the boundary between the shell and its configuration block simulated on its own
// (the shell built with CFG_EXTERNAL = 1: config_block.sv, with the configuration port, its input
// slice, the cycle counter and the registers they own). The harness copies the shell's side out of the
// shell, the block's model (config_model.cpp, a shared library) evaluates it and writes its outputs
// back; the configuration stream goes to the block directly.
#pragma once
#include <cstdint>

#include "side_api.h"

namespace cfgblk {

constexpr int MAX_SLOTS = 8;

struct Pins {
    // to the block: the configuration stream, and the shell's side
    uint32_t tdata = 0, tvalid = 0, tlast = 0, rst = 0;
    uint32_t arm = 0, arm_slot = 0, rd_en = 0, rd_index = 0;
    // from the block: the stream's ready, and what the shell sees (slot_module: 5 bits a slot in
    // two words, slot_error: 8 bits a slot in two words, the rest a bit a slot)
    uint32_t tready = 0;
    uint32_t rd_value = 0, loading = 0, failed = 0, slot_rst = 0, fused_on = 0;
    uint32_t module[2] = {}, error[2] = {};
};

using side::EVAL_CLK;
using side::EVAL_WHOLE;

// What the block's library exports (cfg_api()).
using Api = side::Api<Pins>;

constexpr int ABI = 1;

}  // namespace cfgblk

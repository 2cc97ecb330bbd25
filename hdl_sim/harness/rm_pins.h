// rm_pins.h: the boundary between the shell and a reconfigurable module simulated on its own (the
// shell built with RM_EXTERNAL = 1; rp_slot.sv packs the bits). The harness copies one slot's pins out
// of the shell, a module model (rm_model.cpp, one shared library per module) evaluates them and
// writes its outputs back.
#pragma once
#include <cstdint>

namespace rm {

constexpr int MAX_WORDS = 4;      // a stream beat: up to 128 bits (four pixels per clock)

// rm_ctl, the static side's signals as the selected module sees them
constexpr uint32_t CTL_MODULE = 0x1Fu;         // [4:0] the slot's active module id (0: the blank)
constexpr uint32_t CTL_RST = 1u << 5;          // reset: the shell's, or a load's into this slot
constexpr int CTL_S_TVALID = 6, CTL_S_TLAST = 7, CTL_S_TUSER = 8, CTL_M_TREADY = 9;
constexpr int CTL_AWVALID = 10, CTL_WVALID = 11, CTL_BREADY = 12, CTL_ARVALID = 13, CTL_RREADY = 14;
// rm_sts, the module's: [0] s_tready [1] m_tvalid [2] m_tlast [3] m_tuser [4] awready [5] wready
// [6] bvalid [7] arready [8] rvalid [10:9] bresp [12:11] rresp

struct Pins {
    // to the module
    uint32_t ctl = 0, awaddr = 0, araddr = 0, wdata = 0, wstrb = 0;
    uint32_t s_tdata[MAX_WORDS] = {};
    // from the module
    uint32_t sts = 0, rdata = 0;
    uint32_t m_tdata[MAX_WORDS] = {};
};

// eval's mode: the clock's level (EVAL_CLK), and EVAL_WHOLE for Verilator's whole eval() at that
// level rather than the level's own phases (eval_phases.h; the reference the tests compare with).
// EVAL_HELD: the inputs in pins are those of the model's last evaluation (the harness's edge after the
// low phase that settled them), so only the clock is written; the outputs are read back as always.
// EVAL_FOLD (with EVAL_CLK): the low level with the inputs in pins, then the edge, in one call: the
// harness skipped the model's low evaluation because no input with a combinational path to an output
// moved (COMB_* below), so the low phase's outputs were the edge's before.
constexpr int EVAL_CLK = 1, EVAL_WHOLE = 2, EVAL_HELD = 4, EVAL_FOLD = 8;

// A module's inputs with a combinational path to one of its outputs (a mask the harness gets from the
// build, see hdl_sim/comb_inputs.py): rm_ctl's bits in their places (CTL_RST, CTL_S_TVALID ...), and
// the wider inputs and the clock above them. COMB_ALL: every input, the default (never folded).
constexpr uint32_t COMB_S_TDATA = 1u << 16, COMB_AWADDR = 1u << 17, COMB_ARADDR = 1u << 18,
                   COMB_WDATA = 1u << 19, COMB_WSTRB = 1u << 20, COMB_CLK = 1u << 21;
constexpr uint32_t COMB_ALL = 0xFFFFFFFFu;

// What a module library exports (rm_api()): a model per call of create; eval takes the inputs in
// pins, evaluates in mode (the clock's level and how), and writes the outputs into pins. mark copies the model's
// whole state aside; unchanged says whether the state is byte for byte the copy (the harness's test
// that a module holding still with unchanged inputs is at a fixed point, see shell_harness.cpp).
struct Api {
    int abi;                       // ABI below; the harness refuses another
    int words;                     // 32-bit words of the module's stream beat
    void* (*create)();
    void (*destroy)(void*);
    void (*eval)(void*, int mode, Pins*);
    void (*mark)(void*);
    int (*unchanged)(void*);
};

constexpr int ABI = 4;

}  // namespace rm

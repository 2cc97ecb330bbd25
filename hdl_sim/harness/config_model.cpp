// config_model: the shell's configuration block (config_block.sv) as a shared library, evaluated by the
// shell harness at the block's boundary (config_pins.h) every cycle, and alone while a partial load
// streams in and the rest of the shell is at rest (shell_harness.cpp). What is not this block's own
// (the model's creation, its state bytes) is side_model.h's.
#include "Vcfg.h"
#include "Vcfg___024root.h"
#include "config_pins.h"
#include "eval_phases.h"
#include "port_words.h"
#include "side_model.h"
#include "verilated.h"

DEFINE_EVAL_PHASES(Vcfg)

namespace {

using ModuleType = std::remove_reference_t<decltype(std::declval<Vcfg&>().slot_module)>;
using ErrorType = std::remove_reference_t<decltype(std::declval<Vcfg&>().slot_error)>;
static_assert(words_of<ModuleType>() <= 2 && words_of<ErrorType>() <= 2, "at most 8 slots");

constexpr char NAME[] = "cfg";

void eval(void* p, int mode, cfgblk::Pins* x) {
    Vcfg* t = side::top_of<Vcfg>(p);
    const int clk = mode & cfgblk::EVAL_CLK;
    t->clk = clk;
    t->rst = x->rst;
    t->s_axis_tdata = x->tdata;
    t->s_axis_tvalid = x->tvalid;
    t->s_axis_tlast = x->tlast;
    t->arm = x->arm;
    t->arm_slot = x->arm_slot;
    t->rd_en = x->rd_en;
    t->rd_index = x->rd_index;
    eval_level(t->rootp, clk, mode & cfgblk::EVAL_WHOLE);
    x->tready = t->s_axis_tready;
    x->rd_value = t->rd_value;
    x->loading = t->slot_loading;
    x->failed = t->slot_failed;
    x->slot_rst = t->slot_rst;
    x->fused_on = t->fused_on;
    for (int j = 0; j < words_of<ModuleType>(); j++) x->module[j] = get_word(t->slot_module, j);
    for (int j = 0; j < words_of<ErrorType>(); j++) x->error[j] = get_word(t->slot_error, j);
}

const cfgblk::Api API = {cfgblk::ABI, side::create<Vcfg, NAME>, side::destroy<Vcfg>, eval, side::mark<Vcfg>,
                         side::unchanged<Vcfg>, side::state<Vcfg>};

}  // namespace

extern "C" __attribute__((visibility("default"))) const cfgblk::Api* cfg_api() { return &API; }

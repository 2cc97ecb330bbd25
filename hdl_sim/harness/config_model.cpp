// config_model: the shell's configuration block (config_block.sv) as a shared library, evaluated by the
// shell harness at the block's boundary (config_pins.h) every cycle, and alone while a partial load
// streams in and the rest of the shell is at rest (shell_harness.cpp).
#include <cstring>
#include <memory>
#include <vector>

#include "Vcfg.h"
#include "Vcfg___024root.h"
#include "config_pins.h"
#include "eval_phases.h"
#include "port_words.h"
#include "verilated.h"

DEFINE_EVAL_PHASES(Vcfg)

namespace {

using ModuleType = std::remove_reference_t<decltype(std::declval<Vcfg&>().slot_module)>;
using ErrorType = std::remove_reference_t<decltype(std::declval<Vcfg&>().slot_error)>;
// 32-bit words of a port (a port narrower than 32 bits is one word; port_words counts whole words)
template <typename T>
constexpr int words_of() { return sizeof(T) < 4 ? 1 : port_words<T>(); }
static_assert(words_of<ModuleType>() <= 2 && words_of<ErrorType>() <= 2, "at most 8 slots");

struct Model {
    std::unique_ptr<VerilatedContext> ctx;
    std::unique_ptr<Vcfg> top;
    std::vector<unsigned char> mark;
};

// As a module's (rm_model.cpp): every variable of the design lives in the root object.
const unsigned char* state_bytes(Model* m) { return reinterpret_cast<const unsigned char*>(m->top->rootp); }
constexpr size_t STATE_SIZE = sizeof(Vcfg___024root);

void* create() {
    auto* m = new Model;
    m->ctx = std::make_unique<VerilatedContext>();
    m->top = std::make_unique<Vcfg>(m->ctx.get(), "cfg");
    m->top->clk = 0;
    m->top->eval();
    return m;
}

void destroy(void* p) {
    auto* m = static_cast<Model*>(p);
    m->top->final();
    delete m;
}

void eval(void* p, int mode, cfgblk::Pins* x) {
    Vcfg* t = static_cast<Model*>(p)->top.get();
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
    if (mode & cfgblk::EVAL_WHOLE) {
        eval_whole(t->rootp);
    } else if (clk) {
        eval_edge(t->rootp);
    } else {
        eval_low(t->rootp);
    }
    x->tready = t->s_axis_tready;
    x->rd_value = t->rd_value;
    x->loading = t->slot_loading;
    x->failed = t->slot_failed;
    x->slot_rst = t->slot_rst;
    x->fused_on = t->fused_on;
    for (int j = 0; j < words_of<ModuleType>(); j++) x->module[j] = get_word(t->slot_module, j);
    for (int j = 0; j < words_of<ErrorType>(); j++) x->error[j] = get_word(t->slot_error, j);
}

void mark(void* p) {
    auto* m = static_cast<Model*>(p);
    m->mark.assign(state_bytes(m), state_bytes(m) + STATE_SIZE);
}

int unchanged(void* p) {
    auto* m = static_cast<Model*>(p);
    return m->mark.size() == STATE_SIZE && std::memcmp(m->mark.data(), state_bytes(m), STATE_SIZE) == 0;
}

const void* state(void* p, size_t* size) {
    *size = reinterpret_cast<const unsigned char*>(&static_cast<Model*>(p)->top->rootp->vlSymsp) -
            state_bytes(static_cast<Model*>(p));
    return state_bytes(static_cast<Model*>(p));
}

const cfgblk::Api API = {cfgblk::ABI, create, destroy, eval, mark, unchanged, state};

}  // namespace

extern "C" __attribute__((visibility("default"))) const cfgblk::Api* cfg_api() { return &API; }

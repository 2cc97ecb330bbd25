// rm_model: one reconfigurable module (rm_library at one MODULE_ID) as a shared library, evaluated by
// the shell harness at its slot's boundary (rm_pins.h) only while it is the slot's loaded module.
// What is not the module's own (the model's creation, its state bytes) is side_model.h's.
#include "Vrm.h"
#include "Vrm___024root.h"
#include "port_words.h"
#include "rm_pins.h"
#include "eval_phases.h"
#include "side_model.h"
#include "verilated.h"

// As in shell_harness.cpp: the evaluation without eval()'s per-call housekeeping, after one eval(),
// by the clock's level (the harness evaluates a module at its edge with the pins of its low phase).
DEFINE_EVAL_PHASES(Vrm)

namespace {

using BeatType = std::remove_reference_t<decltype(std::declval<Vrm&>().s_axis_tdata)>;
constexpr int BEAT_WORDS = port_words<BeatType>();
static_assert(BEAT_WORDS <= rm::MAX_WORDS, "a module's beat is at most 128 bits");

constexpr char NAME[] = "rm";

// The ports through the root object, where they live (the model class holds references to them: a
// load more a port).
void eval(void* p, int mode, rm::Pins* x) {
    Vrm___024root* r = side::top_of<Vrm>(p)->rootp;
    const int clk = mode & rm::EVAL_CLK;
    r->clk = clk;
    if (!(mode & rm::EVAL_HELD)) {   // with EVAL_FOLD the inputs are new: never held
        const uint32_t c = x->ctl;
        r->rst = (c & rm::CTL_RST) != 0;
        for (int j = 0; j < BEAT_WORDS; j++) put_word(r->s_axis_tdata, j, x->s_tdata[j]);
        r->s_axis_tvalid = c >> rm::CTL_S_TVALID & 1;
        r->s_axis_tlast = c >> rm::CTL_S_TLAST & 1;
        r->s_axis_tuser = c >> rm::CTL_S_TUSER & 1;
        r->m_axis_tready = c >> rm::CTL_M_TREADY & 1;
        r->s_axil_awaddr = x->awaddr;
        r->s_axil_awvalid = c >> rm::CTL_AWVALID & 1;
        r->s_axil_wdata = x->wdata;
        r->s_axil_wstrb = x->wstrb;
        r->s_axil_wvalid = c >> rm::CTL_WVALID & 1;
        r->s_axil_bready = c >> rm::CTL_BREADY & 1;
        r->s_axil_araddr = x->araddr;
        r->s_axil_arvalid = c >> rm::CTL_ARVALID & 1;
        r->s_axil_rready = c >> rm::CTL_RREADY & 1;
    }
    if (mode & rm::EVAL_FOLD) {   // the low level first, with these inputs, then the edge (rm::EVAL_FOLD)
        r->clk = 0;
        eval_level(r, 0, mode & rm::EVAL_WHOLE);
        r->clk = 1;
    }
    eval_level(r, clk, mode & rm::EVAL_WHOLE);
    x->sts = uint32_t(r->s_axis_tready) | uint32_t(r->m_axis_tvalid) << 1 | uint32_t(r->m_axis_tlast) << 2 |
             uint32_t(r->m_axis_tuser) << 3 | uint32_t(r->s_axil_awready) << 4 | uint32_t(r->s_axil_wready) << 5 |
             uint32_t(r->s_axil_bvalid) << 6 | uint32_t(r->s_axil_arready) << 7 | uint32_t(r->s_axil_rvalid) << 8 |
             uint32_t(r->s_axil_bresp) << 9 | uint32_t(r->s_axil_rresp) << 11;
    x->rdata = r->s_axil_rdata;
    for (int j = 0; j < BEAT_WORDS; j++) x->m_tdata[j] = get_word(r->m_axis_tdata, j);
}

const rm::Api API = {rm::ABI, BEAT_WORDS, side::create<Vrm, NAME>, side::destroy<Vrm>, eval, side::mark<Vrm>,
                     side::unchanged<Vrm>};

}  // namespace

extern "C" __attribute__((visibility("default"))) const rm::Api* rm_api() { return &API; }

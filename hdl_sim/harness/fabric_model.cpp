// fabric_model: the shell's AXI-Lite control path (axil_fabric.sv) as a shared library, evaluated by the
// shell harness at its boundary (fabric_pins.h) while the processor's bus moves, and skipped while it
// rests (shell_harness.cpp). What is not the fabric's own (the model's creation, its state bytes) is
// side_model.h's.
#include "Vfab.h"
#include "Vfab___024root.h"
#include "eval_phases.h"
#include "fabric_pins.h"
#include "port_words.h"
#include "side_model.h"
#include "verilated.h"

DEFINE_EVAL_PHASES(Vfab)

namespace {

template <typename T>
using PortOf = std::remove_reference_t<T>;
using RdataType = PortOf<decltype(std::declval<Vfab&>().m_axil_rdata)>;
using RouteType = PortOf<decltype(std::declval<Vfab&>().route)>;
using WordsType = PortOf<decltype(std::declval<Vfab&>().route_words)>;
static_assert(words_of<RdataType>() <= fab::MAX_SLOTS && words_of<RouteType>() <= fab::ROUTE_WORDS &&
              words_of<WordsType>() <= fab::MAX_SINKS, "at most 8 slots and 16 sinks");

constexpr char NAME[] = "fabric";

void eval(void* p, int mode, fab::Pins* x) {
    Vfab* t = side::top_of<Vfab>(p);
    const int clk = mode & fab::EVAL_CLK;
    t->clk = clk;
    t->rst = x->rst;
    t->s_axil_awaddr = x->awaddr;
    t->s_axil_awvalid = x->awvalid;
    t->s_axil_wdata = x->wdata;
    t->s_axil_wstrb = x->wstrb;
    t->s_axil_wvalid = x->wvalid;
    t->s_axil_bready = x->bready;
    t->s_axil_araddr = x->araddr;
    t->s_axil_arvalid = x->arvalid;
    t->s_axil_rready = x->rready;
    const fab::Pins::Side& s = x->side;
    t->m_axil_awready = s.awready;
    t->m_axil_wready = s.wready;
    t->m_axil_bvalid = s.bvalid;
    t->m_axil_arready = s.arready;
    t->m_axil_rvalid = s.rvalid;
    t->m_axil_bresp = s.bresp;
    t->m_axil_rresp = s.rresp;
    for (int j = 0; j < words_of<RdataType>(); j++) put_word(t->m_axil_rdata, j, s.rdata[j]);
    t->ro_word = s.ro_word;
    eval_level(t->rootp, clk, mode & fab::EVAL_WHOLE);
    x->s_awready = t->s_axil_awready;
    x->s_wready = t->s_axil_wready;
    x->s_bresp = t->s_axil_bresp;
    x->s_bvalid = t->s_axil_bvalid;
    x->s_arready = t->s_axil_arready;
    x->s_rdata = t->s_axil_rdata;
    x->s_rresp = t->s_axil_rresp;
    x->s_rvalid = t->s_axil_rvalid;
    fab::Pins::Out& o = x->out;
    o.awaddr = t->m_axil_awaddr;
    o.awvalid = t->m_axil_awvalid;
    o.wdata = t->m_axil_wdata;
    o.wstrb = t->m_axil_wstrb;
    o.wvalid = t->m_axil_wvalid;
    o.bready = t->m_axil_bready;
    o.araddr = t->m_axil_araddr;
    o.arvalid = t->m_axil_arvalid;
    o.rready = t->m_axil_rready;
    o.rd_en = t->rd_en;
    o.rd_index = t->rd_index;
    o.arm = t->arm;
    o.arm_slot = t->arm_slot;
    o.bypass = t->bypass;
    o.route_err = t->route_err;
    for (int j = 0; j < words_of<RouteType>(); j++) o.route[j] = get_word(t->route, j);
    for (int j = 0; j < words_of<WordsType>(); j++) o.route_words[j] = get_word(t->route_words, j);
}

const fab::Api API = {fab::ABI, side::create<Vfab, NAME>, side::destroy<Vfab>, eval, side::mark<Vfab>,
                      side::unchanged<Vfab>, side::state<Vfab>};

}  // namespace

extern "C" __attribute__((visibility("default"))) const fab::Api* fab_api() { return &API; }

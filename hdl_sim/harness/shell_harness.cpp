// Bulk harness for the Verilated shell: a C ABI that Python calls through ctypes, so frames and
// bitstreams move through the RTL without a Python call per cycle. One clock; every call advances
// the model by whole cycles and returns what it saw.
//
// Two ways to drive it. fs_run: one frame on stream 0 and/or one bitstream, run to the end (the
// one-stream backend). Channels (fs_chan_*, fs_advance): work armed on any video stream and on the
// configuration port runs in the same cycles, whatever else the caller does meanwhile - every cycle
// of every call (register accesses, idling) drives every armed channel - and each channel records
// the cycle it ended (the co-simulation of hdl_sim/cosim.py).
//
// Modules (fs_attach): with the shell built RM_EXTERNAL = 1 its slots hold no modules; the harness
// evaluates, per slot, only the model of the module the slot's last load activated (rm_pins.h), as a
// gated clock would leave every other module frozen. Each half cycle the shell and the active models
// are evaluated in turn until the boundary settles, so every cycle is the one the shell with the
// modules inside would have (tests/test_harness_modules.py compares the two).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <memory>
#include <type_traits>
#include <utility>

#include "Vshell.h"
#include "Vshell___024root.h"
#include "config_pins.h"
#include "cost_split.h"
#include "eval_phases.h"
#include "fabric_pins.h"
#include "junk_sources.h"
#include "port_words.h"
#include "rm_pins.h"
#include "verilated.h"

// The model's evaluation without eval()'s per-call housekeeping (a deleter for dynamic objects and
// a cross-thread message queue, two mutexes and thread-local look-ups a call, neither used by a
// single-threaded model without classes): at several evaluations a cycle it was a tenth of the time.
// And split by the clock's level (eval_phases.h): the low evaluation after new inputs, the edge
// evaluation with the same inputs. eval() runs once at creation, for the model's initialisation.
DEFINE_EVAL_PHASES(Vshell)

namespace {

constexpr int MAX_STREAMS = 16;
constexpr int CFG_CHANNEL = MAX_STREAMS;     // channel index of the configuration port
// 32-bit words in a stream beat: the shell's DATA_W / 32 (1, or 4 at four pixels per clock, where
// Verilator makes the port a VlWide). Stream arrays below hold whole beats of this many words.
using BeatType = std::remove_reference_t<decltype(std::declval<Vshell&>().s_axis_tdata)>;
constexpr int BEAT_WORDS = sizeof(BeatType) / 4;
const uint32_t ZERO_BEAT[BEAT_WORDS] = {};

// One video stream's DMA pair: beats in (TLAST every in_cols, TUSER on the first), beats out.
struct StreamChannel {
    bool armed = false, done = false;
    const uint32_t* in = nullptr;
    uint32_t* out = nullptr;
    uint64_t n_in = 0, n_out = 0, i_in = 0, i_out = 0;
    uint32_t in_cols = 0, out_cols = 0;
    uint64_t extra = 0, last_err = 0, user_err = 0, settle = 0, after = 0;
    uint64_t start = 0, out_end = 0, end = 0;     // absolute cycles
    bool in_on = false;
};

// The configuration port: words in (TLAST on the last); done `tail` cycles after the last word
// (activation), so a load's end is where the shell says the slot is ready.
struct CfgChannel {
    bool armed = false, done = false;
    const uint32_t* words = nullptr;
    uint64_t n = 0, i = 0, tail = 0, after = 0;
    uint64_t start = 0, words_end = 0, end = 0;
    bool on = false;
};

// The shell's slots and the module boundary (RM_EXTERNAL = 1): rm_ctl has a 32-bit word per slot.
using CtlType = std::remove_reference_t<decltype(std::declval<Vshell&>().rm_ctl)>;
constexpr int NUM_SLOTS = port_words<CtlType>();
constexpr int NUM_IDS = 32;
// rm_ctl's bit 15 (rp_slot.sv; not in rm_pins.h, which the modules' models are built with and which they
// do not read): the slot's decoupler isolates it.
constexpr uint32_t CTL_DECOUPLED = 1u << 15;

// One slot's module models, by id, and its pins as last exchanged with the shell.
//
// A module at rest is not evaluated. Cycle n evaluates a model from its state X with the pins P it
// reads; if its state after cycle n's edge is again X byte for byte (api->unchanged against the copy
// api->mark took after cycle n-1's edge, whose pins were P as well: they are part of the state), then
// every later cycle with the pins still P would run the same computation from the same bytes and
// leave X again, with the same outputs in both phases; the shell holds them already (the test also
// requires that the edge left the outputs of the low phase unchanged). So the slot is `quiet`: its
// model is skipped, both phases, until a pin differs, a reset, or another module is selected; a
// skipped cycle pair leaves the model's clock history as a full one would (its last evaluation was
// an edge either way). A module that keeps changing with still pins (a DNN tile computing) is tried
// again after a doubling wait, so the copies cost little.
struct ModuleSlot {
    const rm::Api* api[NUM_IDS] = {};
    void* model[NUM_IDS] = {};
    int attached = 0;
    int active = 0;              // the id the shell selected in this cycle's low phase (0: none to run)
    rm::Pins pins;
    bool moved = true;           // the pins of this cycle differ from those of the last edge
    bool quiet = false;          // the active model is at a fixed point for these pins: not evaluated
    bool marked = false;         // api->mark copied the state after the last edge (with still pins)
    uint32_t backoff = 0, wait = 0;   // cycles before the next mark after a failed test
    uint64_t skipped = 0;        // evaluations skipped while quiet
    bool held = false;           // the active model's last evaluation was this low phase's, with `pins`
    bool edged = false;          // the active model's last evaluation was the last edge, with its pins
    bool fold = false;           // its low evaluation is folded into this cycle's edge (fold_low)
    uint32_t comb[NUM_IDS];      // per model, its inputs with a combinational path to an output (rm::COMB_*)
    ModuleSlot() { std::fill(std::begin(comb), std::end(comb), rm::COMB_ALL); }
};

constexpr uint32_t MAX_BACKOFF = 1024;

inline void wake(ModuleSlot& s) {
    s.quiet = s.marked = s.edged = false;
    s.backoff = s.wait = 0;
}

// After the active model's edge: mark, test, or wait (see ModuleSlot). `outputs_moved`: the edge
// changed an output the shell held since the low phase; a cycle counts towards rest only if not, so
// the outputs a skipped low phase would have given are those the shell holds (whatever the module
// does with its clock's level).
inline void watch_rest(ModuleSlot& s, bool outputs_moved) {
    void* model = s.model[s.active];
    const rm::Api* api = s.api[s.active];
    if (s.moved || outputs_moved) {
        s.marked = false;
    } else if (s.wait) {
        s.wait--;
    } else if (!s.marked) {
        api->mark(model);
        s.marked = true;
    } else if (api->unchanged(model)) {
        s.quiet = true;
    } else {
        s.marked = false;
        s.backoff = s.backoff ? (s.backoff * 2 > MAX_BACKOFF ? MAX_BACKOFF : s.backoff * 2) : 1;
        s.wait = s.backoff;
    }
}

constexpr size_t SHELL_STATE = sizeof(Vshell___024root);

struct ShellCopies {   // scratch of the rest test (shell_at_rest)
    unsigned char saved[SHELL_STATE];
    unsigned char probe[SHELL_STATE];
};

// The configuration block outside the shell (CFG_EXTERNAL = 1, config_pins.h), and the fast path of a
// load (try_fast_load): while the port's channel is the only work and the rest of the shell is at rest,
// only the block is evaluated.
//
// Between loads the block holds still: it is skipped as a module at rest is (ModuleSlot), its pins
// being the shell's side and the configuration stream.
struct ConfigBlock {
    const cfgblk::Api* api = nullptr;
    void* model = nullptr;
    cfgblk::Pins pins;
    bool moved = true, quiet = false, marked = false;   // as ModuleSlot's
    uint32_t rest_backoff = 0, rest_wait = 0;
    bool fast = true;                 // fs_set_fast_load
    uint32_t backoff = 0, wait = 0;   // cycles before the next rest test of the shell after a failed one
    uint64_t fast_cycles = 0;         // cycles the shell was not evaluated
    std::unique_ptr<ShellCopies> copies = std::make_unique<ShellCopies>();
};

// The AXI-Lite control path outside the shell (FABRIC_EXTERNAL = 1, fabric_pins.h): the demultiplexer,
// the register file and the route table. It is skipped while at rest, as a module is (ModuleSlot, and
// the configuration block): its pins are the processor's bus and the shell's side (the slots' answers,
// the read-only word). Everything it drives towards the shell comes from its flops and is written into
// the shell after its edge, so at rest it holds the shell's inputs where they are; while the bus is
// idle it is at rest whatever streams, which is most cycles.
struct FabricPart {
    const fab::Api* api = nullptr;
    void* model = nullptr;
    fab::Pins pins;
    bool moved = true, quiet = false, marked = false;   // as ModuleSlot's
    uint32_t backoff = 0, wait = 0;
    bool rest = true;                 // fs_set_fabric_rest: skip it at rest (0: evaluate it every cycle)
    uint64_t evals = 0, skipped = 0;  // its evaluations run, and skipped at rest
};

struct Harness {
    std::unique_ptr<VerilatedContext> ctx;
    std::unique_ptr<Vshell> top;
    ModuleSlot slots[NUM_SLOTS];
    ConfigBlock block;
    FabricPart fabric;
    bool modules = false;             // some model attached: run the boundary every half cycle
    int whole = 0;                    // rm::EVAL_WHOLE: every model evaluated by eval() (fs_set_whole_eval)
    bool lean = true;                 // the lean pin exchange (read_pins_lean, rm::EVAL_HELD; fs_set_lean_exchange)
    bool fold = true;                 // fold a module's low evaluation into its edge when it may (fs_set_fold_low)
    bool fold_check = false;          // evaluate it anyway and fault if its outputs moved (fs_set_fold_check)
    uint64_t folds = 0;               // low evaluations folded into the edge's call so far
    uint64_t unfolds = 0;             // folds undone in a later round of the low phase (an input of the set moved)
    uint64_t fold_checks = 0;         // low evaluations that could have been folded, run and checked (fold_check)
    uint32_t fault = 0;               // {module id, slot + 1}: a slot selected a module with no model
    uint64_t shell_evals = 0, module_evals = 0;   // evaluations so far (what a cycle costs, fs_evals)
    uint64_t cycle = 0;
    uint32_t rng = 1;
    int streams = 1;                  // video streams the Verilated shell has (NUM_STREAMS)
    StreamChannel chan[MAX_STREAMS];
    CfgChannel cfg;
    int armed = 0;                    // channels armed and not done
    uint32_t done_mask = 0;           // channels done and not collected (bit CFG_CHANNEL: the port)
    CostSplit split;                  // where the time goes, by part (fs_set_cost_split; off by default)
};

// The shell's evaluation at each level (eval_phases.h), or eval() whole at both (fs_set_whole_eval).
inline void shell_low(Harness* h) {
    SplitSpan span(h->split, CostSplit::SHELL);
    if (h->whole) {
        eval_whole(h->top->rootp);
    } else {
        eval_low(h->top->rootp);
    }
}

inline void shell_edge(Harness* h) {
    SplitSpan span(h->split, CostSplit::SHELL);
    if (h->whole) {
        eval_whole(h->top->rootp);
    } else {
        eval_edge(h->top->rootp);
    }
}

// A module model's evaluation and the configuration block's, each timed as its part when the split is on.
inline void eval_module(Harness* h, const rm::Api* api, void* model, int mode, rm::Pins* pins) {
    SplitSpan span(h->split, CostSplit::MODULES);
    api->eval(model, mode, pins);
}

inline void eval_block(Harness* h, int mode) {
    SplitSpan span(h->split, CostSplit::BLOCK);
    h->block.api->eval(h->block.model, mode, &h->block.pins);
}

// The fabric is part of the shell: timed as the shell's.
inline void eval_fabric(Harness* h, int mode) {
    SplitSpan span(h->split, CostSplit::SHELL);
    h->fabric.api->eval(h->fabric.model, mode, &h->fabric.pins);
    h->fabric.evals++;
}

inline void wake_fabric(FabricPart& f) {
    f.moved = true;
    f.quiet = f.marked = false;
    f.backoff = f.wait = 0;
}

// The processor's bus: the fabric's pins when it is outside the shell, else the shell's ports.
enum BusPin { AWADDR, AWVALID, WDATA, WSTRB, WVALID, BREADY, ARADDR, ARVALID, RREADY };

void bus_set(Harness* h, BusPin pin, uint32_t v) {
    if (h->fabric.model) {
        fab::Pins& x = h->fabric.pins;
        uint32_t* field[] = {&x.awaddr, &x.awvalid, &x.wdata, &x.wstrb, &x.wvalid, &x.bready, &x.araddr, &x.arvalid,
                             &x.rready};
        if (*field[pin] != v) {
            *field[pin] = v;
            wake_fabric(h->fabric);
        }
        return;
    }
    Vshell* t = h->top.get();
    switch (pin) {
        case AWADDR: t->s_axil_awaddr = v; break;
        case AWVALID: t->s_axil_awvalid = v; break;
        case WDATA: t->s_axil_wdata = v; break;
        case WSTRB: t->s_axil_wstrb = v; break;
        case WVALID: t->s_axil_wvalid = v; break;
        case BREADY: t->s_axil_bready = v; break;
        case ARADDR: t->s_axil_araddr = v; break;
        case ARVALID: t->s_axil_arvalid = v; break;
        case RREADY: t->s_axil_rready = v; break;
    }
}

struct BusAnswer {
    uint32_t awready, wready, bresp, bvalid, arready, rdata, rresp, rvalid;
};

BusAnswer bus_answer(Harness* h) {
    if (h->fabric.model) {
        const fab::Pins& x = h->fabric.pins;
        return {x.s_awready, x.s_wready, x.s_bresp, x.s_bvalid, x.s_arready, x.s_rdata, x.s_rresp, x.s_rvalid};
    }
    const Vshell* t = h->top.get();
    return {t->s_axil_awready, t->s_axil_wready, t->s_axil_bresp, t->s_axil_bvalid, t->s_axil_arready,
            t->s_axil_rdata, t->s_axil_rresp, t->s_axil_rvalid};
}

// Port access for stream s: stream 0 is s_axis / m_axis, stream s > 0 slice s - 1 of the *_more
// vectors, whose C++ type Verilator picks by width (port_words.h).
inline void drive_stream(Vshell* t, int s, bool valid, const uint32_t* data, bool last, bool user, bool ready) {
    if (s == 0) {
        t->s_axis_tvalid = valid;
        for (int j = 0; j < BEAT_WORDS; j++) put_word(t->s_axis_tdata, j, data[j]);
        t->s_axis_tlast = last;
        t->s_axis_tuser = user;
        t->m_axis_tready = ready;
        return;
    }
    put_bit(t->s_axis_more_tvalid, s - 1, valid);
    for (int j = 0; j < BEAT_WORDS; j++) put_word(t->s_axis_more_tdata, (s - 1) * BEAT_WORDS + j, data[j]);
    put_bit(t->s_axis_more_tlast, s - 1, last);
    put_bit(t->s_axis_more_tuser, s - 1, user);
    put_bit(t->m_axis_more_tready, s - 1, ready);
}

inline bool in_ready(Vshell* t, int s) { return s == 0 ? t->s_axis_tready : get_bit(t->s_axis_more_tready, s - 1); }
inline bool out_valid(Vshell* t, int s) { return s == 0 ? t->m_axis_tvalid : get_bit(t->m_axis_more_tvalid, s - 1); }
inline void out_beat(Vshell* t, int s, uint32_t* beat) {
    for (int j = 0; j < BEAT_WORDS; j++)
        beat[j] = s == 0 ? get_word(t->m_axis_tdata, j) : get_word(t->m_axis_more_tdata, (s - 1) * BEAT_WORDS + j);
}
inline bool out_last(Vshell* t, int s) { return s == 0 ? t->m_axis_tlast : get_bit(t->m_axis_more_tlast, s - 1); }
inline bool out_user(Vshell* t, int s) { return s == 0 ? t->m_axis_tuser : get_bit(t->m_axis_more_tuser, s - 1); }

inline uint32_t next_rand(Harness* h) {  // xorshift32: cheap, deterministic per seed
    uint32_t x = h->rng;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    h->rng = x;
    return x;
}

// A cycle is two evaluations: with the clock low (new inputs settle, combinational outputs are
// read) and at the rising edge. Reading outputs in the low phase saves a third eval per cycle.
void drive_channels(Harness* h);
void sample_channels(Harness* h);
void commit_channels(Harness* h);

void settle_boundary(Harness* h);
void clock_modules(Harness* h);
void clock_block(Harness* h);
void clock_fabric(Harness* h);

inline void settle_low(Harness* h) {
    h->split.begin_cycle();
    if (h->armed) drive_channels(h);
    h->top->clk = 0;
    shell_low(h);
    if (h->modules || h->block.model || h->fabric.model) settle_boundary(h);
    if (h->armed) sample_channels(h);
}

inline void rise(Harness* h) {
    h->top->clk = 1;
    shell_edge(h);
    if (h->block.model) clock_block(h);
    if (h->fabric.model) clock_fabric(h);
    if (h->modules) clock_modules(h);
    h->cycle++;
    if (h->armed) commit_channels(h);
    h->split.end_cycle();
}

// The configuration stream: into the block's model when it is outside the shell, else the shell's port.
inline void drive_cfg(Harness* h, bool valid, uint32_t data, bool last) {
    if (h->block.model) {
        cfgblk::Pins& x = h->block.pins;
        const bool moved = x.tvalid != valid || (valid && (x.tdata != data || x.tlast != last));
        x.tvalid = valid;
        if (valid) {
            x.tdata = data;
            x.tlast = last;
        }
        if (moved) {
            h->block.moved = true;
            h->block.quiet = h->block.marked = false;
            h->block.rest_backoff = h->block.rest_wait = 0;
        }
        return;
    }
    h->top->s_axis_cfg_tvalid = valid;
    if (valid) {
        h->top->s_axis_cfg_tdata = data;
        h->top->s_axis_cfg_tlast = last;
    }
}

inline bool cfg_ready(Harness* h) { return h->block.model ? h->block.pins.tready != 0 : h->top->s_axis_cfg_tready; }

// The inputs of slot k's module as the shell drives them now; true if they changed.
bool read_pins(Vshell* t, int k, rm::Pins& x) {
    rm::Pins old = x;
    x.ctl = get_word(t->rm_ctl, k);
    x.awaddr = t->rm_axil_awaddr;
    x.araddr = t->rm_axil_araddr;
    x.wdata = t->rm_axil_wdata;
    x.wstrb = t->rm_axil_wstrb;
    for (int j = 0; j < BEAT_WORDS; j++) x.s_tdata[j] = get_word(t->rm_s_tdata, k * BEAT_WORDS + j);
    return std::memcmp(&old, &x, offsetof(rm::Pins, sts)) != 0;
}

// The same, compared field by field as they are read. read_pins copies the pins aside and compares the
// copy with memcmp, whose eight-byte loads of the copy's four-byte stores stall on store forwarding:
// about a tenth of a streaming cycle's harness work. The ports are read through the root object, where
// they live (the model class holds references to them: a load more a port).
// `moved` gets which inputs moved, as rm::COMB_* bits (rm_ctl's bits in their places).
bool read_pins_lean(Vshell* t, int k, rm::Pins& x, uint32_t& moved) {
    const Vshell___024root* r = t->rootp;
    uint32_t diff = 0;
    auto take = [&diff](uint32_t& pin, uint32_t v) {
        const uint32_t d = pin ^ v;
        pin = v;
        return d;
    };
    const uint32_t ctl = take(x.ctl, get_word(r->rm_ctl, k));
    moved = ctl;
    if (take(x.awaddr, r->rm_axil_awaddr)) moved |= rm::COMB_AWADDR;
    if (take(x.araddr, r->rm_axil_araddr)) moved |= rm::COMB_ARADDR;
    if (take(x.wdata, r->rm_axil_wdata)) moved |= rm::COMB_WDATA;
    if (take(x.wstrb, r->rm_axil_wstrb)) moved |= rm::COMB_WSTRB;
    for (int j = 0; j < BEAT_WORDS; j++) diff |= take(x.s_tdata[j], get_word(r->rm_s_tdata, k * BEAT_WORDS + j));
    if (diff) moved |= rm::COMB_S_TDATA;
    return ctl != 0 || moved != ctl;
}

// The rm::COMB_* bits of a module's inputs: rm_ctl's bits that are module inputs (the module id and
// the decoupled bit are not), and the wider inputs above them.
constexpr uint32_t INPUT_BITS = 0x7FE0u | 0xFFFF0000u;

// Whether the active model's low evaluation may be folded into its edge: the same model, evaluated
// last at the last edge (so its outputs, which the shell holds, are its nets for the pins of then), no
// reset, and no input moved since that has a combinational path to an output, the clock included
// (its level falls now). Then the low evaluation would leave the outputs as they are, and the input
// region it would compute (the new inputs) the edge's call computes first, before the edge: the same
// Verilated work in the same order. The boundary settles on the same values either way.
inline bool may_fold(const ModuleSlot& s, int id, uint32_t moved) {
    const uint32_t comb = s.comb[id];
    return s.edged && id == s.active && !(comb & rm::COMB_CLK) && !(moved & comb & INPUT_BITS);
}

// Slot k's module outputs into the shell; true if they differ from what the shell had.
bool write_pins(Vshell* t, int k, const rm::Pins& x) {
    bool changed = get_word(t->rm_sts, k) != x.sts || get_word(t->rm_rdata, k) != x.rdata;
    for (int j = 0; j < BEAT_WORDS; j++) changed |= get_word(t->rm_m_tdata, k * BEAT_WORDS + j) != x.m_tdata[j];
    if (!changed) return false;
    put_word(t->rm_sts, k, x.sts);
    put_word(t->rm_rdata, k, x.rdata);
    for (int j = 0; j < BEAT_WORDS; j++) put_word(t->rm_m_tdata, k * BEAT_WORDS + j, x.m_tdata[j]);
    return true;
}

// Low phase: evaluate each slot's selected module on the shell's outputs and the shell on the
// modules' outputs until neither changes (a module's ready may depend on its inputs in the same
// cycle, and the switch carries it on). A model that is not selected is not evaluated: its clock
// is gated in the RTL, so it would not change either. In reset every model is clocked, as the RTL
// clocks every module while rst is high; the unselected ones see their inputs gated to zero.
bool settle_modules(Harness* h, int round) {
    Vshell* t = h->top.get();
    bool changed = false;
    {
        for (int k = 0; k < NUM_SLOTS; k++) {
            ModuleSlot& s = h->slots[k];
            if (!s.attached) continue;
            // A blank slot (id 0: nothing loaded, or a load in progress) has no model to run.
            if ((get_word(t->rm_ctl, k) & rm::CTL_MODULE) == 0 && !t->rst) {
                s.active = 0;
                continue;
            }
            uint32_t moved_bits = rm::COMB_ALL;
            bool moved = h->lean ? read_pins_lean(t, k, s.pins, moved_bits) : read_pins(t, k, s.pins);
            int id = s.pins.ctl & rm::CTL_MODULE;
            bool fold = false;
            if (round == 0) {
                fold = h->fold && h->lean && !t->rst && may_fold(s, id, moved_bits);
                s.edged = s.fold = false;
                if (id != s.active || t->rst) wake(s);
                s.moved = moved || id != s.active;
                s.active = id;
                s.held = false;
                if (t->rst) {
                    rm::Pins reset_pins;
                    reset_pins.ctl = rm::CTL_RST;
                    for (int m = 1; m < NUM_IDS; m++) {
                        if (s.model[m] && m != id) eval_module(h, s.api[m], s.model[m], h->whole, &reset_pins);
                    }
                }
            }
            if (id == 0) continue;
            if (!s.model[id]) {
                h->fault = static_cast<uint32_t>(id) << 8 | static_cast<uint32_t>(k + 1);
                s.active = 0;
                continue;
            }
            if (moved) {
                s.moved = true;
                if (s.quiet) wake(s);
            }
            if (s.quiet) {
                s.skipped++;
                continue;
            }
            if (round == 0 && fold && !h->fold_check) {
                s.fold = true;   // evaluated at the edge, both levels in one call
                continue;
            }
            if (round > 0 && s.fold) {   // folded so far: evaluated now only if an input of its set moved
                if (id != s.active) {   // rm_ctl's module id is the block's flop: it cannot move in a low phase
                    h->fault = 0xFFFE;
                    continue;
                }
                if (!(moved_bits & s.comb[id] & INPUT_BITS)) continue;
                s.fold = false;   // the low evaluation now, on these pins, as it would have run again
                h->unfolds++;
            } else if (round > 0 && !moved) {
                continue;
            }
            eval_module(h, s.api[id], s.model[id], h->whole, &s.pins);
            h->module_evals++;
            s.held = id == s.active;   // else the active model saw other pins last (a later round's id)
            const bool outputs = write_pins(t, k, s.pins);
            if (round == 0 && fold) {   // fold_check: the set missed a path if an output moved
                h->fold_checks++;
                if (outputs) h->fault = 0xFFFE;
            }
            changed |= outputs;
        }
    }
    return changed;
}

// The shell's side of the configuration block's boundary, as the shell drives it now; true if it changed.
bool read_block_inputs(Vshell* t, cfgblk::Pins& x) {
    const cfgblk::Pins old = x;
    x.rst = t->rst;
    x.arm = t->cx_arm;
    x.arm_slot = t->cx_arm_slot;
    x.rd_en = t->cx_rd_en;
    x.rd_index = t->cx_rd_index;
    return x.rst != old.rst || x.arm != old.arm || x.arm_slot != old.arm_slot || x.rd_en != old.rd_en ||
           x.rd_index != old.rd_index;
}

// The block's outputs into the shell; true if they differ from what the shell had.
using ModuleVec = std::remove_reference_t<decltype(std::declval<Vshell&>().cx_slot_module)>;
using ErrorVec = std::remove_reference_t<decltype(std::declval<Vshell&>().cx_slot_error)>;

bool write_block_outputs(Vshell* t, const cfgblk::Pins& x) {
    bool changed = t->cx_rd_value != x.rd_value || t->cx_slot_loading != x.loading || t->cx_slot_failed != x.failed ||
                   t->cx_slot_rst != x.slot_rst || t->cx_fused_on != x.fused_on;
    for (int j = 0; j < words_of<ModuleVec>(); j++) changed |= get_word(t->cx_slot_module, j) != x.module[j];
    for (int j = 0; j < words_of<ErrorVec>(); j++) changed |= get_word(t->cx_slot_error, j) != x.error[j];
    if (!changed) return false;
    t->cx_rd_value = x.rd_value;
    t->cx_slot_loading = x.loading;
    t->cx_slot_failed = x.failed;
    t->cx_slot_rst = x.slot_rst;
    t->cx_fused_on = x.fused_on;
    for (int j = 0; j < words_of<ModuleVec>(); j++) put_word(t->cx_slot_module, j, x.module[j]);
    for (int j = 0; j < words_of<ErrorVec>(); j++) put_word(t->cx_slot_error, j, x.error[j]);
    return true;
}

// Low phase of the block: evaluated once a cycle on the shell's side as the shell's low evaluation left
// it, and again only if that side changed (its read port answers within the cycle).
bool settle_block(Harness* h, int round) {
    ConfigBlock& b = h->block;
    bool moved = read_block_inputs(h->top.get(), b.pins);
    if (moved) {
        b.moved = true;
        b.quiet = b.marked = false;
        b.rest_backoff = b.rest_wait = 0;
    }
    if ((round > 0 && !moved) || b.quiet) return false;
    eval_block(h, h->whole);
    return write_block_outputs(h->top.get(), b.pins);
}

// Rising edge of the block, with the inputs it settled on; its new outputs (flops) go into the shell
// at once, for the shell's next low evaluation. Then the rest test, as a module's (watch_rest).
void clock_block(Harness* h) {
    ConfigBlock& b = h->block;
    if (b.quiet) return;
    eval_block(h, cfgblk::EVAL_CLK | h->whole);
    const bool outputs_moved = write_block_outputs(h->top.get(), b.pins);
    if (b.moved || outputs_moved || b.pins.rst) {
        b.marked = false;
    } else if (b.rest_wait) {
        b.rest_wait--;
    } else if (!b.marked) {
        b.api->mark(b.model);
        b.marked = true;
    } else if (b.api->unchanged(b.model)) {
        b.quiet = true;
    } else {
        b.marked = false;
        b.rest_backoff = b.rest_backoff ? (b.rest_backoff * 2 > MAX_BACKOFF ? MAX_BACKOFF : b.rest_backoff * 2) : 1;
        b.rest_wait = b.rest_backoff;
    }
    b.moved = false;
}

// The shell's side of the fabric's boundary, as the shell drives it now, and the reset; true if it changed.
using RdataVec = std::remove_reference_t<decltype(std::declval<Vshell&>().fx_rdata)>;
using RouteVec = std::remove_reference_t<decltype(std::declval<Vshell&>().fx_route)>;
using WordsVec = std::remove_reference_t<decltype(std::declval<Vshell&>().fx_route_words)>;

// Compared field by field as they are read, as read_pins_lean does the modules' pins (a copy compared with
// memcmp stalls on store forwarding), through the root object, where the ports live.
bool read_fabric_inputs(const Vshell* t, fab::Pins& x) {
    const Vshell___024root* r = t->rootp;
    fab::Pins::Side& s = x.side;
    uint32_t diff = 0;
    auto take = [&diff](uint32_t& pin, uint32_t v) {
        diff |= pin ^ v;
        pin = v;
    };
    take(s.awready, r->fx_awready);
    take(s.wready, r->fx_wready);
    take(s.bvalid, r->fx_bvalid);
    take(s.arready, r->fx_arready);
    take(s.rvalid, r->fx_rvalid);
    take(s.bresp, r->fx_bresp);
    take(s.rresp, r->fx_rresp);
    take(s.ro_word, r->fx_ro_word);
    for (int j = 0; j < words_of<RdataVec>(); j++) take(s.rdata[j], get_word(r->fx_rdata, j));
    take(x.rst, r->rst);
    return diff != 0;
}

// The fabric's outputs into the shell; true if they differ from what the shell had.
bool write_fabric_outputs(Vshell* t, const fab::Pins& x) {
    const fab::Pins::Out& o = x.out;
    bool changed = t->fx_awaddr != o.awaddr || t->fx_awvalid != o.awvalid || t->fx_wdata != o.wdata ||
                   t->fx_wstrb != o.wstrb || t->fx_wvalid != o.wvalid || t->fx_bready != o.bready ||
                   t->fx_araddr != o.araddr || t->fx_arvalid != o.arvalid || t->fx_rready != o.rready ||
                   t->fx_rd_en != o.rd_en || t->fx_rd_index != o.rd_index || t->fx_arm != o.arm ||
                   t->fx_arm_slot != o.arm_slot || t->fx_bypass != o.bypass || t->fx_route_err != o.route_err;
    for (int j = 0; j < words_of<RouteVec>(); j++) changed |= get_word(t->fx_route, j) != o.route[j];
    for (int j = 0; j < words_of<WordsVec>(); j++) changed |= get_word(t->fx_route_words, j) != o.route_words[j];
    if (!changed) return false;
    t->fx_awaddr = o.awaddr;
    t->fx_awvalid = o.awvalid;
    t->fx_wdata = o.wdata;
    t->fx_wstrb = o.wstrb;
    t->fx_wvalid = o.wvalid;
    t->fx_bready = o.bready;
    t->fx_araddr = o.araddr;
    t->fx_arvalid = o.arvalid;
    t->fx_rready = o.rready;
    t->fx_rd_en = o.rd_en;
    t->fx_rd_index = o.rd_index;
    t->fx_arm = o.arm;
    t->fx_arm_slot = o.arm_slot;
    t->fx_bypass = o.bypass;
    t->fx_route_err = o.route_err;
    for (int j = 0; j < words_of<RouteVec>(); j++) put_word(t->fx_route, j, o.route[j]);
    for (int j = 0; j < words_of<WordsVec>(); j++) put_word(t->fx_route_words, j, o.route_words[j]);
    return true;
}

// Low phase of the fabric: evaluated on the shell's side as the shell's low evaluation left it (the
// processor's answers depend on the bus within the cycle), again only if that side changed. Its outputs
// towards the shell come from its flops, so they do not move here (written anyway, compared).
bool settle_fabric(Harness* h, int round) {
    FabricPart& f = h->fabric;
    const bool moved = read_fabric_inputs(h->top.get(), f.pins);
    if (moved) wake_fabric(f);
    if ((round > 0 && !moved) || f.quiet) return false;
    eval_fabric(h, h->whole);
    return write_fabric_outputs(h->top.get(), f.pins);
}

// Rising edge of the fabric, with the inputs it settled on; its new outputs go into the shell at once,
// for the shell's next low evaluation. Then the rest test, as a module's (watch_rest): two edges with
// still pins that leave the same state bytes, and no output moved by the edge (the processor's answers
// included, which a skipped low phase would not refresh).
void clock_fabric(Harness* h) {
    FabricPart& f = h->fabric;
    if (f.quiet) {
        f.skipped += 2;
        return;
    }
    const fab::Pins before = f.pins;
    eval_fabric(h, fab::EVAL_CLK | h->whole);
    const bool outputs_moved = write_fabric_outputs(h->top.get(), f.pins) ||
                               std::memcmp(&before, &f.pins, sizeof before) != 0;
    if (f.moved || outputs_moved || f.pins.rst || !f.rest) {
        f.marked = false;
    } else if (f.wait) {
        f.wait--;
    } else if (!f.marked) {
        f.api->mark(f.model);
        f.marked = true;
    } else if (f.api->unchanged(f.model)) {
        f.quiet = true;
    } else {
        f.marked = false;
        f.backoff = f.backoff ? (f.backoff * 2 > MAX_BACKOFF ? MAX_BACKOFF : f.backoff * 2) : 1;
        f.wait = f.backoff;
    }
    f.moved = false;
}

// Low phase: the modules, the configuration block and the fabric on the shell's outputs, the shell on
// theirs, until nothing changes.
void settle_boundary(Harness* h) {
    for (int round = 0; round < 64; round++) {
        bool changed = false;
        if (h->modules) changed |= settle_modules(h, round);
        if (h->block.model) changed |= settle_block(h, round);
        if (h->fabric.model) changed |= settle_fabric(h, round);
        if (!changed) return;
        shell_low(h);
        h->shell_evals++;
    }
    h->fault = 0xFFFF;   // the boundary did not settle: a combinational loop through a module
}

// Rising edge: the selected models (all, in reset) take the edge with the inputs they settled on,
// as the shell's flops just did; their new outputs reach the shell at the next low phase.
void clock_modules(Harness* h) {
    Vshell* t = h->top.get();
    for (int k = 0; k < NUM_SLOTS; k++) {
        ModuleSlot& s = h->slots[k];
        if (!s.attached) continue;
        if (s.active && s.quiet) {
            s.skipped++;
        } else if (s.active) {
            // The inputs of the low phase, which the model took last: only the clock need change. Or
            // its low evaluation folded into this call (the low level first, then the edge).
            const int how = s.fold ? rm::EVAL_FOLD : h->lean && s.held ? rm::EVAL_HELD : 0;
            eval_module(h, s.api[s.active], s.model[s.active], rm::EVAL_CLK | h->whole | how, &s.pins);
            h->module_evals += s.fold ? 2 : 1;
            h->folds += s.fold;
            bool outputs_moved = write_pins(t, k, s.pins);
            if (!t->rst) watch_rest(s, outputs_moved);
            s.edged = !t->rst;
        }
        s.held = s.fold = false;
        if (!t->rst) continue;
        rm::Pins reset_pins;
        reset_pins.ctl = rm::CTL_RST;
        for (int m = 1; m < NUM_IDS; m++) {
            if (s.model[m] && m != s.active) eval_module(h, s.api[m], s.model[m], rm::EVAL_CLK | h->whole, &reset_pins);
        }
    }
}

// Per cycle, for every armed channel: present the next word (low phase), see what fired before the
// edge, count it after the edge. Outputs are always ready (a DMA writing to memory), inputs never
// gap: the co-simulation measures the hardware's own cycles, not a bus's.
bool out_fire[MAX_STREAMS];
bool in_fire[MAX_STREAMS];
bool cfg_fire;

void drive_channels(Harness* h) {
    Vshell* t = h->top.get();
    for (int s = 0; s < h->streams; s++) {
        StreamChannel& c = h->chan[s];
        if (!c.armed || c.done) continue;
        c.in_on = c.i_in < c.n_in;
        const uint32_t* data = c.in_on ? c.in + c.i_in * BEAT_WORDS : ZERO_BEAT;
        bool last = c.in_on && c.in_cols && (c.i_in % c.in_cols) == c.in_cols - 1;
        drive_stream(t, s, c.in_on, data, last, c.in_on && c.i_in == 0, true);
    }
    CfgChannel& g = h->cfg;
    if (g.armed && !g.done) {
        g.on = g.i < g.n;
        drive_cfg(h, g.on, g.on ? g.words[g.i] : 0, g.on && g.i == g.n - 1);
    }
}

void sample_channels(Harness* h) {
    Vshell* t = h->top.get();
    for (int s = 0; s < h->streams; s++) {
        StreamChannel& c = h->chan[s];
        in_fire[s] = out_fire[s] = false;
        if (!c.armed || c.done) continue;
        in_fire[s] = c.in_on && in_ready(t, s);
        if (out_valid(t, s)) {
            out_fire[s] = true;
            if (c.i_out < c.n_out) {
                if (c.out) out_beat(t, s, c.out + c.i_out * BEAT_WORDS);
                bool want_last = c.out_cols && (c.i_out % c.out_cols) == c.out_cols - 1;
                if (out_last(t, s) != want_last) c.last_err++;
                if (out_user(t, s) != (c.i_out == 0)) c.user_err++;
            } else {
                c.extra++;
            }
        }
    }
    cfg_fire = h->cfg.armed && !h->cfg.done && h->cfg.on && cfg_ready(h);
}

// The port's channel after a cycle: count the word the port took (``fire``), and end the channel
// once every word and its tail of idle cycles are through. True if it ended this cycle. Both the
// cycle-by-cycle commit and the fast path's skip commit through here.
bool commit_cfg(Harness* h, bool fire) {
    CfgChannel& g = h->cfg;
    if (fire && ++g.i == g.n) g.words_end = h->cycle;
    if (g.i >= g.n && ++g.after > g.tail) {
        g.done = true;
        g.end = h->cycle;
        drive_cfg(h, false, 0, false);
        h->armed--;
        h->done_mask |= 1u << CFG_CHANNEL;
        return true;
    }
    return false;
}

void commit_channels(Harness* h) {
    Vshell* t = h->top.get();
    for (int s = 0; s < h->streams; s++) {
        StreamChannel& c = h->chan[s];
        if (!c.armed || c.done) continue;
        if (in_fire[s]) c.i_in++;
        if (out_fire[s] && c.i_out < c.n_out && ++c.i_out == c.n_out) c.out_end = h->cycle;
        if (c.i_in >= c.n_in && c.i_out >= c.n_out && ++c.after > c.settle) {
            c.done = true;
            c.end = h->cycle;
            drive_stream(t, s, false, ZERO_BEAT, false, false, false);
            h->armed--;
            h->done_mask |= 1u << s;
        }
    }
    if (h->cfg.armed && !h->cfg.done) commit_cfg(h, cfg_fire);
}


// ---- the fast path of a load: the configuration block alone
//
// A partial load is a quarter of a million words, one a cycle, and for most of them nothing but the
// configuration block (outside the shell, CFG_EXTERNAL) changes: the processor bus is idle, no frame
// streams, the slots' modules wait. Then the harness evaluates the block alone, and brings the shell
// up to date when the block's outputs to it change (activation, an error) or the load's words end.
// Why the skipped cycles are the shell's own, exactly:
//
// 1. The shell's inputs hold still while it is skipped: the harness drives nothing else (no stream
//    channel armed, the bus and streams as the last cycle left them), a module at rest (ModuleSlot)
//    keeps its outputs, and the block's outputs are compared after each of its edges (the skip ends on
//    the first change, which the shell sees only from the next cycle on).
// 2. With those inputs, the shell is at a fixed point but for its free-running registers (the blank
//    slots' junk sources and the cycle counter):
//    shell_at_rest evaluates it three cycles ahead on a copy of its state with those registers held,
//    and requires the last two cycles to leave the same bytes (as a module's rest test does). The
//    first of them may still move (an input that changed after the last edge): that is the shell's
//    own business, replayed below, as long as no model would see it; so every one of the three low
//    phases must present each module, blank slot and the block what they saw last (pins_as_last_seen).
// 3. The junk reaches nothing else while its slot is decoupled (required of every blank slot): the
//    decoupler passes the static side no partition output but through "&& !decouple" (streams) and
//    answers AXI-Lite itself once idle (lite_dec), and no checker samples the junk side. The cycle
//    counter reaches only the read-only register vector, which the register file reads at a read's
//    handshake, and none happens with the bus's inputs and the register file at a fixed point. So
//    they run on by themselves: rm_blank's xorshift and the counter, advanced here by the skipped
//    cycles (junk_advance, +n), and their fan-out (the mux into the decoupler, the register vector) is
//    recomputed by the last two skipped cycles, which replay_shell evaluates (a cycle's sampled values
//    come from the cycle before). After them the shell's bytes are those of a run that evaluated every cycle
//    (tests/test_harness_fast_load.py compares the two byte for byte).
//
// The rest test is run once when a skip could begin (and after a failed one only after a doubling
// wait); a skip then runs until the block's outputs change or the load's words end.

inline uint32_t junk_step(uint32_t x, uint32_t seed) {   // rm_blank.sv's register, one clock
    if (x == 0) return seed;
    uint32_t a = x ^ (x << 13);
    uint32_t b = a ^ (a >> 17);
    return b ^ (b << 5);
}

inline uint32_t junk_seed(int k) { return 0x9E3779B9u * static_cast<uint32_t>(k + 1); }   // shell.sv's SEED

// rm_blank.sv's register n clocks on. Once nonzero it stays nonzero and each clock is a linear map
// over GF(2) (xorshift32: x ^= x << 13, x ^= x >> 17, x ^= x << 5), so n clocks are the map's n-th
// power, taken by squaring (a 32x32 bit matrix as its 32 columns): a skip of any length costs a few
// thousand operations, not n steps.
struct BitMatrix {
    uint32_t col[32];   // col[j]: the image of bit j
};

inline uint32_t apply(const BitMatrix& m, uint32_t x) {
    uint32_t y = 0;
    for (int j = 0; x; j++, x >>= 1) {
        if (x & 1) y ^= m.col[j];
    }
    return y;
}

inline BitMatrix compose(const BitMatrix& a, const BitMatrix& b) {   // a after b
    BitMatrix c;
    for (int j = 0; j < 32; j++) c.col[j] = apply(a, b.col[j]);
    return c;
}

uint32_t junk_advance(uint32_t x, uint64_t n, uint32_t seed) {
    if (n == 0) return x;
    if (x == 0) {
        x = seed;
        n--;
    }
    BitMatrix step, power;
    for (int j = 0; j < 32; j++) {
        step.col[j] = junk_step(uint32_t{1} << j, seed);
        power.col[j] = uint32_t{1} << j;
    }
    for (; n; n >>= 1) {
        if (n & 1) power = compose(step, power);
        step = compose(step, step);
    }
    return apply(power, x);
}

// Whether the shell's low evaluation just now presents every model what it saw in its last evaluation:
// each slot's module its pins (a blank slot: blank, as the harness last saw it), the block its side,
// and no output beat a caller would count. So no model would be evaluated, and none woken.
bool pins_as_last_seen(Harness* h) {
    Vshell* t = h->top.get();
    if (t->m_axis_tvalid) return false;
    for (int k = 0; k < NUM_SLOTS; k++) {
        ModuleSlot& s = h->slots[k];
        const int id = static_cast<int>(get_word(t->rm_ctl, k) & rm::CTL_MODULE);
        if (id != s.active) return false;
        rm::Pins now = s.pins;
        if (id != 0 && read_pins(t, k, now)) return false;
    }
    if (h->fabric.model) {
        fab::Pins now = h->fabric.pins;
        if (read_fabric_inputs(t, now)) return false;
    }
    cfgblk::Pins now = h->block.pins;
    return !read_block_inputs(t, now);
}

bool shell_at_rest(Harness* h) {
#if FS_JUNK_COUNT == 0   // the free-running registers were not found in the model: never skip
    (void)h;
    return false;
#else
    Vshell___024root* root = h->top->rootp;
    uint32_t* junk[] = FS_JUNK_SOURCES(root);
    uint32_t held[FS_JUNK_COUNT];
    uint64_t* counter = FS_CYCLE_COUNTER(root);
    const uint64_t count = *counter;
    ShellCopies& copies = *h->block.copies;
    std::memcpy(copies.saved, root, SHELL_STATE);
    for (int k = 0; k < FS_JUNK_COUNT; k++) held[k] = *junk[k];
    bool rest = true;
    for (int i = 0; i < 3 && rest; i++) {
        h->top->clk = 0;
        shell_low(h);
        rest = pins_as_last_seen(h);
        h->top->clk = 1;
        shell_edge(h);
        for (int k = 0; k < FS_JUNK_COUNT; k++) *junk[k] = held[k];
        *counter = count;
        if (i == 1) std::memcpy(copies.probe, root, SHELL_STATE);
    }
    rest = rest && std::memcmp(copies.probe, root, SHELL_STATE) == 0;
    std::memcpy(root, copies.saved, SHELL_STATE);
    return rest;
#endif
}

// The shell through n skipped cycles: its free-running registers advanced, the last two cycles evaluated.
void replay_shell(Harness* h, uint64_t n) {
    const uint64_t evaluated = n < 2 ? n : 2;
#if FS_JUNK_COUNT > 0
    uint32_t* junk[] = FS_JUNK_SOURCES(h->top->rootp);
    for (int k = 0; k < FS_JUNK_COUNT; k++) *junk[k] = junk_advance(*junk[k], n - evaluated, junk_seed(k));
    *FS_CYCLE_COUNTER(h->top->rootp) += n - evaluated;
#endif
    for (uint64_t i = 0; i < evaluated; i++) {
        h->top->clk = 0;
        shell_low(h);
        h->top->clk = 1;
        shell_edge(h);
    }
}

bool block_outputs_differ(const cfgblk::Pins& a, const cfgblk::Pins& b) {
    return a.rd_value != b.rd_value || a.loading != b.loading || a.failed != b.failed || a.slot_rst != b.slot_rst ||
           a.fused_on != b.fused_on || a.module[0] != b.module[0] || a.module[1] != b.module[1] ||
           a.error[0] != b.error[0] || a.error[1] != b.error[1];
}

// Whether a skip may begin now (1. and 3. above, and the rest test with its wait). `only_port`: the
// caller's work is the port's alone.
bool may_skip_shell(Harness* h) {
    ConfigBlock& b = h->block;
    if (!b.model || !b.fast || FS_JUNK_COUNT != NUM_SLOTS || h->fault) return false;
    Vshell* t = h->top.get();
    if (t->rst || t->m_axis_tvalid) return false;
    if (h->fabric.model && !h->fabric.quiet) return false;   // it is not evaluated while the shell is skipped
    for (int k = 0; k < NUM_SLOTS; k++) {
        const uint32_t ctl = get_word(t->rm_ctl, k);
        const int id = static_cast<int>(ctl & rm::CTL_MODULE);
        if (id == 0 ? !(ctl & CTL_DECOUPLED) : !(h->slots[k].active == id && h->slots[k].quiet)) return false;
    }
    if (b.wait) {
        b.wait--;
        return false;
    }
    if (!shell_at_rest(h)) {
        b.backoff = b.backoff ? (b.backoff * 2 > MAX_BACKOFF ? MAX_BACKOFF : b.backoff * 2) : 1;
        b.wait = b.backoff;
        return false;
    }
    b.backoff = 0;
    return true;
}

// Up to max_n cycles of the block alone, then the shell brought up to date. Per cycle, word(valid, data,
// last) presents the port's next word (false: stop before this cycle) and fired(fire) takes the
// handshake after the edge (false: stop after this cycle). Returns the cycles run.
template <typename Word, typename Fired>
uint64_t run_block_alone(Harness* h, uint64_t max_n, Word word, Fired fired) {
    ConfigBlock& b = h->block;
    const cfgblk::Pins held = b.pins;   // the block's outputs as the shell holds them
    b.quiet = b.marked = false;         // evaluated every cycle here; its rest test starts again after
    b.moved = true;
    uint64_t n = 0;
    while (n < max_n) {
        bool valid = false, last = false;
        uint32_t data = 0;
        if (!word(valid, data, last)) break;
        drive_cfg(h, valid, data, last);
        eval_block(h, h->whole);
        const bool fire = valid && b.pins.tready;
        eval_block(h, cfgblk::EVAL_CLK | h->whole);
        n++;
        h->cycle++;
        const bool go_on = fired(fire);
        if (block_outputs_differ(held, b.pins) || !go_on) break;
    }
    replay_shell(h, n);
    write_block_outputs(h->top.get(), b.pins);
    b.fast_cycles += n;
    for (auto& s : h->slots) {
        if (s.active && s.quiet) s.skipped += 2 * n;   // a module at rest, not evaluated in either phase
    }
    if (h->fabric.model) h->fabric.skipped += 2 * n;   // at rest (may_skip_shell)
    return n;
}

// fs_advance's skip: the port's channel is the only one armed.
bool skip_for_channel(Harness* h, uint64_t until) {
    CfgChannel& g = h->cfg;
    if (!(g.armed && !g.done) || h->armed != 1 || h->done_mask || h->cycle >= until || !may_skip_shell(h)) return false;
    auto word = [&](bool& valid, uint32_t& data, bool& last) {
        g.on = g.i < g.n;
        valid = g.on;
        data = g.on ? g.words[g.i] : 0;
        last = g.on && g.i == g.n - 1;
        return true;
    };
    auto fired = [&](bool fire) { return !commit_cfg(h, fire); };   // false once the channel ended
    run_block_alone(h, until - h->cycle, word, fired);
    return true;
}

inline void tick(Harness* h) {
    settle_low(h);
    rise(h);
}

void idle_inputs(Harness* h) {  // stream and port inputs of armed channels are driven again every cycle
    Vshell* t = h->top.get();
    drive_cfg(h, false, 0, false);
    for (BusPin pin : {AWVALID, WVALID, BREADY, ARVALID, RREADY}) bus_set(h, pin, 0);
    t->s_axis_tvalid = 0;
    t->m_axis_tready = 0;
    t->s_axis_cfg_tvalid = 0;
}

}  // namespace

extern "C" {

// ---- channels: work on every stream and the port in the same cycles
void fs_set_streams(void* p, int streams) {
    auto* h = static_cast<Harness*>(p);
    h->streams = streams < 1 ? 1 : streams > MAX_STREAMS ? MAX_STREAMS : streams;
}

// Arm stream s: n_in beats in, n_out beats out (BEAT_WORDS words each); done settle cycles after the last output (extra
// beats then count as errors). Returns 0, or -1 if s is not a stream or is armed already.
int fs_chan_stream(void* p, int s, const uint32_t* in, uint64_t n_in, uint32_t in_cols, uint32_t* out,
                   uint64_t n_out, uint32_t out_cols, uint64_t settle) {
    auto* h = static_cast<Harness*>(p);
    if (s < 0 || s >= h->streams || (h->chan[s].armed && !h->chan[s].done) || (h->done_mask >> s & 1)) return -1;
    StreamChannel& c = h->chan[s];
    c = StreamChannel();
    c.armed = true;
    c.in = in;
    c.out = out;
    c.n_in = n_in;
    c.n_out = n_out;
    c.in_cols = in_cols;
    c.out_cols = out_cols;
    c.settle = settle;
    c.start = h->cycle;
    h->armed++;
    return 0;
}

// Arm the configuration port: n words, done tail cycles after the last one.
int fs_chan_cfg(void* p, const uint32_t* words, uint64_t n, uint64_t tail) {
    auto* h = static_cast<Harness*>(p);
    if ((h->cfg.armed && !h->cfg.done) || (h->done_mask >> CFG_CHANNEL & 1)) return -1;
    h->cfg = CfgChannel();
    h->cfg.armed = true;
    h->cfg.words = words;
    h->cfg.n = n;
    h->cfg.tail = tail;
    h->cfg.start = h->cycle;
    h->armed++;
    return 0;
}

// Run until a channel is done (any not collected yet, including ones done during earlier calls)
// or `until` (an absolute cycle) is reached. Returns the mask of done channels.
uint32_t fs_advance(void* p, uint64_t until) {
    auto* h = static_cast<Harness*>(p);
    while (!h->done_mask && h->armed && h->cycle < until && !h->fault) {
        if (!skip_for_channel(h, until)) tick(h);
    }
    if (!h->armed && !h->done_mask && h->cycle < until) {
        // nothing armed: idle cycles change nothing the caller sees, but the caller asked for them
        while (h->cycle < until && !h->fault) tick(h);
    }
    return h->done_mask;
}

// Attach a model of module `id` (a module library's rm_api()) to slot `slot`. Returns 0, or -1 if
// the slot or id is out of range or taken, -2 if the library was built for another ABI or beat.
int fs_attach(void* p, int slot, int id, const rm::Api* api) {
    auto* h = static_cast<Harness*>(p);
    if (slot < 0 || slot >= NUM_SLOTS || id <= 0 || id >= NUM_IDS || h->slots[slot].model[id]) return -1;
    if (api->abi != rm::ABI || api->words != BEAT_WORDS) return -2;
    ModuleSlot& s = h->slots[slot];
    s.api[id] = api;
    s.model[id] = api->create();
    s.attached++;
    h->modules = true;
    return 0;
}

int fs_slots() { return NUM_SLOTS; }

// Attach the configuration block's model (its library's cfg_api()) to a shell built with CFG_EXTERNAL = 1.
// Returns 0, or -1 if one is attached already, -2 if the library was built for another ABI.
int fs_attach_config(void* p, const cfgblk::Api* api) {
    auto* h = static_cast<Harness*>(p);
    if (h->block.model) return -1;
    if (api->abi != cfgblk::ABI) return -2;
    h->block.api = api;
    h->block.model = api->create();
    return 0;
}

// Attach the AXI-Lite fabric's model (its library's fab_api()) to a shell built with FABRIC_EXTERNAL = 1.
// Returns 0, or -1 if one is attached already, -2 if the library was built for another ABI.
int fs_attach_fabric(void* p, const fab::Api* api) {
    auto* h = static_cast<Harness*>(p);
    if (h->fabric.model) return -1;
    if (api->abi != fab::ABI) return -2;
    h->fabric.api = api;
    h->fabric.model = api->create();
    return 0;
}

// on != 0 (the default): skip the fabric while it is at rest (FabricPart); 0: evaluate it every cycle,
// the reference the tests compare with.
void fs_set_fabric_rest(void* p, int on) {
    FabricPart& f = static_cast<Harness*>(p)->fabric;
    f.rest = on != 0;
    if (!f.rest) wake_fabric(f);
}

// The fabric's evaluations since creation: [0] run, [1] skipped at rest.
void fs_fabric_evals(void* p, uint64_t* out) {
    const FabricPart& f = static_cast<Harness*>(p)->fabric;
    out[0] = f.evals;
    out[1] = f.skipped;
}

// on != 0 (the default): skip the shell while the configuration block runs a load alone (the fast
// path above); 0: evaluate it every cycle.
void fs_set_fast_load(void* p, int on) { static_cast<Harness*>(p)->block.fast = on != 0; }

uint64_t fs_fast_cycles(void* p) { return static_cast<Harness*>(p)->block.fast_cycles; }

// Where two harnesses of this build differ: up to max byte offsets into the shell's variables (the root
// object up to its pointers to the model's bookkeeping), then into the configuration block's state with
// bit 40 set. Returns how many were written. Two fresh instances differ already in the bytes nothing
// writes (padding, scratch of function calls not yet made): the tests compare against that.
int fs_state_diff(void* p, void* q, uint64_t* out, int max) {
    auto* a = static_cast<Harness*>(p);
    auto* b = static_cast<Harness*>(q);
    const auto* ra = reinterpret_cast<const unsigned char*>(a->top->rootp);
    const auto* rb = reinterpret_cast<const unsigned char*>(b->top->rootp);
    const size_t vars = reinterpret_cast<const unsigned char*>(&a->top->rootp->vlSymsp) - ra;
    int n = 0;
    for (size_t i = 0; i < vars && n < max; i++) {
        if (ra[i] != rb[i]) out[n++] = i;
    }
    if (a->fabric.model && b->fabric.model) {
        size_t na = 0, nb = 0;
        const auto* sa = static_cast<const unsigned char*>(a->fabric.api->state(a->fabric.model, &na));
        const auto* sb = static_cast<const unsigned char*>(b->fabric.api->state(b->fabric.model, &nb));
        for (size_t i = 0; i < na && i < nb && n < max; i++) {
            if (sa[i] != sb[i]) out[n++] = (uint64_t{1} << 41) | i;
        }
    }
    if (!a->block.model || !b->block.model) return n;
    size_t na = 0, nb = 0;
    const auto* sa = static_cast<const unsigned char*>(a->block.api->state(a->block.model, &na));
    const auto* sb = static_cast<const unsigned char*>(b->block.api->state(b->block.model, &nb));
    for (size_t i = 0; i < na && i < nb && n < max; i++) {
        if (sa[i] != sb[i]) out[n++] = (uint64_t{1} << 40) | i;
    }
    return n;
}

// on != 0: evaluate the shell and every module model by Verilator's whole eval() at both clock levels
// from now on, instead of each level's phases (eval_phases.h): the reference the tests compare with.
void fs_set_whole_eval(void* p, int on) { static_cast<Harness*>(p)->whole = on ? rm::EVAL_WHOLE : 0; }

// on != 0 (the default): the lean pin exchange between the shell and the module models (read_pins_lean,
// and rm::EVAL_HELD at the edge); 0: the exchange as before it (read_pins, every input written at both
// levels), the reference the tests compare with. The same pins either way.
void fs_set_lean_exchange(void* p, int on) { static_cast<Harness*>(p)->lean = on != 0; }

// Module `id`'s inputs in slot `slot` with a combinational path to one of its outputs (rm::COMB_*,
// from its build); until set, every input (its low evaluation is never folded). 0, or -1 for no such
// model.
int fs_set_comb_inputs(void* p, int slot, int id, uint32_t comb) {
    auto* h = static_cast<Harness*>(p);
    if (slot < 0 || slot >= NUM_SLOTS || id <= 0 || id >= NUM_IDS || !h->slots[slot].model[id]) return -1;
    h->slots[slot].comb[id] = comb;
    return 0;
}

// on != 0 (the default): fold a module's low evaluation into its edge's call when no input with a
// combinational path to an output moved since its last edge (may_fold); 0: evaluate both levels
// apart, the reference the tests compare with. The lean exchange only (fs_set_lean_exchange).
void fs_set_fold_low(void* p, int on) { static_cast<Harness*>(p)->fold = on != 0; }

// on != 0: where a low evaluation could be folded, run it anyway and stop the run (fault 0xFFFE) if
// it moved an output: a check of the modules' combinational sets on whatever the run drives.
void fs_set_fold_check(void* p, int on) { static_cast<Harness*>(p)->fold_check = on != 0; }

// [0] low evaluations folded into their edge's call, [1] folds undone within the low phase (the low
// evaluation ran there, once instead of twice), [2] low evaluations checked instead (fs_set_fold_check).
void fs_folds(void* p, uint64_t* out) {
    out[0] = static_cast<Harness*>(p)->folds;
    out[1] = static_cast<Harness*>(p)->unfolds;
    out[2] = static_cast<Harness*>(p)->fold_checks;
}

// Evaluations since creation: [0] of the shell beyond its two a cycle (the boundary settling),
// [1] of module models, [2] of module models skipped at rest (ModuleSlot).
void fs_evals(void* p, uint64_t* out) {
    auto* h = static_cast<Harness*>(p);
    out[0] = h->shell_evals;
    out[1] = h->module_evals;
    out[2] = 0;
    for (const auto& s : h->slots) out[2] += s.skipped;
}

// on != 0: time every call that runs cycles by part from now on, from zero (cost_split.h); 0: stop,
// keeping the counts.
void fs_set_cost_split(void* p, int on) {
    auto* h = static_cast<Harness*>(p);
    if (on) {
        h->split = CostSplit();
        h->split.read = read_ticks();
    }
    h->split.on = on != 0;
}

// Since fs_set_cost_split, over the cycles counted: ticks [0] in the shell's evaluations, [1] the module
// models', [2] the configuration block's, [3] the cycles whole (the rest is the harness's own); [4] the
// cycles counted, [5] the cycles left out (interrupted, cost_split.h).
void fs_cost_split(void* p, uint64_t* out) {
    const CostSplit& split = static_cast<Harness*>(p)->split;
    for (int k = 0; k < CostSplit::PARTS; k++) out[k] = split.ticks[k];
    out[CostSplit::PARTS] = split.cycles;
    out[CostSplit::PARTS + 1] = split.dropped;
}

// {module id, slot + 1} of a slot that selected a module no model was attached for (the run stops
// there), 0xFFFF if a module's boundary never settled, 0xFFFE if a folded module's evaluation would
// not have been the same (fs_set_fold_check, or a module id moving within a low phase), else 0.
uint32_t fs_fault(void* p) { return static_cast<Harness*>(p)->fault; }

// Collect a done channel (streams 0.., the port at CFG_CHANNEL): stats (8 entries) in sent,
// out received, extra out beats, TLAST errors, TUSER errors, start cycle, last-output (port: last
// word) cycle, end cycle. Returns 0, or -1 if the channel is not done.
int fs_chan_collect(void* p, int channel, uint64_t* stats) {
    auto* h = static_cast<Harness*>(p);
    if (channel < 0 || channel > CFG_CHANNEL || !(h->done_mask >> channel & 1)) return -1;
    h->done_mask &= ~(1u << channel);
    if (channel == CFG_CHANNEL) {
        CfgChannel& g = h->cfg;
        uint64_t v[8] = {g.i, 0, 0, 0, 0, g.start, g.words_end, g.end};
        std::memcpy(stats, v, sizeof v);
        g.armed = false;
        return 0;
    }
    StreamChannel& c = h->chan[channel];
    uint64_t v[8] = {c.i_in, c.i_out, c.extra, c.last_err, c.user_err, c.start, c.out_end, c.end};
    std::memcpy(stats, v, sizeof v);
    c.armed = false;
    return 0;
}

// Give up on an armed channel (the caller's timeout): its inputs go idle, its done bit clears.
void fs_chan_abort(void* p, int channel) {
    auto* h = static_cast<Harness*>(p);
    if (channel < 0 || channel > CFG_CHANNEL) return;
    h->done_mask &= ~(1u << channel);
    if (channel == CFG_CHANNEL) {
        if (h->cfg.armed && !h->cfg.done) h->armed--;
        h->cfg.armed = false;
        drive_cfg(h, false, 0, false);
        return;
    }
    if (channel >= h->streams) return;
    StreamChannel& c = h->chan[channel];
    if (c.armed && !c.done) h->armed--;
    c.armed = false;
    drive_stream(h->top.get(), channel, false, ZERO_BEAT, false, false, false);
}

int fs_beat_words() { return BEAT_WORDS; }

uint32_t fs_armed(void* p) { return static_cast<uint32_t>(static_cast<Harness*>(p)->armed); }

void* fs_create() {
    auto* h = new Harness;
    h->ctx = std::make_unique<VerilatedContext>();
    h->top = std::make_unique<Vshell>(h->ctx.get(), "shell");
    idle_inputs(h);
    bus_set(h, WSTRB, 0xF);
    h->top->clk = 0;
    h->top->eval();   // initialisation (initial blocks, settle); later evaluations go through eval_low / eval_edge
    return h;
}

void fs_destroy(void* p) {
    auto* h = static_cast<Harness*>(p);
    h->top->final();
    if (h->block.model) h->block.api->destroy(h->block.model);
    if (h->fabric.model) h->fabric.api->destroy(h->fabric.model);
    for (auto& s : h->slots) {
        for (int m = 0; m < NUM_IDS; m++) {
            if (s.model[m]) s.api[m]->destroy(s.model[m]);
        }
    }
    delete h;
}

void fs_reset(void* p, int cycles) {
    auto* h = static_cast<Harness*>(p);
    idle_inputs(h);
    h->top->rst = 1;
    for (int i = 0; i < cycles; i++) tick(h);
    h->top->rst = 0;
    tick(h);
}

uint64_t fs_cycles(void* p) { return static_cast<Harness*>(p)->cycle; }

void fs_idle(void* p, uint64_t cycles) {
    auto* h = static_cast<Harness*>(p);
    idle_inputs(h);
    for (uint64_t i = 0; i < cycles; i++) tick(h);
}

// AXI-Lite write; returns BRESP (0..3) or -1 on timeout.
int fs_axil_write(void* p, uint32_t addr, uint32_t data, int max_cycles) {
    auto* h = static_cast<Harness*>(p);
    bus_set(h, AWADDR, addr);
    bus_set(h, WDATA, data);
    bus_set(h, WSTRB, 0xF);
    bus_set(h, AWVALID, 1);
    bus_set(h, WVALID, 1);
    bus_set(h, BREADY, 1);
    bool aw = false, w = false;
    for (int i = 0; i < max_cycles && !h->fault; i++) {
        settle_low(h);
        const BusAnswer a = bus_answer(h);
        bool aw_fire = !aw && a.awready;
        bool w_fire = !w && a.wready;
        bool b_fire = (aw || aw_fire) && (w || w_fire) && a.bvalid;
        int resp = static_cast<int>(a.bresp);
        rise(h);
        aw = aw || aw_fire;
        w = w || w_fire;
        if (aw) bus_set(h, AWVALID, 0);
        if (w) bus_set(h, WVALID, 0);
        if (b_fire) {
            bus_set(h, BREADY, 0);
            return resp;
        }
    }
    idle_inputs(h);
    return -1;
}

// AXI-Lite read; returns (RRESP << 32) | RDATA, or -1 on timeout.
int64_t fs_axil_read(void* p, uint32_t addr, int max_cycles) {
    auto* h = static_cast<Harness*>(p);
    bus_set(h, ARADDR, addr);
    bus_set(h, ARVALID, 1);
    bus_set(h, RREADY, 1);
    bool ar = false;
    for (int i = 0; i < max_cycles && !h->fault; i++) {
        settle_low(h);
        const BusAnswer a = bus_answer(h);
        bool ar_fire = !ar && a.arready;
        bool r_fire = (ar || ar_fire) && a.rvalid;
        int64_t value = (static_cast<int64_t>(a.rresp) << 32) | a.rdata;
        rise(h);
        ar = ar || ar_fire;
        if (ar) bus_set(h, ARVALID, 0);
        if (r_fire) {
            bus_set(h, RREADY, 0);
            return value;
        }
    }
    idle_inputs(h);
    return -1;
}

// Drive the video stream and the configuration port together until every input word is accepted
// and n_out output beats have arrived (or max_cycles pass).
//   in/n_in/in_cols: beats in (BEAT_WORDS words each), TLAST after every in_cols, TUSER on the first.
//   out/n_out/out_cols: where output beats go; TLAST is checked against out_cols.
//   cfg/n_cfg: configuration words, TLAST on the last; cfg_delay: cycles before the first one.
//   gap_pct / stall_pct: percent of cycles with input TVALID low / output TREADY low.
//   settle: cycles to keep running (output ready) after everything finished, to catch extra beats.
// stats (8 entries): in sent, out received, extra out beats, TLAST errors, TUSER errors,
// cfg words sent, cycle of the last cfg word, cycle the last output arrived (relative to start).
// Returns cycles elapsed, or -1 if max_cycles passed first.
int64_t fs_run(void* p, const uint32_t* in, uint64_t n_in, uint32_t in_cols, uint32_t* out,
               uint64_t n_out, uint32_t out_cols, const uint32_t* cfg, uint64_t n_cfg,
               uint64_t cfg_delay, uint32_t seed, uint32_t gap_pct, uint32_t stall_pct,
               uint64_t settle, uint64_t max_cycles, uint64_t* stats) {
    auto* h = static_cast<Harness*>(p);
    if (h->armed || h->done_mask) return -2;   // stream 0 and the port belong to armed channels
    Vshell* t = h->top.get();
    h->rng = seed ? seed : 1;
    uint64_t i_in = 0, i_out = 0, i_cfg = 0, extra = 0, last_err = 0, user_err = 0;
    uint64_t cfg_end = 0, out_end = 0, after = 0;
    const uint64_t start = h->cycle;
    for (uint64_t c = 0; c < max_cycles && !h->fault; c++) {
        bool in_on = i_in < n_in && (gap_pct == 0 || next_rand(h) % 100 >= gap_pct);
        t->s_axis_tvalid = in_on;
        if (in_on) {
            for (int j = 0; j < BEAT_WORDS; j++) put_word(t->s_axis_tdata, j, in[i_in * BEAT_WORDS + j]);
            t->s_axis_tlast = in_cols && (i_in % in_cols) == in_cols - 1;
            t->s_axis_tuser = i_in == 0;
        }
        bool done_io = i_in >= n_in && i_out >= n_out && i_cfg >= n_cfg;
        t->m_axis_tready = done_io || stall_pct == 0 || next_rand(h) % 100 >= stall_pct;
        bool cfg_on = i_cfg < n_cfg && c >= cfg_delay;
        if (cfg_on && n_in == 0 && n_out == 0 && stall_pct == 0 && may_skip_shell(h)) {
            // The port's words only: the block alone while the shell rests (as skip_for_channel).
            auto word = [&](bool& valid, uint32_t& data, bool& last) {
                valid = true;
                data = cfg[i_cfg];
                last = i_cfg == n_cfg - 1;
                return true;
            };
            uint64_t ran = 0;
            auto fired = [&](bool fire) {
                ran++;
                if (fire && ++i_cfg == n_cfg) cfg_end = c + ran;
                return i_cfg < n_cfg;
            };
            c += run_block_alone(h, max_cycles - c, word, fired) - 1;   // the loop adds the last one
            continue;
        }
        drive_cfg(h, cfg_on, cfg_on ? cfg[i_cfg] : 0, cfg_on && i_cfg == n_cfg - 1);
        settle_low(h);
        bool in_fire = in_on && t->s_axis_tready;
        bool out_fire = t->m_axis_tvalid && t->m_axis_tready;
        bool cfg_fire = cfg_on && cfg_ready(h);
        if (out_fire) {
            if (i_out < n_out) {
                if (out) out_beat(t, 0, out + i_out * BEAT_WORDS);
                bool want_last = out_cols && (i_out % out_cols) == out_cols - 1;
                if (static_cast<bool>(t->m_axis_tlast) != want_last) last_err++;
                if (static_cast<bool>(t->m_axis_tuser) != (i_out == 0)) user_err++;
                i_out++;
                if (i_out == n_out) out_end = c + 1;
            } else {
                extra++;
            }
        }
        rise(h);
        if (in_fire) i_in++;
        if (cfg_fire) {
            i_cfg++;
            if (i_cfg == n_cfg) cfg_end = c + 1;
        }
        if (done_io && ++after > settle) break;
    }
    t->s_axis_tvalid = 0;
    drive_cfg(h, false, 0, false);
    t->m_axis_tready = 0;
    stats[0] = i_in;
    stats[1] = i_out;
    stats[2] = extra;
    stats[3] = last_err;
    stats[4] = user_err;
    stats[5] = i_cfg;
    stats[6] = cfg_end;
    stats[7] = out_end;
    bool finished = i_in >= n_in && i_out >= n_out && i_cfg >= n_cfg;
    if (h->fault) return -3;
    return finished ? static_cast<int64_t>(h->cycle - start) : -1;
}

}  // extern "C"

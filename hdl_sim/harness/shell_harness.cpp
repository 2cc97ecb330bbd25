// Bulk harness for the Verilated shell: a C ABI that Python calls through ctypes, so frames and
// bitstreams move through the RTL without a Python call per cycle. One clock; every call advances
// the model by whole cycles and returns what it saw.
#include <cstdint>
#include <cstring>
#include <memory>

#include "Vshell.h"
#include "verilated.h"

namespace {

struct Harness {
    std::unique_ptr<VerilatedContext> ctx;
    std::unique_ptr<Vshell> top;
    uint64_t cycle = 0;
    uint32_t rng = 1;
};

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
inline void settle_low(Harness* h) {
    h->top->clk = 0;
    h->top->eval();
}

inline void rise(Harness* h) {
    h->top->clk = 1;
    h->top->eval();
    h->cycle++;
}

inline void tick(Harness* h) {
    settle_low(h);
    rise(h);
}

void idle_inputs(Vshell* t) {
    t->s_axil_awvalid = 0;
    t->s_axil_wvalid = 0;
    t->s_axil_bready = 0;
    t->s_axil_arvalid = 0;
    t->s_axil_rready = 0;
    t->s_axis_tvalid = 0;
    t->m_axis_tready = 0;
    t->s_axis_cfg_tvalid = 0;
}

}  // namespace

extern "C" {

void* fs_create() {
    auto* h = new Harness;
    h->ctx = std::make_unique<VerilatedContext>();
    h->top = std::make_unique<Vshell>(h->ctx.get(), "shell");
    idle_inputs(h->top.get());
    h->top->s_axil_wstrb = 0xF;
    return h;
}

void fs_destroy(void* p) {
    auto* h = static_cast<Harness*>(p);
    h->top->final();
    delete h;
}

void fs_reset(void* p, int cycles) {
    auto* h = static_cast<Harness*>(p);
    idle_inputs(h->top.get());
    h->top->rst = 1;
    for (int i = 0; i < cycles; i++) tick(h);
    h->top->rst = 0;
    tick(h);
}

uint64_t fs_cycles(void* p) { return static_cast<Harness*>(p)->cycle; }

void fs_idle(void* p, uint64_t cycles) {
    auto* h = static_cast<Harness*>(p);
    idle_inputs(h->top.get());
    for (uint64_t i = 0; i < cycles; i++) tick(h);
}

// AXI-Lite write; returns BRESP (0..3) or -1 on timeout.
int fs_axil_write(void* p, uint32_t addr, uint32_t data, int max_cycles) {
    auto* h = static_cast<Harness*>(p);
    Vshell* t = h->top.get();
    t->s_axil_awaddr = addr;
    t->s_axil_wdata = data;
    t->s_axil_wstrb = 0xF;
    t->s_axil_awvalid = 1;
    t->s_axil_wvalid = 1;
    t->s_axil_bready = 1;
    bool aw = false, w = false;
    for (int i = 0; i < max_cycles; i++) {
        settle_low(h);
        bool aw_fire = !aw && t->s_axil_awready;
        bool w_fire = !w && t->s_axil_wready;
        bool b_fire = (aw || aw_fire) && (w || w_fire) && t->s_axil_bvalid;
        int resp = t->s_axil_bresp;
        rise(h);
        aw = aw || aw_fire;
        w = w || w_fire;
        if (aw) t->s_axil_awvalid = 0;
        if (w) t->s_axil_wvalid = 0;
        if (b_fire) {
            t->s_axil_bready = 0;
            return resp;
        }
    }
    idle_inputs(t);
    return -1;
}

// AXI-Lite read; returns (RRESP << 32) | RDATA, or -1 on timeout.
int64_t fs_axil_read(void* p, uint32_t addr, int max_cycles) {
    auto* h = static_cast<Harness*>(p);
    Vshell* t = h->top.get();
    t->s_axil_araddr = addr;
    t->s_axil_arvalid = 1;
    t->s_axil_rready = 1;
    bool ar = false;
    for (int i = 0; i < max_cycles; i++) {
        settle_low(h);
        bool ar_fire = !ar && t->s_axil_arready;
        bool r_fire = (ar || ar_fire) && t->s_axil_rvalid;
        int64_t value = (static_cast<int64_t>(t->s_axil_rresp) << 32) | t->s_axil_rdata;
        rise(h);
        ar = ar || ar_fire;
        if (ar) t->s_axil_arvalid = 0;
        if (r_fire) {
            t->s_axil_rready = 0;
            return value;
        }
    }
    idle_inputs(t);
    return -1;
}

// Drive the video stream and the configuration port together until every input word is accepted
// and n_out output beats have arrived (or max_cycles pass).
//   in/n_in/in_cols: pixels in, TLAST after every in_cols, TUSER on the first.
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
    Vshell* t = h->top.get();
    h->rng = seed ? seed : 1;
    uint64_t i_in = 0, i_out = 0, i_cfg = 0, extra = 0, last_err = 0, user_err = 0;
    uint64_t cfg_end = 0, out_end = 0, after = 0;
    const uint64_t start = h->cycle;
    for (uint64_t c = 0; c < max_cycles; c++) {
        bool in_on = i_in < n_in && (gap_pct == 0 || next_rand(h) % 100 >= gap_pct);
        t->s_axis_tvalid = in_on;
        if (in_on) {
            t->s_axis_tdata = in[i_in];
            t->s_axis_tlast = in_cols && (i_in % in_cols) == in_cols - 1;
            t->s_axis_tuser = i_in == 0;
        }
        bool done_io = i_in >= n_in && i_out >= n_out && i_cfg >= n_cfg;
        t->m_axis_tready = done_io || stall_pct == 0 || next_rand(h) % 100 >= stall_pct;
        bool cfg_on = i_cfg < n_cfg && c >= cfg_delay;
        t->s_axis_cfg_tvalid = cfg_on;
        if (cfg_on) {
            t->s_axis_cfg_tdata = cfg[i_cfg];
            t->s_axis_cfg_tlast = i_cfg == n_cfg - 1;
        }
        settle_low(h);
        bool in_fire = in_on && t->s_axis_tready;
        bool out_fire = t->m_axis_tvalid && t->m_axis_tready;
        bool cfg_fire = cfg_on && t->s_axis_cfg_tready;
        if (out_fire) {
            if (i_out < n_out) {
                if (out) out[i_out] = t->m_axis_tdata;
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
    t->s_axis_cfg_tvalid = 0;
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
    return finished ? static_cast<int64_t>(h->cycle - start) : -1;
}

}  // extern "C"

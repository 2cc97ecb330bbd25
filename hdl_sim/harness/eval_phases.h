// eval_phases.h: a Verilated model's evaluation split at the clock's two levels, for harnesses that
// evaluate a model twice a cycle (clock low with new inputs, then the rising edge with the same
// inputs). Verilator's eval() runs, in order: sample (the values concurrent assertions read at a
// clock event), the input-combinational region (every net that depends on a top-level input, run
// once a call whether or not an input changed), then the active/NBA loop (flops on the events that
// fired, and the logic after them). Per level only part of that is needed:
//
// - low: the input-combinational region (the inputs changed) and the active/NBA loop (no edge fires
//   with the clock low, but the loop records the clock's level, so the next rising edge is seen).
//   Not sample: the sampled values are read only by assertions on a rising edge, and the edge's own
//   evaluation samples again before any of them runs, from the same values.
// - edge: sample, then the active/NBA loop. Not the input-combinational region: no input changed
//   since the low evaluation (the harnesses guarantee it), and what that region computes depends on
//   the clock only where a latch is open while the clock is low (a clock gate), which it is not now;
//   so it would compute what the low evaluation left, a second time.
//
// The results are the same nets, flops and assertion failures as eval() at both levels (the harness
// tests compare frames, cycle counts and loads against the models evaluated with eval()).
//
// DEFINE_EVAL_PHASES(Vtop) declares Verilator's phase functions of model class Vtop (generated, with
// external linkage, inside the same library) and defines eval_low(root) and eval_edge(root), and
// eval_whole(root): all of them, as eval() runs them (the reference the tests compare with); and
// eval_level(root, clk, whole), the one of the three a model's eval call picks by its mode. A model
// without assertions has no sample function: it is declared weak and skipped when absent.
#pragma once

#define FS_EVAL_LIMIT 10000   /* Verilator's default --converge-limit */

#define DEFINE_EVAL_PHASES(VTOP)                                                                          \
    void VTOP##___024root___sample(VTOP##___024root*) __attribute__((weak));                             \
    bool VTOP##___024root___eval_phase__ico(VTOP##___024root*);                                           \
    bool VTOP##___024root___eval_phase__act(VTOP##___024root*);                                           \
    bool VTOP##___024root___eval_phase__nba(VTOP##___024root*);                                           \
    void VTOP##___024root___eval(VTOP##___024root*);                                                      \
    namespace {                                                                                           \
    inline void eval_nba_loop(VTOP##___024root* r) {                                                      \
        int nba = 0;                                                                                      \
        do {                                                                                              \
            int act = 0;                                                                                  \
            while (VTOP##___024root___eval_phase__act(r)) {                                               \
                if (++act > FS_EVAL_LIMIT) VL_FATAL_MT(__FILE__, __LINE__, "", "active region did not converge"); \
            }                                                                                             \
            if (++nba > FS_EVAL_LIMIT) VL_FATAL_MT(__FILE__, __LINE__, "", "NBA region did not converge");  \
        } while (VTOP##___024root___eval_phase__nba(r));                                                  \
    }                                                                                                     \
    inline void eval_low(VTOP##___024root* r) {                                                           \
        r->__VicoFirstIteration = 1;                                                                      \
        int ico = 0;                                                                                      \
        do {                                                                                              \
            if (++ico > FS_EVAL_LIMIT) VL_FATAL_MT(__FILE__, __LINE__, "", "input region did not converge"); \
            r->__VicoPhaseResult = VTOP##___024root___eval_phase__ico(r);                                 \
            r->__VicoFirstIteration = 0;                                                                  \
        } while (r->__VicoPhaseResult);                                                                   \
        eval_nba_loop(r);                                                                                 \
    }                                                                                                     \
    inline void eval_edge(VTOP##___024root* r) {                                                          \
        if (VTOP##___024root___sample) VTOP##___024root___sample(r);                                      \
        eval_nba_loop(r);                                                                                 \
    }                                                                                                     \
    inline void eval_whole(VTOP##___024root* r) { VTOP##___024root___eval(r); }                           \
    inline void eval_level(VTOP##___024root* r, int clk, bool whole) {                                    \
        if (whole) {                                                                                      \
            eval_whole(r);                                                                                \
        } else if (clk) {                                                                                 \
            eval_edge(r);                                                                                 \
        } else {                                                                                          \
            eval_low(r);                                                                                  \
        }                                                                                                 \
    }                                                                                                     \
    }

// cost_split.h: where a cycle's time goes, by part - the shell's evaluations, the module models', the
// configuration block's, and the rest of the cycle (the harness's own work: channels, pins, rest
// tests). Off by default. When on, every cycle the harness runs whole (settle_low to rise) and every
// evaluation in it is bracketed by two fenced reads of a cycle counter (the time-stamp counter on x86,
// a steady clock elsewhere): tens of nanoseconds a cycle, and the parts no longer overlap in the
// processor as they otherwise do, so a timed run is slower than an untimed one and its split is a
// share of the timed run. The counter counts wall time: a cycle in which the process was descheduled
// (longer than CYCLE_LIMIT) is left out whole, parts and all, so the shares are those of the cycles
// that ran undisturbed. The reads' own cost (read_ticks) is taken out of the parts and the cycles, so
// the parts' times are those of the evaluations, fenced. Cycles a load's fast path skips (the configuration block alone) are not timed.
// The simulation itself is untouched: the same evaluations in the same order
// (tests/test_harness_cost_split.py).
#pragma once
#include <cstdint>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
// Fenced: the counter is read once the work before it is done, and the work after it starts then, so
// the tail of one part's evaluation (executed out of order) is not counted in the next part's.
inline uint64_t split_ticks() {
    _mm_lfence();
    const uint64_t t = __rdtsc();
    _mm_lfence();
    return t;
}
#else
#include <chrono>
inline uint64_t split_ticks() {
    return static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
}
#endif

// The fewest ticks between two reads, over a few hundred tries: a read's own cost, which every span
// counts once and every enclosing cycle twice per span inside it (taken out again below).
inline uint64_t read_ticks() {
    uint64_t best = ~uint64_t{0};
    for (int i = 0; i < 256; i++) {
        const uint64_t a = split_ticks();
        const uint64_t b = split_ticks();
        if (b - a < best) best = b - a;
    }
    return best;
}

// A cycle takes about a microsecond (a few thousand ticks); one that took more than this was interrupted.
constexpr uint64_t CYCLE_LIMIT = 200000;

// Ticks by part, of the cycles counted since the split was switched on.
struct CostSplit {
    enum Part { SHELL = 0, MODULES = 1, BLOCK = 2, CYCLE = 3, PARTS = 4 };
    bool on = false;
    uint64_t ticks[PARTS] = {};
    uint64_t cycles = 0, dropped = 0;   // cycles counted, and left out (interrupted)
    uint64_t pending[CYCLE] = {};       // the parts of the cycle under way, and its spans
    uint64_t spans = 0;
    uint64_t cycle_start = 0;
    uint64_t read = 0;                  // read_ticks(), measured when the split is switched on

    static uint64_t less(uint64_t a, uint64_t b) { return a > b ? a - b : 0; }
    void add(Part part, uint64_t d) {
        pending[part] += less(d, read);
        spans++;
    }

    void begin_cycle() {
        if (!on) return;
        for (auto& t : pending) t = 0;
        spans = 0;
        cycle_start = split_ticks();
    }
    void end_cycle() {
        if (!on) return;
        const uint64_t d = split_ticks() - cycle_start;
        if (d >= CYCLE_LIMIT) {
            dropped++;
            return;
        }
        for (int k = 0; k < CYCLE; k++) ticks[k] += pending[k];
        ticks[CYCLE] += less(d, read * (1 + 2 * spans));
        cycles++;
    }
};

// Times one part's work when the split is on: `CostSplit::Part` p for the lifetime of the guard.
class SplitSpan {
public:
    SplitSpan(CostSplit& split, CostSplit::Part part)
        : split_(split), part_(part), start_(split.on ? split_ticks() : 0) {}
    ~SplitSpan() {
        if (split_.on) split_.add(part_, split_ticks() - start_);
    }
    SplitSpan(const SplitSpan&) = delete;
    SplitSpan& operator=(const SplitSpan&) = delete;

private:
    CostSplit& split_;
    CostSplit::Part part_;
    uint64_t start_;
};

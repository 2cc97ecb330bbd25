// side_model.h: what every side model's wrapper (rm_model.cpp, config_model.cpp, fabric_model.cpp)
// holds and does the same way around its own eval: the Verilated model and its context, their creation
// and end, and the state-bytes calls (mark, unchanged, state) by which the harness finds a model at rest
// and the tests compare two models. Each wrapper instantiates these for its model class Vtop (one a
// library, so no two instantiations meet) and puts them in its API table.
#pragma once
#include <cstddef>
#include <cstring>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

#include "verilated.h"

namespace side {

template <typename Vtop>
struct Model {
    std::unique_ptr<VerilatedContext> ctx;
    std::unique_ptr<Vtop> top;
    std::vector<unsigned char> mark;   // a copy of the model's state (mark / unchanged)
};

// The Verilated root class of Vtop (Vtop___024root), where every variable of the design lives.
template <typename Vtop>
using Root = std::remove_pointer_t<decltype(std::declval<Vtop&>().rootp)>;

template <typename Vtop>
Vtop* top_of(void* p) { return static_cast<Model<Vtop>*>(p)->top.get(); }

// The model's whole state: every variable, port and scheduling flag of the Verilated design lives in
// its root object (no heap-held containers in these designs), so equal bytes are an equal state.
// Padding bytes could only differ by being written, which makes a state look changed, never the
// converse.
template <typename Vtop>
const unsigned char* state_bytes(Model<Vtop>* m) { return reinterpret_cast<const unsigned char*>(m->top->rootp); }
template <typename Vtop>
constexpr size_t STATE_SIZE = sizeof(Root<Vtop>);

// NAME: the instance's name (what %m and the assertions' messages print).
template <typename Vtop, const char* NAME>
void* create() {
    auto* m = new Model<Vtop>;
    m->ctx = std::make_unique<VerilatedContext>();
    m->top = std::make_unique<Vtop>(m->ctx.get(), NAME);
    m->top->clk = 0;
    m->top->eval();
    return m;
}

template <typename Vtop>
void destroy(void* p) {
    auto* m = static_cast<Model<Vtop>*>(p);
    m->top->final();
    delete m;
}

template <typename Vtop>
void mark(void* p) {
    auto* m = static_cast<Model<Vtop>*>(p);
    m->mark.assign(state_bytes(m), state_bytes(m) + STATE_SIZE<Vtop>);
}

template <typename Vtop>
int unchanged(void* p) {
    auto* m = static_cast<Model<Vtop>*>(p);
    return m->mark.size() == STATE_SIZE<Vtop> &&
           std::memcmp(m->mark.data(), state_bytes(m), STATE_SIZE<Vtop>) == 0;
}

// The state bytes before the root's pointer to its symbol table: the design's variables (the pointer
// and what follows it are the instance's own bookkeeping, which differs between two equal models).
template <typename Vtop>
const void* state(void* p, size_t* size) {
    auto* m = static_cast<Model<Vtop>*>(p);
    *size = reinterpret_cast<const unsigned char*>(&m->top->rootp->vlSymsp) - state_bytes(m);
    return state_bytes(m);
}

}  // namespace side

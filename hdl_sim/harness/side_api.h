// side_api.h: what the configuration block's and the fabric's libraries (config_model.cpp,
// fabric_model.cpp) export to the shell harness, the same table for both but for their boundary's pins
// (cfgblk::Pins, fab::Pins). A module's library (rm_pins.h) exports a table of its own: it has a beat
// width and no state call.
#pragma once
#include <cstddef>

namespace side {

// eval's mode, as rm::Pins's: the clock's level, and EVAL_WHOLE for Verilator's whole eval().
constexpr int EVAL_CLK = 1, EVAL_WHOLE = 2;

// create makes a model; eval takes the inputs in pins, evaluates in mode and writes the outputs into
// pins. mark/unchanged as a module's (rm_pins.h): a copy of the whole state, and whether the state is
// that copy again.
template <typename Pins>
struct Api {
    int abi;
    void* (*create)();
    void (*destroy)(void*);
    void (*eval)(void*, int mode, Pins*);
    void (*mark)(void*);
    int (*unchanged)(void*);
    const void* (*state)(void*, size_t* size);   // the model's state bytes (tests compare two models)
};

}  // namespace side

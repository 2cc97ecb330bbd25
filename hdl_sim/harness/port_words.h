// port_words.h: 32-bit word and bit access to a Verilated port, whatever C++ type Verilator gave it
// (an integer up to 64 bits, a VlWide above). Shared by the shell harness and the module models.
#pragma once
#include <cstdint>
#include <type_traits>

template <typename T>
inline void put_word(T& v, int i, uint32_t x) {
    if constexpr (std::is_integral_v<T>) {
        if constexpr (sizeof(T) <= 4) {
            v = x;
        } else {
            const uint64_t mask = 0xFFFFFFFFULL << (32 * i);
            v = (v & ~mask) | (static_cast<uint64_t>(x) << (32 * i));
        }
    } else {
        v[i] = x;
    }
}

template <typename T>
inline uint32_t get_word(const T& v, int i) {
    if constexpr (std::is_integral_v<T>) {
        return static_cast<uint32_t>(static_cast<uint64_t>(v) >> (32 * i));
    } else {
        return v[i];
    }
}

template <typename T>
inline void put_bit(T& v, int i, bool b) {
    v = static_cast<T>((v & ~(T(1) << i)) | (T(b) << i));
}

template <typename T>
inline bool get_bit(T v, int i) {
    return (v >> i) & 1;
}

//: 32-bit words of a port (1 for up to 32 bits, 2 for 64, N for a VlWide<N>).
template <typename T>
constexpr int port_words() {
    return sizeof(T) / 4;
}

//: 32-bit words a port's value spans: as port_words, but a port narrower than 32 bits (a CData or
//: SData, whose size port_words rounds down to none) is one word.
template <typename T>
constexpr int words_of() {
    return sizeof(T) < 4 ? 1 : port_words<T>();
}

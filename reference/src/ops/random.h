#pragma once
// TensorFlow's Philox4x32-10 counter-based generator (as RANDOM_MULTINOMIAL uses it); exposed for tests.
#include <array>
#include <cstdint>

namespace npu::ref::ops {

class PhiloxRandom {
public:
    PhiloxRandom(uint64_t seedLo, uint64_t seedHi);
    std::array<uint32_t, 4> next();  // one block of four words; advances the counter
    uint32_t nextUint32();           // words of successive blocks, one at a time
    double nextDouble();             // uniform in [0, 1) from two words

private:
    std::array<uint32_t, 4> counter_{};
    std::array<uint32_t, 2> key_{};
    std::array<uint32_t, 4> block_{};
    int used_ = 4;
};

}  // namespace npu::ref::ops

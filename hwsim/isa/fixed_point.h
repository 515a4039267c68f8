#pragma once
// The fixed-point arithmetic the vector unit implements, defined here because it is part of the
// ISA's semantics (REQUANT, ADD). It is gemmlowp's / TFLite's integer rounding behaviour, written
// without undefined behaviour: where TFLite's int32 left shift could overflow, the result wraps
// (two's complement), which is what TFLite's code does on every compiler we target.
// Headers only, constexpr, freestanding.

#include <cstdint>

namespace npu::isa {

constexpr int32_t wrapToInt32(int64_t v) {
    return static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint64_t>(v)));
}

// round(a * b / 2^31), saturating the single overflow case a == b == INT32_MIN.
constexpr int32_t saturatingRoundingDoublingHighMul(int32_t a, int32_t b) {
    if (a == b && a == INT32_MIN) return INT32_MAX;
    const int64_t ab = static_cast<int64_t>(a) * static_cast<int64_t>(b);
    const int64_t nudge = ab >= 0 ? (int64_t{1} << 30) : (1 - (int64_t{1} << 30));
    return static_cast<int32_t>((ab + nudge) / (int64_t{1} << 31));  // truncating division
}

// x / 2^exponent rounded to nearest, ties away from zero. exponent in [0, 31].
constexpr int32_t roundingDivideByPot(int32_t x, int32_t exponent) {
    const int32_t mask = static_cast<int32_t>((int64_t{1} << exponent) - 1);
    const int32_t remainder = x & mask;
    const int32_t threshold = (mask >> 1) + (x < 0 ? 1 : 0);
    return (x >> exponent) + (remainder > threshold ? 1 : 0);
}

// TFLite's MultiplyByQuantizedMultiplier: shift > 0 shifts left before the multiply.
constexpr int32_t multiplyByQuantizedMultiplier(int32_t x, int32_t multiplier, int32_t shift) {
    const int32_t leftShift = shift > 0 ? shift : 0;
    const int32_t rightShift = shift > 0 ? 0 : -shift;
    const int32_t shifted = wrapToInt32(static_cast<int64_t>(x) * (int64_t{1} << leftShift));
    return roundingDivideByPot(saturatingRoundingDoublingHighMul(shifted, multiplier), rightShift);
}

}  // namespace npu::isa

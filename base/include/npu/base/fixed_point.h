#pragma once
// The fixed-point arithmetic of the quantized operations: gemmlowp's / TFLite's integer rounding
// behaviour and TFLite's QuantizeMultiplier, written once for the firmware core (which plans with
// it), the simulator's vector unit (which implements it: hwsim/isa/fixed_point.h builds the ISA's
// SOFTMAX arithmetic on it) and the CPU reference (the oracle). They must agree bit for bit.
//
// Freestanding, header only: no OS header, no exception, no heap (the firmware core includes it).
// No undefined behaviour: where TFLite's int32 left shift could overflow, the result wraps (two's
// complement), which is what TFLite's code does on every compiler we target.

#include <cmath>
#include <cstdint>

namespace npu::base {

constexpr int32_t wrapToInt32(int64_t v) {
    return static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint64_t>(v)));
}

// x * 2^shift modulo 2^32 (shift >= 0; 0 from a shift of 32 on).
constexpr int32_t wrappingShiftLeft(int32_t x, int32_t shift) {
    if (shift >= 32) return 0;
    return static_cast<int32_t>(static_cast<uint32_t>(x) << shift);
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

// x * 2^exponent: a saturating left shift (exponent in 1..30) or a rounding right shift
// (gemmlowp's SaturatingRoundingMultiplyByPOT).
constexpr int32_t saturatingRoundingMultiplyByPot(int32_t x, int32_t exponent) {
    if (exponent == 0) return x;
    if (exponent < 0) return roundingDivideByPot(x, -exponent);
    const int32_t threshold = static_cast<int32_t>((int64_t{1} << (31 - exponent)) - 1);
    if (x > threshold) return INT32_MAX;
    if (x < -threshold) return INT32_MIN;
    return wrappingShiftLeft(x, exponent);
}

// real = multiplier * 2^(shift - 31); shift > 0 is a left shift.
struct QuantizedMultiplier {
    int32_t multiplier = 0;  // Q31; |multiplier| in [2^30, 2^31), or 0
    int32_t shift = 0;
};

// TFLite's QuantizeMultiplier, term for term: frexp, round(fraction * 2^31), a fraction that
// rounds to 2^31 renormalised to 2^30 and one more exponent. Zero, and a real so small that the
// shift would be below -31, give {0, 0} as in TFLite; so does a real that is not finite (TFLite
// leaves that undefined). A negative real gives a negative multiplier. The shift is not bounded
// above: callers that need a range (the vector unit's) check it.
// zeroPoint + round(f / scale), rounding half away from zero (the `quantize` of TFLite's
// CalculateActivationRangeQuantized), saturated to int32: a tiny scale makes f / scale far
// beyond int32 (converting that is undefined behaviour), and callers clamp to their type's range
// anyway. NaN (a zero scale) gives zeroPoint.
inline int32_t quantizeToInt32Saturated(float f, float scale, int32_t zeroPoint) {
    const float r = std::round(f / scale);
    if (r != r) return zeroPoint;
    const double v = static_cast<double>(zeroPoint) + static_cast<double>(r);
    if (v <= static_cast<double>(INT32_MIN)) return INT32_MIN;
    if (v >= static_cast<double>(INT32_MAX)) return INT32_MAX;
    return static_cast<int32_t>(v);
}

inline QuantizedMultiplier quantizeMultiplier(double real) {
    QuantizedMultiplier q;
    if (real == 0.0 || !std::isfinite(real)) return q;
    int exponent = 0;
    const double fraction = std::frexp(real, &exponent);
    int64_t fixed = static_cast<int64_t>(std::round(fraction * static_cast<double>(int64_t{1} << 31)));
    if (fixed == (int64_t{1} << 31)) {
        fixed /= 2;
        ++exponent;
    }
    if (exponent < -31) return q;
    q.multiplier = static_cast<int32_t>(fixed);
    q.shift = exponent;
    return q;
}

// TFLite's MultiplyByQuantizedMultiplier: round(x * real) for real = multiplier * 2^(shift - 31).
// A positive shift is applied to x first and wraps modulo 2^32 (TFLite's int32 shift, minus its
// undefined behaviour); a negative one is a rounding right shift (shift >= -31).
constexpr int32_t multiplyByQuantizedMultiplier(int32_t x, int32_t multiplier, int32_t shift) {
    const int32_t leftShift = shift > 0 ? shift : 0;
    const int32_t rightShift = shift > 0 ? 0 : -shift;
    return roundingDivideByPot(saturatingRoundingDoublingHighMul(wrappingShiftLeft(x, leftShift), multiplier),
                               rightShift);
}
constexpr int32_t multiplyByQuantizedMultiplier(int32_t x, QuantizedMultiplier q) {
    return multiplyByQuantizedMultiplier(x, q.multiplier, q.shift);
}

}  // namespace npu::base

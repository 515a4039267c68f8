#pragma once
// TFLite-style fixed-point requantization, as the NNAPI reference (CpuExecutor) uses it.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "npu/hal/types.h"

namespace npu::ref {

// real = quantized * 2^shift / 2^31 (shift > 0: left shift).
struct QuantizedMultiplier {
    int32_t multiplier = 0;
    int shift = 0;
};

inline QuantizedMultiplier quantizeMultiplier(double real) {
    QuantizedMultiplier q;
    if (real == 0.0) return q;
    const double fraction = std::frexp(real, &q.shift);
    int64_t fixed = static_cast<int64_t>(std::round(fraction * static_cast<double>(int64_t{1} << 31)));
    if (fixed == (int64_t{1} << 31)) {
        fixed /= 2;
        ++q.shift;
    }
    if (q.shift < -31) {
        q.shift = 0;
        fixed = 0;
    }
    q.multiplier = static_cast<int32_t>(fixed);
    return q;
}

inline int32_t saturatingRoundingDoublingHighMul(int32_t a, int32_t b) {
    const bool overflow = a == b && a == std::numeric_limits<int32_t>::min();
    const int64_t ab = static_cast<int64_t>(a) * static_cast<int64_t>(b);
    const int32_t nudge = ab >= 0 ? (1 << 30) : (1 - (1 << 30));
    const int32_t high = static_cast<int32_t>((ab + nudge) / (int64_t{1} << 31));
    return overflow ? std::numeric_limits<int32_t>::max() : high;
}

inline int32_t roundingDivideByPOT(int32_t x, int exponent) {
    const int32_t mask = static_cast<int32_t>((int64_t{1} << exponent) - 1);
    const int32_t remainder = x & mask;
    const int32_t threshold = (mask >> 1) + (x < 0 ? 1 : 0);
    return (x >> exponent) + (remainder > threshold ? 1 : 0);
}

inline int32_t multiplyByQuantizedMultiplier(int32_t x, QuantizedMultiplier q) {
    const int left = q.shift > 0 ? q.shift : 0;
    const int right = q.shift > 0 ? 0 : -q.shift;
    return roundingDivideByPOT(saturatingRoundingDoublingHighMul(x * (1 << left), q.multiplier), right);
}

struct QuantRange {
    int32_t min = 0, max = 255;
};

inline QuantRange quantTypeRange(hal::OperandType type) {
    switch (type) {
        case hal::OperandType::TENSOR_QUANT8_ASYMM_SIGNED:
            return {-128, 127};
        case hal::OperandType::TENSOR_QUANT16_SYMM:
            return {-32768, 32767};
        case hal::OperandType::TENSOR_QUANT16_ASYMM:
            return {0, 65535};
        default:
            return {0, 255};
    }
}

// Clamp range of a fused activation on a quantized output (CalculateActivationRangeQuantized).
inline QuantRange activationRange(int32_t activation, hal::OperandType type, float scale, int32_t zeroPoint) {
    QuantRange r = quantTypeRange(type);
    auto q = [&](float f) { return zeroPoint + static_cast<int32_t>(std::round(f / scale)); };
    switch (activation) {
        case 1:
            r.min = std::max(r.min, zeroPoint);
            break;
        case 2:
            r.min = std::max(r.min, q(-1.0f));
            r.max = std::min(r.max, q(1.0f));
            break;
        case 3:
            r.min = std::max(r.min, zeroPoint);
            r.max = std::min(r.max, q(6.0f));
            break;
        default:
            break;
    }
    return r;
}

inline float applyActivation(float x, int32_t activation) {
    switch (activation) {
        case 1:
            return std::max(x, 0.0f);
        case 2:
            return std::clamp(x, -1.0f, 1.0f);
        case 3:
            return std::clamp(x, 0.0f, 6.0f);
        default:
            return x;
    }
}

// Float -> quantized with round-half-away-from-zero and saturation (NNAPI's quantize).
inline int32_t quantizeValue(float x, float scale, int32_t zeroPoint, hal::OperandType type) {
    const QuantRange r = quantTypeRange(type);
    const float v = std::round(x / scale) + static_cast<float>(zeroPoint);
    if (!(v >= static_cast<float>(r.min))) return r.min;  // NaN saturates low
    if (v > static_cast<float>(r.max)) return r.max;
    return static_cast<int32_t>(v);
}

}  // namespace npu::ref

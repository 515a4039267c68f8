#pragma once
// TFLite-style fixed-point requantization, as the NNAPI reference (CpuExecutor) uses it.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "npu/base/fixed_point.h"
#include "npu/hal/types.h"

namespace npu::ref {

// The fixed-point arithmetic is base/'s (npu/base/fixed_point.h), which the firmware and the
// simulator share: TFLite's QuantizeMultiplier and MultiplyByQuantizedMultiplier, gemmlowp's
// rounding. Its old names here:
using base::multiplyByQuantizedMultiplier;
using base::QuantizedMultiplier;
using base::quantizeMultiplier;
using base::saturatingRoundingDoublingHighMul;
using base::saturatingRoundingMultiplyByPot;
inline int32_t roundingDivideByPOT(int32_t x, int exponent) {
    return base::roundingDivideByPot(x, exponent);
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
    auto q = [&](float f) { return base::quantizeToInt32Saturated(f, scale, zeroPoint); };
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

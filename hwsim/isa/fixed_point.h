#pragma once
// The fixed-point arithmetic the vector unit implements, part of the ISA's semantics (REQUANT,
// ADD, SOFTMAX). The primitives are base/'s (npu/base/fixed_point.h: gemmlowp's / TFLite's
// integer rounding, without undefined behaviour); the SOFTMAX arithmetic is built on them here.
// Headers only, constexpr, freestanding.

#include <cstdint>

#include "npu/base/fixed_point.h"

namespace npu::isa {

// REQUANT and ADD: base/'s fixed point (npu/base/fixed_point.h), the one implementation the
// firmware, the simulator and the reference share.
using base::multiplyByQuantizedMultiplier;
using base::roundingDivideByPot;
using base::saturatingRoundingDoublingHighMul;
using base::wrapToInt32;

// ---- SOFTMAX (ISA 1.2): gemmlowp's 32-bit fixed point as TFLite's quantized softmax uses it --------
// Qm.n below means n fractional bits. Additions wrap as gemmlowp's int32 Add does.

constexpr int32_t wrappingAdd(int32_t a, int32_t b) {
    return wrapToInt32(int64_t{a} + int64_t{b});
}

using base::saturatingRoundingMultiplyByPot;

// (a + b) / 2 rounded half away from zero.
constexpr int32_t roundingHalfSum(int32_t a, int32_t b) {
    const int64_t sum = int64_t{a} + int64_t{b};
    return static_cast<int32_t>((sum + (sum >= 0 ? 1 : -1)) / 2);
}

// exp(a) for a in [-1/4, 0), Q0.31 in and out (a Taylor expansion around -1/8).
constexpr int32_t expOnNegativeQuarterInterval(int32_t a) {
    constexpr int32_t kExpMinusOneEighth = 1895147668, kOneThird = 715827883;
    const int32_t x = wrappingAdd(a, int32_t{1} << 28);
    const int32_t x2 = saturatingRoundingDoublingHighMul(x, x);
    const int32_t x3 = saturatingRoundingDoublingHighMul(x2, x);
    const int32_t x4 = saturatingRoundingDoublingHighMul(x2, x2);
    const int32_t x4Over4 = saturatingRoundingMultiplyByPot(x4, -2);
    const int32_t poly = saturatingRoundingMultiplyByPot(
        wrappingAdd(saturatingRoundingDoublingHighMul(wrappingAdd(x4Over4, x3), kOneThird), x2), -1);
    return wrappingAdd(kExpMinusOneEighth,
                       saturatingRoundingDoublingHighMul(kExpMinusOneEighth, wrappingAdd(x, poly)));
}

// exp(a) for a <= 0 given in Q5.26, result in Q0.31 (gemmlowp's exp_on_negative_values with 5
// integer bits): the fraction modulo 1/4 by the polynomial, then one factor exp(-2^k) per bit.
constexpr int32_t expOnNegativeValuesQ5(int32_t a) {
    constexpr int32_t kFractionalBits = 26, kIntegerBits = 5;
    constexpr int32_t kOneQuarter = int32_t{1} << 24;
    const int32_t aModQuarterMinusQuarter = wrappingAdd(a & (kOneQuarter - 1), -kOneQuarter);
    int32_t result =
        expOnNegativeQuarterInterval(saturatingRoundingMultiplyByPot(aModQuarterMinusQuarter, kIntegerBits));
    const int32_t remainder = wrapToInt32(int64_t{aModQuarterMinusQuarter} - a);
    // exp(-1/4), exp(-1/2), exp(-1), exp(-2), exp(-4), exp(-8), exp(-16) in Q0.31.
    constexpr int32_t kFactors[7] = {1672461947, 1302514674, 790015084, 290630308, 39332535, 720401, 242};
    for (int32_t k = -2; k <= 4; ++k) {
        if ((remainder & (int32_t{1} << (kFractionalBits + k))) != 0)
            result = saturatingRoundingDoublingHighMul(result, kFactors[k + 2]);
    }
    return a == 0 ? INT32_MAX : result;  // gemmlowp's Q0.31 "one"
}

// 1 / (1 + x) for x in [0, 1), Q0.31 in and out (Newton-Raphson, three iterations, in Q2.29).
constexpr int32_t oneOverOnePlusX(int32_t a) {
    const int32_t halfDenominator = roundingHalfSum(a, INT32_MAX);
    constexpr int32_t k48Over17 = 1515870810, kMinus32Over17 = -1010580540, kOneQ2 = int32_t{1} << 29;
    int32_t x = wrappingAdd(k48Over17, saturatingRoundingDoublingHighMul(halfDenominator, kMinus32Over17));
    for (int i = 0; i < 3; ++i) {
        const int32_t oneMinus = wrappingAdd(kOneQ2, -saturatingRoundingDoublingHighMul(halfDenominator, x));
        x = wrappingAdd(x,
                        saturatingRoundingMultiplyByPot(saturatingRoundingDoublingHighMul(x, oneMinus), 2));
    }
    return saturatingRoundingMultiplyByPot(x, 1);
}

namespace softmax {
inline constexpr int32_t kScaledDiffIntegerBits = 5;
inline constexpr int32_t kAccumulationIntegerBits = 12;
}  // namespace softmax

// The rescaled difference to the row maximum, Q5.26 (TFLite's
// MultiplyByQuantizedMultiplierGreaterThanOne; the left shift wraps, which only happens to
// differences below diffMin, never used).
constexpr int32_t softmaxScaledDiff(int32_t diff, int32_t multiplier, int32_t leftShift) {
    return saturatingRoundingDoublingHighMul(wrapToInt32(int64_t{diff} * (int64_t{1} << leftShift)),
                                             multiplier);
}

// The reciprocal of a row's Q12.19 sum of exponentials, as a Q0.31 scale and the extra right
// shift `bitsOverUnit` (sum > 0).
constexpr int32_t softmaxReciprocal(int32_t sumOfExps, int32_t* bitsOverUnit) {
    const uint32_t sum = static_cast<uint32_t>(sumOfExps);
    const int32_t headroomPlusOne = __builtin_clz(sum);
    *bitsOverUnit = softmax::kAccumulationIntegerBits - headroomPlusOne;
    return oneOverOnePlusX(static_cast<int32_t>((sum << headroomPlusOne) - (uint32_t{1} << 31)));
}

}  // namespace npu::isa

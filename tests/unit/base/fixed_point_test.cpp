// base/fixed_point.h: TFLite's QuantizeMultiplier and MultiplyByQuantizedMultiplier and
// gemmlowp's rounding, at their edges (zero, exactly one, tiny, huge, negative shifts, overflow).
#include "npu/base/fixed_point.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <limits>

using namespace npu::base;

namespace {
constexpr int32_t kHalfQ31 = int32_t{1} << 30;  // 0.5 in Q31
}

TEST_CASE("quantizeMultiplier: zero, one, powers of two and the 2^31 renormalisation") {
    CHECK(quantizeMultiplier(0.0).multiplier == 0);
    CHECK(quantizeMultiplier(0.0).shift == 0);

    const QuantizedMultiplier one = quantizeMultiplier(1.0);
    CHECK(one.multiplier == kHalfQ31);
    CHECK(one.shift == 1);
    const QuantizedMultiplier quarter = quantizeMultiplier(0.25);
    CHECK(quarter.multiplier == kHalfQ31);
    CHECK(quarter.shift == -1);

    // A fraction that rounds to 2^31 becomes 2^30 with one more exponent.
    const QuantizedMultiplier almostOne = quantizeMultiplier(1.0 - std::ldexp(1.0, -40));
    CHECK(almostOne.multiplier == kHalfQ31);
    CHECK(almostOne.shift == 1);

    const QuantizedMultiplier third = quantizeMultiplier(1.0 / 3.0);
    CHECK(third.multiplier == 1431655765);  // round(2/3 * 2^31)
    CHECK(third.shift == -1);
}

TEST_CASE("quantizeMultiplier: tiny, huge, negative and non-finite reals") {
    // 2^-32 is the smallest: shift -31. Below it TFLite gives {0, 0}.
    const QuantizedMultiplier smallest = quantizeMultiplier(std::ldexp(1.0, -32));
    CHECK(smallest.multiplier == kHalfQ31);
    CHECK(smallest.shift == -31);
    CHECK(quantizeMultiplier(std::ldexp(1.0, -33)).multiplier == 0);
    CHECK(quantizeMultiplier(std::ldexp(1.0, -33)).shift == 0);
    CHECK(quantizeMultiplier(1e-300).multiplier == 0);

    const QuantizedMultiplier huge = quantizeMultiplier(std::ldexp(1.0, 40));
    CHECK(huge.multiplier == kHalfQ31);
    CHECK(huge.shift == 41);

    const QuantizedMultiplier negative = quantizeMultiplier(-0.75);
    CHECK(negative.multiplier == -1610612736);  // -0.75 * 2^31
    CHECK(negative.shift == 0);

    CHECK(quantizeMultiplier(std::numeric_limits<double>::infinity()).multiplier == 0);
    CHECK(quantizeMultiplier(std::numeric_limits<double>::quiet_NaN()).multiplier == 0);
}

TEST_CASE("multiplyByQuantizedMultiplier: gemmlowp's rounding of the multiply and of the right shift") {
    // The doubling high multiply rounds a tie up (towards +infinity), as gemmlowp's does ...
    const QuantizedMultiplier half = quantizeMultiplier(0.5);
    CHECK(multiplyByQuantizedMultiplier(3, half) == 2);
    CHECK(multiplyByQuantizedMultiplier(-3, half) == -1);
    // ... the rounding right shift rounds a tie away from zero.
    CHECK(multiplyByQuantizedMultiplier(6, quantizeMultiplier(0.25)) == 2);
    CHECK(multiplyByQuantizedMultiplier(-6, quantizeMultiplier(0.25)) == -2);
    CHECK(multiplyByQuantizedMultiplier(100, quantizeMultiplier(0.25)) == 25);
    CHECK(multiplyByQuantizedMultiplier(7, quantizeMultiplier(std::ldexp(1.0, -20))) == 0);
    CHECK(multiplyByQuantizedMultiplier(1 << 20, quantizeMultiplier(std::ldexp(1.0, -20))) == 1);
    CHECK(multiplyByQuantizedMultiplier(12345, QuantizedMultiplier{}) == 0);
    // Exactly one: x unchanged over the whole int32 range (the saturating INT32_MIN case aside).
    const QuantizedMultiplier one = quantizeMultiplier(1.0);
    for (int32_t x : {0, 1, -1, 1000, -1000, INT32_MAX / 2, INT32_MIN / 2})
        CHECK(multiplyByQuantizedMultiplier(x, one) == x);
}

TEST_CASE("a left shift that overflows int32 wraps instead of being undefined") {
    const QuantizedMultiplier four = quantizeMultiplier(4.0);  // shift 3
    CHECK(four.shift == 3);
    CHECK(multiplyByQuantizedMultiplier(1 << 20, four) == (1 << 22));
    CHECK(multiplyByQuantizedMultiplier(1 << 30, four) == 0);           // 2^33 wraps to 0
    CHECK(multiplyByQuantizedMultiplier(3 << 28, four) == -(1 << 30));  // wraps to INT32_MIN, then halved
    const QuantizedMultiplier huge = quantizeMultiplier(std::ldexp(1.0, 40));
    CHECK(multiplyByQuantizedMultiplier(5, huge) == 0);  // shift 41: everything shifted out
    CHECK(wrappingShiftLeft(-1, 31) == INT32_MIN);
    CHECK(wrappingShiftLeft(1, 32) == 0);
}

TEST_CASE("saturatingRoundingDoublingHighMul, roundingDivideByPot, saturatingRoundingMultiplyByPot") {
    CHECK(saturatingRoundingDoublingHighMul(INT32_MIN, INT32_MIN) == INT32_MAX);
    CHECK(saturatingRoundingDoublingHighMul(kHalfQ31, kHalfQ31) == (1 << 29));
    CHECK(saturatingRoundingDoublingHighMul(-kHalfQ31, kHalfQ31) == -(1 << 29));
    CHECK(roundingDivideByPot(5, 1) == 3);
    CHECK(roundingDivideByPot(-5, 1) == -3);
    CHECK(roundingDivideByPot(4, 0) == 4);
    CHECK(roundingDivideByPot(INT32_MAX, 31) == 1);
    CHECK(saturatingRoundingMultiplyByPot(1 << 29, 2) == INT32_MAX);
    CHECK(saturatingRoundingMultiplyByPot(-(1 << 29), 3) == INT32_MIN);
    CHECK(saturatingRoundingMultiplyByPot(1 << 20, 3) == (1 << 23));
    CHECK(saturatingRoundingMultiplyByPot(7, -1) == 4);
    static_assert(multiplyByQuantizedMultiplier(8, kHalfQ31, 0) == 4, "usable in constant expressions");
}

TEST_CASE("quantizeBound: zeroPoint + round(real / scale), saturated where a tiny scale overflows int32") {
    CHECK(quantizeBound(1.0f, 0.5f, 3) == 5);
    CHECK(quantizeBound(-1.0f, 0.25f, 10) == 6);
    CHECK(quantizeBound(6.0f, 1.0f / 32, -128) == 64);
    CHECK(quantizeBound(1.0f, 4.58e-10f, 141) == INT32_MAX);       // 2.18e9 steps: beyond int32
    CHECK(quantizeBound(-1.0f, 4.58e-10f, 141) < -2'000'000'000);  // far below any 8-bit type
    CHECK(quantizeBound(1.0f, 1e-9f, 2000000000) == INT32_MAX);    // in range, but not with the zero point
}

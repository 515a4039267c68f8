// Quantization parameters: QuantizeMultiplier and the activation ranges against the TFLite
// formulas, and the device's fixed-point requantization against the independent reference.
#include "quant.h"

#include <catch2/catch.hpp>

#include "hwsim/isa/fixed_point.h"
#include "model_fixture.h"

using namespace fwtest;

TEST_CASE("quantizeMultiplier matches TFLite's QuantizeMultiplier") {
    std::mt19937 rng(3);
    std::uniform_real_distribution<double> exp(-20, 10);
    for (int i = 0; i < 5000; ++i) {
        const double real = std::pow(2.0, exp(rng));
        QuantizedMultiplier q;
        REQUIRE(quantizeMultiplier(real, &q));
        int32_t m;
        int s;
        refQuantizeMultiplier(real, &m, &s);
        CHECK(q.multiplier == m);
        CHECK(q.shift == s);
    }
    QuantizedMultiplier q;
    REQUIRE(quantizeMultiplier(0.0, &q));
    CHECK((q.multiplier == 0 && q.shift == 0));
    REQUIRE(quantizeMultiplier(1.0, &q));
    CHECK((q.multiplier == (1 << 30) && q.shift == 1));
    CHECK_FALSE(quantizeMultiplier(-1.0, &q));
    CHECK_FALSE(quantizeMultiplier(1e20, &q));   // shift > 30
    CHECK_FALSE(quantizeMultiplier(1e-20, &q));  // shift < -31
    // Rounds up to 2^31: renormalised.
    REQUIRE(quantizeMultiplier(0.99999999999, &q));
    CHECK((q.multiplier == (1 << 30) && q.shift == 1));
}

TEST_CASE("activation ranges for uint8 and int8") {
    int32_t lo, hi;
    int rl, rh;
    for (int act = 0; act < 4; ++act) {
        for (float scale : {0.01f, 0.05f, 0.1f, 0.5f, 1.0f}) {
            for (int zp : {0, 10, 128, 255}) {
                REQUIRE(activationRange8(act, scale, zp, false, &lo, &hi));
                refActRange(act, scale, zp, &rl, &rh);
                CHECK(lo == rl);
                CHECK(hi == rh);
            }
            for (int zp : {-128, -5, 0, 127}) {
                REQUIRE(activationRange8(act, scale, zp, true, &lo, &hi));
                refActRange(act, scale, zp, &rl, &rh, true);
                CHECK(lo == rl);
                CHECK(hi == rh);
            }
        }
    }
    // RELU with zero point 127 at scale 1: [127, 127].
    REQUIRE(activationRange8(1, 1.0f, 127, true, &lo, &hi));
    CHECK((lo == 127 && hi == 127));
    CHECK_FALSE(activationRange8(4, 1.0f, 0, false, &lo, &hi));
    CHECK_FALSE(activationRange8(4, 1.0f, 0, true, &lo, &hi));
}

TEST_CASE("activation ranges of a tiny output scale saturate instead of overflowing int32") {
    // fuzz_driver_model found 1 / 4.9e-11 = 2.05e10 converted to int (undefined behaviour; on
    // x86 INT_MIN, which made RELU1 and RELU6 clamp every output to 0). Now the bounds saturate.
    int32_t lo, hi;
    for (float scale : {4.9e-11f, 1e-30f}) {
        INFO(scale);
        REQUIRE(activationRange8(2, scale, 10, false, &lo, &hi));  // RELU1: [-1, 1] is everything
        CHECK((lo == 0 && hi == 255));
        REQUIRE(activationRange8(3, scale, 0, true, &lo, &hi));  // RELU6 on int8: [zp, 127]
        CHECK((lo == 0 && hi == 127));
    }
    CHECK(npu::base::quantizeBound(1.0f, 1e-30f, 5) == INT32_MAX);
    CHECK(npu::base::quantizeBound(-1.0f, 1e-30f, 5) < -2147483600);  // far below any type
    CHECK(npu::base::quantizeBound(0.0f, 0.0f, 7) == 7);              // 0 / 0
    CHECK(npu::base::quantizeBound(2.5f, 1.0f, 1) == 4);              // half away from zero
}

TEST_CASE("device MultiplyByQuantizedMultiplier is bit-exact with the reference") {
    std::mt19937 rng(4);
    for (int i = 0; i < 200000; ++i) {
        const int32_t x = int32_t(rng());
        const int32_t m = int32_t(rng() >> 1) | (1 << 30);
        const int s = int(rng() % 40) - 31;
        if (s > 0 && std::abs(int64_t(x)) > (int64_t(1) << (31 - s)))
            continue;  // TFLite overflows (UB) there
        INFO(x << " " << m << " " << s);
        REQUIRE(npu::isa::multiplyByQuantizedMultiplier(x, m, s) == refMbqm(x, m, s));
    }
}

TEST_CASE("activation ranges under a scale so small that the bounds overflow int32 are the whole type",
          "[firmware][quant]") {
    // RELU1 and RELU6 with 1 / scale > 2^31: the bounds lie far outside the type, so nothing is
    // clamped (the reference's answer); an int32 overflow used to make the range empty.
    int32_t lo = 0, hi = 0;
    for (int32_t act : {2, 3}) {
        REQUIRE(activationRange8(act, 4.58e-10f, 141, false, &lo, &hi));
        CHECK(lo == (act == 2 ? 0 : 141));
        CHECK(hi == 255);
        REQUIRE(activationRange8(act, 4.58e-10f, 13, true, &lo, &hi));
        CHECK(lo == (act == 2 ? -128 : 13));
        CHECK(hi == 127);
    }
}

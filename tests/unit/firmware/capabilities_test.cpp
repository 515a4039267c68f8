// The NPU's Capabilities performance figures are measured by running reference workloads on the
// NPU at firmware start-up (docs/firmware.md, "Capabilities"): deterministic, so every fresh
// firmware answers the same; they follow the hardware (a slower clock, slower figures).
#include <catch2/catch.hpp>
#include <cfloat>

#include "model_fixture.h"

using namespace fwtest;

namespace {

struct Measured {
    PerformanceFigure figures[16];
};

Measured measure(npu::sim::HwConfig hw = {}) {
    Harness h(hw);
    REQUIRE(h.runtime.init().ok());
    Measured m;
    for (uint32_t t = 0; t < 16; ++t) {
        const FwStatus st = h.runtime.performance(t, &m.figures[t]);
        INFO(st.message);
        REQUIRE(st.ok());
    }
    return m;
}

}  // namespace

TEST_CASE("capabilities are measured on the NPU at start-up, the same at every start") {
    const Measured first = measure(), second = measure();
    for (uint32_t t = 0; t < 16; ++t) {
        INFO("operand type " << t);
        CHECK(first.figures[t].execTime == second.figures[t].execTime);
        CHECK(first.figures[t].powerUsage == second.figures[t].powerUsage);
        if (Runtime::claimsOperandType(t)) {
            CHECK(first.figures[t].execTime > 0.0f);
            CHECK(first.figures[t].execTime < 1.0f);  // the NPU beats the reference CPU
            CHECK(first.figures[t].powerUsage > 0.0f);
            CHECK(first.figures[t].powerUsage < 1.0f);
        } else {
            CHECK(first.figures[t].execTime == FLT_MAX);
        }
    }
    const uint32_t kQuant8 = 5, kInt32Scalar = 1, kSigned = 14;
    CHECK(first.figures[kInt32Scalar].execTime == first.figures[kQuant8].execTime);
    // A slower NPU clock is a slower figure: the figures come from the run, not a table.
    npu::sim::HwConfig slow;
    slow.clockMhz = 250;
    const Measured slower = measure(slow);
    CHECK(slower.figures[kQuant8].execTime > first.figures[kQuant8].execTime);
    WARN("measured: TENSOR_QUANT8_ASYMM execTime "
         << first.figures[kQuant8].execTime << " powerUsage " << first.figures[kQuant8].powerUsage
         << ", TENSOR_QUANT8_ASYMM_SIGNED execTime " << first.figures[kSigned].execTime << "; at 250 MHz "
         << slower.figures[kQuant8].execTime);
}

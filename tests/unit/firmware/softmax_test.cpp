// SOFTMAX on the NPU (ISA 1.2 SOFTMAX command): the vector unit's fixed point against gemmlowp's
// own header, and whole models against TFLite's integer softmax written here over gemmlowp
// (independently of the firmware and of hwsim), any axis, uint8 and int8, tiles that do not
// divide the tensor, and the refusals.
#include <gemmlowp/fixedpoint/fixedpoint.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <string>

#include "hwsim/isa/fixed_point.h"
#include "model_fixture.h"
#include "npu/hal/types.h"
#include "op_plan.h"

using namespace fwtest;

namespace {

constexpr uint32_t kU8 = 5, kI8 = 14, kSoftmax = 25;

// The firmware's operation numbers are HAL's (firmware/core may not include the HAL headers).
static_assert(npu::fw::hal::kOpSoftmax == static_cast<uint32_t>(npu::hal::OperationType::SOFTMAX));
static_assert(npu::fw::hal::kOpGroupedConv2d ==
              static_cast<uint32_t>(npu::hal::OperationType::GROUPED_CONV_2D));
static_assert(npu::fw::hal::kOpTransposeConv2d ==
              static_cast<uint32_t>(npu::hal::OperationType::TRANSPOSE_CONV_2D));
static_assert(npu::fw::hal::kFloat32 == static_cast<uint32_t>(npu::hal::OperandType::FLOAT32));

struct Params {
    int32_t multiplier = 0;
    int leftShift = 0;
    int32_t diffMin = 0;
};

// TFLite's PreprocessSoftmaxScaling + CalculateInputRadius (kScaledDiffIntegerBits = 5).
Params tfliteParams(float beta, float scale) {
    const double real = std::min(double(beta) * double(scale) * double(1 << 26), double((1ll << 31) - 1));
    Params p;
    refQuantizeMultiplier(real, &p.multiplier, &p.leftShift);
    p.diffMin = -int32_t(std::floor(31.0 * double(1ll << 26) / std::ldexp(1.0, p.leftShift)));
    return p;
}

// TFLite's reference_ops::Softmax for uint8 / int8 output (scale 1/256), over gemmlowp.
void refSoftmaxRow(const int32_t* x, int32_t* y, size_t n, const Params& p, bool isSigned) {
    using Diff = gemmlowp::FixedPoint<int32_t, 5>;
    using Acc = gemmlowp::FixedPoint<int32_t, 12>;
    using F0 = gemmlowp::FixedPoint<int32_t, 0>;
    int32_t maxv = INT32_MIN;
    for (size_t i = 0; i < n; ++i) maxv = std::max(maxv, x[i]);
    auto scaled = [&](int32_t d) {
        return Diff::FromRaw(refSrdhm(int32_t(uint32_t(int64_t(d) << p.leftShift)), p.multiplier));
    };
    Acc sum = Acc::Zero();
    for (size_t i = 0; i < n; ++i)
        if (x[i] - maxv >= p.diffMin)
            sum = sum + gemmlowp::Rescale<12>(gemmlowp::exp_on_negative_values(scaled(x[i] - maxv)));
    const int headroom = __builtin_clz(uint32_t(sum.raw()));
    const int over = 12 - headroom;
    const F0 recip = gemmlowp::one_over_one_plus_x_for_x_in_0_1(
        F0::FromRaw(int32_t((uint32_t(sum.raw()) << headroom) - (1u << 31))));
    const int lo = isSigned ? -128 : 0;
    for (size_t i = 0; i < n; ++i) {
        y[i] = lo;
        if (x[i] - maxv < p.diffMin) continue;
        const F0 e = gemmlowp::exp_on_negative_values(scaled(x[i] - maxv));
        const int32_t v = gemmlowp::RoundingDivideByPOT((recip * e).raw(), over + 31 - 8) + lo;
        y[i] = std::min(lo + 255, std::max(lo, v));
    }
}

// Runs SOFTMAX over `axis` of `dims` on the NPU and compares with refSoftmaxRow.
void runSoftmax(std::vector<uint32_t> dims, int axis, float beta, float scale, bool isSigned, uint32_t seed,
                npu::sim::HwConfig hw = {}) {
    Harness h(hw);
    REQUIRE(h.runtime.init().ok());
    std::mt19937 rng(seed);
    const uint32_t type = isSigned ? kI8 : kU8;
    ModelBuilder mb(h);
    const int zp = int(rng() % 256) - (isSigned ? 128 : 0);
    const uint32_t x = mb.input(dims, {scale, zp}, type);
    const uint32_t y = mb.output(dims, {1.0f / 256, isSigned ? -128 : 0}, type);
    const uint32_t b = mb.constant(0, {}, 0, 0, &beta, 4);
    if (axis == -1 && rng() % 2 == 0) {
        mb.op(kSoftmax, {x, b}, {y});
    } else {
        mb.op(kSoftmax, {x, b, mb.i32(axis)}, {y});
    }
    const BlobInfo info = prepareClaimed(h, mb.build());
    size_t total = 1;
    for (uint32_t d : dims) total *= d;
    const auto in = randomBytes(rng, total);
    const int r = int(dims.size()), ax = axis < 0 ? axis + r : axis;
    size_t outer = 1, inner = 1;
    for (int k = 0; k < ax; ++k) outer *= dims[k];
    for (int k = ax + 1; k < r; ++k) inner *= dims[k];
    const size_t len = dims[ax];
    std::vector<uint8_t> expect(total);
    const Params p = tfliteParams(beta, scale);
    std::vector<int32_t> row(len), res(len);
    for (size_t o = 0; o < outer; ++o)
        for (size_t i = 0; i < inner; ++i) {
            for (size_t k = 0; k < len; ++k) {
                const uint8_t v = in[(o * len + k) * inner + i];
                row[k] = isSigned ? int8_t(v) : v;
            }
            refSoftmaxRow(row.data(), res.data(), len, p, isSigned);
            for (size_t k = 0; k < len; ++k) expect[(o * len + k) * inner + i] = uint8_t(res[k]);
        }
    Run run = execute(h, info, {in}, {total});
    INFO(run.status.message);
    REQUIRE(run.status.ok());
    CHECK(run.outputs[0] == expect);
}

}  // namespace

TEST_CASE("the vector unit's exp and reciprocal are gemmlowp's, bit for bit") {
    using Diff = gemmlowp::FixedPoint<int32_t, 5>;
    using F0 = gemmlowp::FixedPoint<int32_t, 0>;
    std::mt19937 rng(7);
    for (int i = 0; i < 200000; ++i) {
        // Every value of the first 2^16 below zero, then random ones down to -32.
        const int32_t a = i < 65536 ? -i : -int32_t(rng() % (uint32_t(31) << 26));
        INFO(a);
        REQUIRE(npu::isa::expOnNegativeValuesQ5(a) ==
                gemmlowp::exp_on_negative_values(Diff::FromRaw(a)).raw());
        const int32_t x = int32_t(rng() & 0x7FFFFFFF);
        REQUIRE(npu::isa::oneOverOnePlusX(x) ==
                gemmlowp::one_over_one_plus_x_for_x_in_0_1(F0::FromRaw(x)).raw());
    }
}

TEST_CASE("the firmware's SOFTMAX parameters are TFLite's") {
    for (float beta : {1e-6f, 1e-5f, 0.1f, 1.0f, 2.5f}) {
        for (float scale : {0.25f, 0.5f, 0.03125f, 1.7f, 1000.0f}) {
            npu::fw::SoftmaxParams got;
            REQUIRE(npu::fw::softmaxParams(beta, scale, &got));
            const Params want = tfliteParams(beta, scale);
            CHECK(got.multiplier == want.multiplier);
            CHECK(got.leftShift == want.leftShift);
            CHECK(got.diffMin == want.diffMin);
        }
    }
}

TEST_CASE("SOFTMAX bit-exact with TFLite's integer algorithm, every axis, uint8 and int8") {
    uint32_t seed = 1;
    for (bool isSigned : {false, true}) {
        runSoftmax({2, 5}, -1, 1.0f, 0.5f, isSigned, seed++);
        runSoftmax({1, 1001}, -1, 1.0f, 0.1f, isSigned, seed++);  // a classifier head
        runSoftmax({3, 4, 7}, 1, 1e-5f, 0.25f, isSigned, seed++);
        runSoftmax({5, 2, 2, 2}, 0, 0.7f, 0.05f, isSigned, seed++);
        runSoftmax({2, 3, 4, 9}, -1, 3.0f, 2.0f, isSigned, seed++);  // few terms above diffMin
        runSoftmax({6}, 0, 1.0f, 0.02f, isSigned, seed++);
        runSoftmax({3, 9}, -1, 100.0f, 0.5f, isSigned, seed++);  // the multiplier saturates: left shift 31
    }
}

TEST_CASE("SOFTMAX tiles that do not divide the tensor, larger than the scratchpad") {
    npu::sim::HwConfig hw;
    hw.scratchpadBytes = 4 << 10;  // 1 KiB tile buffers
    runSoftmax({37, 100}, -1, 1.0f, 0.1f, false, 11, hw);
    runSoftmax({13, 30, 7}, 1, 0.5f, 0.1f, true, 12, hw);
    runSoftmax({1, 1000}, -1, 1.0f, 0.1f, true, 13, hw);  // one row almost fills a tile
}

TEST_CASE("SOFTMAX refusals name the operation and the rule") {
    auto model = [](Harness& h, ModelBuilder& mb, std::vector<uint32_t> dims, float beta, float scale,
                    Quant out) {
        REQUIRE(h.runtime.init().ok());
        const uint32_t x = mb.input(dims, {scale, 0}), y = mb.output(dims, out);
        mb.op(kSoftmax, {x, mb.constant(0, {}, 0, 0, &beta, 4)}, {y});
    };
    SECTION("output quantization other than 1/256") {
        Harness h;
        ModelBuilder mb(h);
        model(h, mb, {1, 8}, 1.0f, 0.5f, {1.0f / 128, 0});
        expectRefused(h, mb, "SOFTMAX", "SOFTMAX outputs scale 1/256");
    }
    SECTION("beta * scale * 2^26 not above 1") {
        Harness h;
        ModelBuilder mb(h);
        model(h, mb, {1, 8}, 1e-9f, 0.01f, {1.0f / 256, 0});
        expectRefused(h, mb, "SOFTMAX", "must lie in (1, 2^31)");
    }
    SECTION("an axis longer than the Q12.19 sum allows") {
        Harness h;
        ModelBuilder mb(h);
        model(h, mb, {1, 5000}, 1.0f, 0.5f, {1.0f / 256, 0});
        expectRefused(h, mb, "SOFTMAX", "axis length 5000 over 4095");
    }
    SECTION("a slab larger than a scratchpad tile") {
        npu::sim::HwConfig hw;
        hw.scratchpadBytes = 4 << 10;
        Harness h(hw);
        ModelBuilder mb(h);
        model(h, mb, {2, 100, 40}, 1.0f, 0.5f, {1.0f / 256, 0});
        mb.opInputs[0].push_back(mb.i32(1));
        expectRefused(h, mb, "SOFTMAX", "does not fit");
    }
}

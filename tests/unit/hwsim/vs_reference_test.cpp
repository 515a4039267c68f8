// Differential test against reference/ itself (the NNAPI CPU reference, not a formula written in
// the test): random quantized DEPTHWISE_CONV_2D, MAX_POOL_2D, AVERAGE_POOL_2D and MUL models run on
// ReferenceDevice, and the same arithmetic as DWCONV + REQUANT, POOL or VEC_OP commands on the simulated
// NPU. Every output byte must match. (CONV_2D, FULLY_CONNECTED and ADD go through the firmware
// and are compared with the reference in tests/unit/shim/npu_vs_reference_test.cpp.)
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "npu/base/fixed_point.h"
#include "npu/framework/cts_loader.h"
#include "npu/hal/model_builder.h"
#include "npu/ref/reference_device.h"
#include "sim_fixture.h"

using namespace simtest;
using hal::OperandLifeTime;
using hal::OperandType;

namespace {

// hal's builder, plus the test case's inputs and output buffers.
struct Builder {
    framework::TestCase tc;
    hal::SubgraphBuilder b{tc.model, tc.model.main};

    uint32_t constant(OperandType t, std::vector<uint32_t> dims, const void* data, size_t size,
                      float scale = 0, int32_t zp = 0) {
        return b.constantBytes(t, std::move(dims), {static_cast<const std::byte*>(data), size}, scale, zp);
    }
    uint32_t i32(int32_t v) { return b.scalar(v); }
    uint32_t input(OperandType t, std::vector<uint32_t> dims, float scale, int32_t zp,
                   std::vector<uint8_t> bytes) {
        const uint32_t i = b.input(t, std::move(dims), scale, zp);
        tc.inputs.push_back(std::move(bytes));
        return i;
    }
    uint32_t output(OperandType t, std::vector<uint32_t> dims, float scale, int32_t zp) {
        size_t n = 1;
        for (uint32_t d : dims) n *= d;
        const uint32_t i = b.output(t, dims, scale, zp);
        tc.expectedOutputs.emplace_back(n);
        tc.expectedOutputDims.push_back(dims);
        tc.outputIgnored.push_back(false);
        return i;
    }
};

std::vector<uint8_t> runReference(const framework::TestCase& tc) {
    ref::ReferenceDevice device;
    auto prepared = device.prepareModel(tc.model);
    REQUIRE(prepared.has_value());
    auto request = framework::makeRequest(tc);
    REQUIRE(request.has_value());
    auto done = (*prepared)->executeSynchronously(request->request, hal::MeasureTiming::NO, std::nullopt,
                                                  std::nullopt);
    INFO((done ? std::string() : done.error().message));
    REQUIRE(done.has_value());
    return framework::readOutputs(*request)[0];
}

// The one QuantizeMultiplier (base/), as the reference uses it.
void quantizeMultiplier(double real, int32_t* mult, int32_t* shift) {
    const npu::base::QuantizedMultiplier q = npu::base::quantizeMultiplier(real);
    *mult = q.multiplier;
    *shift = q.shift;
}

struct Shape {
    uint32_t h, w, c, kh, kw, sy, sx, pt, pb, pl, pr, oh, ow;
};

Shape randomShape(std::mt19937& rng) {
    auto u = [&rng](int lo, int hi) { return uint32_t(std::uniform_int_distribution<int>(lo, hi)(rng)); };
    Shape s{};
    s.h = u(1, 10);
    s.w = u(1, 10);
    s.c = u(1, 40);
    s.kh = u(1, std::min<int>(4, int(s.h)));
    s.kw = u(1, std::min<int>(4, int(s.w)));
    s.sy = u(1, 3);
    s.sx = u(1, 3);
    // Pads below the kernel size: every window keeps at least one real tap.
    s.pt = u(0, int(s.kh) - 1);
    s.pb = u(0, int(s.kh) - 1);
    s.pl = u(0, int(s.kw) - 1);
    s.pr = u(0, int(s.kw) - 1);
    s.oh = (s.h + s.pt + s.pb - s.kh) / s.sy + 1;
    s.ow = (s.w + s.pl + s.pr - s.kw) / s.sx + 1;
    return s;
}

void clampRange(bool isSigned, int activation, int32_t zp, int32_t* lo, int32_t* hi) {
    *lo = isSigned ? -128 : 0;
    *hi = isSigned ? 127 : 255;
    if (activation == 1) *lo = std::max(*lo, zp);  // RELU: the real 0
}

}  // namespace

TEST_CASE("DWCONV + REQUANT give reference/'s DEPTHWISE_CONV_2D bytes on random shapes") {
    std::mt19937 rng(5);
    for (int iter = 0; iter < 60; ++iter) {
        const Shape s = randomShape(rng);
        const bool isSigned = rng() % 2;
        const OperandType t =
            isSigned ? OperandType::TENSOR_QUANT8_ASYMM_SIGNED : OperandType::TENSOR_QUANT8_ASYMM;
        auto zp = [&] { return isSigned ? int32_t(rng() % 256) - 128 : int32_t(rng() % 256); };
        const float inScale = 0.01f + float(rng() % 100) / 1000, wScale = 0.002f + float(rng() % 50) / 1000;
        const float outScale = inScale * wScale * float(5 + rng() % 200);
        const int32_t inZp = zp(), wZp = zp(), outZp = zp();
        const int activation = int(rng() % 2);
        std::vector<uint8_t> in(s.h * s.w * s.c), w(s.kh * s.kw * s.c);
        for (auto& b : in) b = uint8_t(rng());
        for (auto& b : w) b = uint8_t(rng());
        std::vector<int32_t> bias(s.c);
        for (auto& b : bias) b = int32_t(rng() % 6001) - 3000;

        Builder m;
        const uint32_t x = m.input(t, {1, s.h, s.w, s.c}, inScale, inZp, in);
        const uint32_t f = m.constant(t, {1, s.kh, s.kw, s.c}, w.data(), w.size(), wScale, wZp);
        const uint32_t b =
            m.constant(OperandType::TENSOR_INT32, {s.c}, bias.data(), bias.size() * 4, inScale * wScale, 0);
        const uint32_t y = m.output(t, {1, s.oh, s.ow, s.c}, outScale, outZp);
        m.tc.model.main.operations.push_back(
            {hal::OperationType::DEPTHWISE_CONV_2D,
             {x, f, b, m.i32(int(s.pl)), m.i32(int(s.pr)), m.i32(int(s.pt)), m.i32(int(s.pb)),
              m.i32(int(s.sx)), m.i32(int(s.sy)), m.i32(1), m.i32(activation)},
             {y}});
        const std::vector<uint8_t> expected = runReference(m.tc);

        Sim sim;
        uint8_t* sp = sim.dev.scratchpad();
        const uint32_t wAddr = 4096, biasAddr = 8192, outAddr = 16384;
        std::memcpy(sp, in.data(), in.size());
        std::memcpy(sp + wAddr, w.data(), w.size());
        std::memcpy(sp + biasAddr, bias.data(), bias.size() * 4);
        isa::ConvDesc d;
        d.ifmH = s.h;
        d.ifmW = s.w;
        d.ifmC = s.c;
        d.ifmRowStride = s.w * s.c;
        d.wAddr = wAddr;
        d.kernelH = s.kh;
        d.kernelW = s.kw;
        d.strideY = s.sy;
        d.strideX = s.sx;
        d.padTop = s.pt;
        d.padLeft = s.pl;
        d.ofmH = s.oh;
        d.ofmW = s.ow;
        d.cout = s.c;
        d.zpIn = inZp;
        d.zpW = wZp;
        const uint32_t macFlags = isSigned ? (isa::kMacFlagSignedA | isa::kMacFlagSignedB) : 0;
        isa::VecParams p;
        quantizeMultiplier(double(inScale) * wScale / outScale, &p.outMult, &p.outShift);
        p.outOffset = outZp;
        clampRange(isSigned, activation, outZp, &p.clampMin, &p.clampMax);
        isa::RequantDesc r{0, s.c, s.oh * s.ow, s.c, biasAddr, outAddr, s.c};
        const uint32_t rqFlags = isa::vec::kFlagHasBias | (isSigned ? isa::vec::kFlagSignedOut : 0);
        INFO("iter " << iter << " " << s.h << "x" << s.w << "x" << s.c << " k " << s.kh << "x" << s.kw);
        REQUIRE(sim.run({isa::makeDwConv(d, macFlags), isa::makeVecParams(p),
                         isa::makeRequant(r, rqFlags)}) == isa::kIrqDone);
        REQUIRE(std::equal(expected.begin(), expected.end(), sp + outAddr));
    }
}

TEST_CASE("POOL gives reference/'s MAX_POOL_2D and AVERAGE_POOL_2D bytes on random shapes") {
    std::mt19937 rng(6);
    for (int iter = 0; iter < 80; ++iter) {
        const Shape s = randomShape(rng);
        const bool isSigned = rng() % 2, average = rng() % 2;
        const OperandType t =
            isSigned ? OperandType::TENSOR_QUANT8_ASYMM_SIGNED : OperandType::TENSOR_QUANT8_ASYMM;
        const int32_t zp = isSigned ? int32_t(rng() % 256) - 128 : int32_t(rng() % 256);
        const int activation = int(rng() % 2);
        std::vector<uint8_t> in(s.h * s.w * s.c);
        for (auto& b : in) b = uint8_t(rng());

        Builder m;
        const uint32_t x = m.input(t, {1, s.h, s.w, s.c}, 0.05f, zp, in);
        const uint32_t y = m.output(t, {1, s.oh, s.ow, s.c}, 0.05f, zp);
        m.tc.model.main.operations.push_back(
            {average ? hal::OperationType::AVERAGE_POOL_2D : hal::OperationType::MAX_POOL_2D,
             {x, m.i32(int(s.pl)), m.i32(int(s.pr)), m.i32(int(s.pt)), m.i32(int(s.pb)), m.i32(int(s.sx)),
              m.i32(int(s.sy)), m.i32(int(s.kw)), m.i32(int(s.kh)), m.i32(activation)},
             {y}});
        const std::vector<uint8_t> expected = runReference(m.tc);

        Sim sim;
        uint8_t* sp = sim.dev.scratchpad();
        const uint32_t outAddr = 65536;
        std::memcpy(sp, in.data(), in.size());
        isa::PoolDesc d;
        d.mode = average ? isa::pool::kModeAverage : isa::pool::kModeMax;
        d.ifmH = s.h;
        d.ifmW = s.w;
        d.ifmC = s.c;
        d.ifmRowStride = s.w * s.c;
        d.kernelH = s.kh;
        d.kernelW = s.kw;
        d.strideY = s.sy;
        d.strideX = s.sx;
        d.padTop = s.pt;
        d.padLeft = s.pl;
        d.ofmH = s.oh;
        d.ofmW = s.ow;
        d.outAddr = outAddr;
        isa::VecParams p;
        clampRange(isSigned, activation, zp, &p.clampMin, &p.clampMax);
        INFO("iter " << iter << (average ? " avg " : " max ") << s.h << "x" << s.w << "x" << s.c);
        REQUIRE(sim.run({isa::makeVecParams(p), isa::makePool(d, isSigned ? isa::pool::kFlagSigned : 0)}) ==
                isa::kIrqDone);
        REQUIRE(std::equal(expected.begin(), expected.end(), sp + outAddr));
    }
}

TEST_CASE("VEC_OP MUL gives reference/'s MUL bytes, with and without broadcast") {
    std::mt19937 rng(7);
    for (int iter = 0; iter < 60; ++iter) {
        const uint32_t h = 1 + rng() % 6, w = 1 + rng() % 6, c = 1 + rng() % 40;
        const bool isSigned = rng() % 2, broadcast = rng() % 2;
        const OperandType t =
            isSigned ? OperandType::TENSOR_QUANT8_ASYMM_SIGNED : OperandType::TENSOR_QUANT8_ASYMM;
        auto zp = [&] { return isSigned ? int32_t(rng() % 256) - 128 : int32_t(rng() % 256); };
        const int32_t zpA = zp(), zpB = zp(), zpOut = zp();
        const float sA = 0.01f + float(rng() % 100) / 500, sB = 0.01f + float(rng() % 100) / 500;
        const float sOut = sA * sB * float(20 + rng() % 3000);
        const int activation = int(rng() % 2);
        std::vector<uint8_t> a(h * w * c), b(broadcast ? c : h * w * c);
        for (auto& v : a) v = uint8_t(rng());
        for (auto& v : b) v = uint8_t(rng());

        Builder m;
        const uint32_t x = m.input(t, {1, h, w, c}, sA, zpA, a);
        const uint32_t z = broadcast ? m.input(t, {c}, sB, zpB, b) : m.input(t, {1, h, w, c}, sB, zpB, b);
        const uint32_t y = m.output(t, {1, h, w, c}, sOut, zpOut);
        m.tc.model.main.operations.push_back({hal::OperationType::MUL, {x, z, m.i32(activation)}, {y}});
        const std::vector<uint8_t> expected = runReference(m.tc);

        Sim sim;
        uint8_t* sp = sim.dev.scratchpad();
        const uint32_t bAddr = 8192, outAddr = 16384;
        std::memcpy(sp, a.data(), a.size());
        std::memcpy(sp + bAddr, b.data(), b.size());
        isa::VecParams p;
        quantizeMultiplier(double(sA) * sB / sOut, &p.outMult, &p.outShift);
        p.in1Offset = -zpA;
        p.in2Offset = -zpB;
        p.outOffset = zpOut;
        clampRange(isSigned, activation, zpOut, &p.clampMin, &p.clampMax);
        isa::VecOpDesc d;
        d.function = isa::VecFunction::kMul;
        d.rows = h * w;
        d.cols = c;
        d.aAddr = 0;
        d.aRowStride = c;
        d.bAddr = bAddr;
        d.bRowStride = broadcast ? 0 : c;
        d.outAddr = outAddr;
        d.outRowStride = c;
        const uint32_t flags = isSigned ? (isa::vec::kFlagSignedIn | isa::vec::kFlagSignedOut) : 0;
        INFO("iter " << iter << " " << h << "x" << w << "x" << c << (broadcast ? " broadcast" : ""));
        REQUIRE(sim.run({isa::makeVecParams(p), isa::makeVecOp(d, flags)}) == isa::kIrqDone);
        REQUIRE(std::equal(expected.begin(), expected.end(), sp + outAddr));
    }
}

// Functional results of every compute opcode: DMA (2-D, 3-D, fill), GEMM, CONV, REQUANT, ADD.
#include <catch2/catch.hpp>
#include <random>

#include "hwsim/isa/fixed_point.h"
#include "sim_fixture.h"

using namespace simtest;

TEST_CASE("DMA 2-D and 3-D strided copies and fill") {
    Sim s;
    for (int i = 0; i < 256; ++i) s.dram[i] = uint8_t(i);
    // Rows 0, 16, 32 (4 bytes each) -> SRAM packed, then back to DRAM 0x1000 with stride 8.
    REQUIRE(s.run({s.load(0, 0, 4, 3, 16, 4), s.store(0x1000, 0, 4, 3, 8, 4)}) == isa::kIrqDone);
    CHECK(s.dev.scratchpad()[4] == 16);
    CHECK(s.dram[0x1000 + 8] == 16);
    CHECK(s.dram[0x1000 + 16 + 3] == 35);
    // 3-D transpose of a 2x3 matrix with 1-byte inner size.
    isa::DmaBox b;
    b.dramOffset = 0;
    b.sramAddr = 100;
    b.innerBytes = 1;
    b.rows = 3;  // columns of the source
    b.dramRowStride = 1;
    b.sramRowStride = 2;
    b.planes = 2;  // rows of the source
    b.dramPlaneStride = 3;
    b.sramPlaneStride = 1;
    REQUIRE(s.run({isa::makeDma(isa::Opcode::kDmaLoad, b)}) == isa::kIrqDone);
    const uint8_t* sp = s.dev.scratchpad() + 100;
    CHECK(std::vector<uint8_t>(sp, sp + 6) == std::vector<uint8_t>{0, 3, 1, 4, 2, 5});
    // Fill.
    isa::DmaBox f;
    f.sramAddr = 200;
    f.innerBytes = 5;
    REQUIRE(s.run({isa::makeDma(isa::Opcode::kDmaLoad, f, isa::dma::kFlagFill, 0xAB)}) == isa::kIrqDone);
    CHECK(s.dev.scratchpad()[204] == 0xAB);
    // Region base relocates DRAM addresses.
    s.dev.writeReg(isa::regRegionBaseLo(2), 0x100);
    isa::DmaBox r;
    r.region = 2;
    r.dramOffset = 5;
    r.sramAddr = 300;
    r.innerBytes = 1;
    s.dram[0x105] = 77;
    REQUIRE(s.run({isa::makeDma(isa::Opcode::kDmaLoad, r)}) == isa::kIrqDone);
    CHECK(s.dev.scratchpad()[300] == 77);
}

TEST_CASE("GEMM with zero points, accumulate, signed operands") {
    Sim s;
    std::mt19937 rng(1);
    const uint32_t m = 5, k = 7, n = 3;
    uint8_t* sp = s.dev.scratchpad();
    for (uint32_t i = 0; i < m * k; ++i) sp[i] = uint8_t(rng());
    for (uint32_t i = 0; i < k * n; ++i) sp[1000 + i] = uint8_t(rng());
    isa::GemmDesc g;
    g.aAddr = 0;
    g.aRowStride = k;
    g.bAddr = 1000;
    g.bRowStride = n;
    g.m = m;
    g.k = k;
    g.n = n;
    g.accAddr = 10;
    g.accRowStride = n;
    g.zpA = 3;
    g.zpB = 130;
    REQUIRE(s.run({isa::makeGemm(g)}) == isa::kIrqDone);
    for (uint32_t i = 0; i < m; ++i)
        for (uint32_t j = 0; j < n; ++j) {
            int32_t e = 0;
            for (uint32_t kk = 0; kk < k; ++kk) e += (sp[i * k + kk] - 3) * (sp[1000 + kk * n + j] - 130);
            CHECK(s.dev.accumulator()[10 + i * n + j] == e);
        }
    const int32_t before = s.dev.accumulator()[10];
    REQUIRE(s.run({isa::makeGemm(g, isa::kMacFlagAccumulate)}) == isa::kIrqDone);
    CHECK(s.dev.accumulator()[10] == 2 * before);
    CHECK(s.pmu(isa::kRegPmuMacsLo) == 2 * m * k * n);
    g.zpA = g.zpB = 0;
    REQUIRE(s.run({isa::makeGemm(g, isa::kMacFlagSignedA | isa::kMacFlagSignedB)}) == isa::kIrqDone);
    int32_t e = 0;
    for (uint32_t kk = 0; kk < k; ++kk) e += int8_t(sp[kk]) * int8_t(sp[1000 + kk * n]);
    CHECK(s.dev.accumulator()[10] == e);
}

TEST_CASE("CONV with stride, dilation and tile padding") {
    Sim s;
    std::mt19937 rng(2);
    const uint32_t h = 6, w = 5, c = 3, co = 4, kh = 3, kw = 2;
    uint8_t* sp = s.dev.scratchpad();
    for (uint32_t i = 0; i < h * w * c; ++i) sp[i] = uint8_t(rng());
    for (uint32_t i = 0; i < kh * kw * c * co; ++i) sp[4096 + i] = uint8_t(rng());
    isa::ConvDesc d;
    d.ifmAddr = 0;
    d.ifmH = h;
    d.ifmW = w;
    d.ifmC = c;
    d.ifmRowStride = w * c;
    d.wAddr = 4096;
    d.kernelH = kh;
    d.kernelW = kw;
    d.strideY = 2;
    d.strideX = 1;
    d.dilY = 1;
    d.dilX = 2;
    d.padTop = 1;
    d.padLeft = 1;
    d.ofmH = 3;
    d.ofmW = 4;
    d.cout = co;
    d.accAddr = 0;
    d.zpIn = 7;
    d.zpW = 9;
    REQUIRE(s.run({isa::makeConv(d)}) == isa::kIrqDone);
    for (uint32_t oy = 0; oy < d.ofmH; ++oy)
        for (uint32_t ox = 0; ox < d.ofmW; ++ox)
            for (uint32_t o = 0; o < co; ++o) {
                int32_t e = 0;
                for (uint32_t ky = 0; ky < kh; ++ky)
                    for (uint32_t kx = 0; kx < kw; ++kx) {
                        int y = int(oy * 2 + ky) - 1, x = int(ox + kx * 2) - 1;
                        if (y < 0 || x < 0 || y >= int(h) || x >= int(w)) continue;
                        for (uint32_t ci = 0; ci < c; ++ci)
                            e += (sp[(y * w + x) * c + ci] - 7) *
                                 (sp[4096 + ((ky * kw + kx) * c + ci) * co + o] - 9);
                    }
                CHECK(s.dev.accumulator()[(oy * d.ofmW + ox) * co + o] == e);
            }
}

TEST_CASE("REQUANT: bias, TFLite rounding, offset, clamp") {
    Sim s;
    int32_t* acc = s.dev.accumulator();
    const int32_t vals[] = {0, 1000, -1000, 123456, -99999, 2147483000, -2147483000, 77};
    for (int i = 0; i < 8; ++i) acc[i] = vals[i];
    uint8_t* sp = s.dev.scratchpad();
    const int32_t bias[2] = {5, -300};
    std::memcpy(sp + 500, bias, 8);
    isa::VecParams p;
    p.outMult = 1518500250;  // ~0.7071 in Q31
    p.outShift = -6;
    p.outOffset = 100;
    p.clampMin = 10;
    p.clampMax = 250;
    isa::RequantDesc r;
    r.accAddr = 0;
    r.accRowStride = 2;
    r.rows = 4;
    r.cols = 2;
    r.biasAddr = 500;
    r.outAddr = 0;
    r.outRowStride = 2;
    REQUIRE(s.run({isa::makeVecParams(p), isa::makeRequant(r, isa::vec::kFlagHasBias)}) == isa::kIrqDone);
    for (int i = 0; i < 8; ++i) {
        const int32_t x = int32_t(uint32_t(vals[i]) + uint32_t(bias[i % 2]));
        int v = isa::multiplyByQuantizedMultiplier(x, p.outMult, p.outShift) + 100;
        v = std::min(250, std::max(10, v));
        CHECK(sp[i] == v);
    }
}

TEST_CASE("ADD: TFLite two-input rescale with broadcast strides") {
    Sim s;
    uint8_t* sp = s.dev.scratchpad();
    for (int i = 0; i < 6; ++i) sp[i] = uint8_t(40 * i);
    sp[100] = 17;
    sp[101] = 200;
    isa::VecParams p;
    p.in1Mult = 1073741824;
    p.in1Shift = 0;  // 0.5
    p.in2Mult = 1431655765;
    p.in2Shift = -1;  // ~0.333
    p.outMult = 1717986918;
    p.outShift = -18;  // small
    p.in1Offset = -128;
    p.in2Offset = -10;
    p.outOffset = 128;
    p.leftShift = 20;
    p.clampMin = 0;
    p.clampMax = 255;
    isa::AddDesc d;
    d.rows = 2;
    d.cols = 3;
    d.aAddr = 0;
    d.aRowStride = 3;
    d.aColStride = 1;
    d.bAddr = 100;
    d.bRowStride = 1;
    d.bColStride = 0;  // b broadcast along columns
    d.outAddr = 200;
    d.outRowStride = 3;
    REQUIRE(s.run({isa::makeVecParams(p), isa::makeAdd(d)}) == isa::kIrqDone);
    for (int r = 0; r < 2; ++r)
        for (int c = 0; c < 3; ++c) {
            int32_t x1 = (sp[r * 3 + c] - 128) * (1 << 20), x2 = (sp[100 + r] - 10) * (1 << 20);
            int32_t sum = isa::multiplyByQuantizedMultiplier(x1, p.in1Mult, p.in1Shift) +
                          isa::multiplyByQuantizedMultiplier(x2, p.in2Mult, p.in2Shift);
            int v = std::min(
                255, std::max(0, isa::multiplyByQuantizedMultiplier(sum, p.outMult, p.outShift) + 128));
            CHECK(sp[200 + r * 3 + c] == v);
        }
}

TEST_CASE("fixed-point primitives match gemmlowp on edge values") {
    CHECK(isa::saturatingRoundingDoublingHighMul(INT32_MIN, INT32_MIN) == INT32_MAX);
    CHECK(isa::saturatingRoundingDoublingHighMul(1 << 30, 1 << 30) == 1 << 29);
    CHECK(isa::roundingDivideByPot(5, 1) == 3);    // 2.5 -> 3
    CHECK(isa::roundingDivideByPot(-5, 1) == -3);  // -2.5 -> -3 (away from zero)
    CHECK(isa::roundingDivideByPot(-4, 1) == -2);
    CHECK(isa::roundingDivideByPot(7, 0) == 7);
    CHECK(isa::multiplyByQuantizedMultiplier(100, 1 << 30, 1) == 100);
}

// The MAC array and vector unit compute on packed / SIMD host kernels (hwsim/src/int8_kernels):
// every kernel this host can run gives the architectural result on random shapes, strides, zero
// points and requantization parameters, compared with plain loops of the ISA's definitions.
#include <algorithm>
#include <catch2/catch.hpp>
#include <random>
#include <vector>

#include "hwsim/isa/fixed_point.h"
#include "sim_fixture.h"

using namespace simtest;

namespace {

int32_t value(uint8_t b, bool isSigned) {
    return isSigned ? int32_t(int8_t(b)) : int32_t(b);
}

std::vector<std::string> hostKernels() {
    std::vector<std::string> names;
    for (const char* n : {"portable", "avx2", "avx512bw", "avx512vnni"}) {
        if (sim::selectHostKernel(n)) names.push_back(n);
    }
    return names;  // the last one selected stays: the host's best
}

// Wrapping sum, as the 32-bit accumulators.
int32_t wrapAdd(int32_t a, int64_t b) {
    return int32_t(uint32_t(a) + uint32_t(uint64_t(b)));
}

void randomGemms(std::mt19937& rng) {
    Sim s;
    uint8_t* sp = s.dev.scratchpad();
    for (int iter = 0; iter < 40; ++iter) {
        const uint32_t m = 1 + rng() % 70, k = 1 + rng() % 70, n = 1 + rng() % 70;
        isa::GemmDesc g;
        g.m = m;
        g.k = k;
        g.n = n;
        g.aAddr = rng() % 64;
        g.aRowStride = k + rng() % 5;
        g.bAddr = 40000 + rng() % 64;
        g.bRowStride = n + rng() % 5;
        g.accAddr = rng() % 64;
        g.accRowStride = n + rng() % 5;
        g.zpA = int32_t(rng() % 513) - 256;
        g.zpB = int32_t(rng() % 513) - 256;
        const uint32_t flags = rng() % 8;  // accumulate, signed A, signed B
        for (uint32_t i = 0; i < 40000; ++i) sp[i] = uint8_t(rng());
        for (uint32_t i = 40000; i < 80000; ++i) sp[i] = uint8_t(rng());
        std::vector<int32_t> before(s.dev.accumulator(), s.dev.accumulator() + 8192);
        for (auto& v : before) v = int32_t(rng());
        std::copy(before.begin(), before.end(), s.dev.accumulator());
        INFO("gemm m=" << m << " k=" << k << " n=" << n << " flags=" << flags);
        REQUIRE(s.run({isa::makeGemm(g, flags)}) == isa::kIrqDone);
        const bool acc = flags & isa::kMacFlagAccumulate;
        const bool sa = flags & isa::kMacFlagSignedA, sb = flags & isa::kMacFlagSignedB;
        for (uint32_t i = 0; i < m; ++i) {
            for (uint32_t j = 0; j < n; ++j) {
                int64_t e = 0;
                for (uint32_t kk = 0; kk < k; ++kk) {
                    e += int64_t(value(sp[g.aAddr + i * g.aRowStride + kk], sa) - g.zpA) *
                         (value(sp[g.bAddr + kk * g.bRowStride + j], sb) - g.zpB);
                }
                const uint32_t at = g.accAddr + i * g.accRowStride + j;
                REQUIRE(s.dev.accumulator()[at] == wrapAdd(acc ? before[at] : 0, e));
            }
        }
    }
}

// pointwise: 1x1 kernels at stride 1 without padding, output as wide as the input (CONV packs
// such rows straight from the input when they are contiguous).
void randomConvs(std::mt19937& rng, bool depthwise, bool pointwise = false) {
    Sim s;
    uint8_t* sp = s.dev.scratchpad();
    for (int iter = 0; iter < 30; ++iter) {
        isa::ConvDesc d;
        d.ifmH = 1 + rng() % 10;
        d.ifmW = 1 + rng() % 10;
        d.ifmC = 1 + rng() % 70;
        d.ifmRowStride = d.ifmW * d.ifmC + rng() % 4;
        d.kernelH = 1 + rng() % 3;
        d.kernelW = 1 + rng() % 3;
        d.strideY = 1 + rng() % 2;
        d.strideX = 1 + rng() % 2;
        d.dilY = 1 + rng() % 2;
        d.dilX = 1 + rng() % 2;
        d.padTop = rng() % 3;
        d.padLeft = rng() % 3;
        d.ofmH = 1 + rng() % 8;
        d.ofmW = 1 + rng() % 8;
        d.cout = depthwise ? d.ifmC : 1 + rng() % 40;
        if (pointwise) {
            d.kernelH = d.kernelW = d.strideY = d.strideX = 1;
            d.padTop = d.padLeft = 0;
            d.ofmW = d.ifmW;
            d.ofmH = 1 + rng() % d.ifmH;
            if (iter % 4 != 0) d.ifmRowStride = d.ifmW * d.ifmC;
        }
        d.ifmAddr = rng() % 32;
        d.wAddr = 100000 + rng() % 32;
        d.accAddr = rng() % 32;
        d.zpIn = int32_t(rng() % 513) - 256;
        d.zpW = int32_t(rng() % 513) - 256;
        const uint32_t flags = rng() % 8;
        for (uint32_t i = 0; i < 200000; ++i) sp[i] = uint8_t(rng());
        const uint32_t outputs = d.ofmH * d.ofmW * d.cout;
        std::vector<int32_t> before(outputs + d.accAddr);
        for (auto& v : before) v = int32_t(rng());
        std::copy(before.begin(), before.end(), s.dev.accumulator());
        INFO((depthwise ? "dwconv" : "conv") << " iter " << iter << " flags " << flags);
        REQUIRE(s.run({depthwise ? isa::makeDwConv(d, flags) : isa::makeConv(d, flags)}) == isa::kIrqDone);
        const bool acc = flags & isa::kMacFlagAccumulate;
        const bool si = flags & isa::kMacFlagSignedA, sw = flags & isa::kMacFlagSignedB;
        for (uint32_t oy = 0; oy < d.ofmH; ++oy) {
            for (uint32_t ox = 0; ox < d.ofmW; ++ox) {
                for (uint32_t o = 0; o < d.cout; ++o) {
                    int64_t e = 0;
                    for (uint32_t ky = 0; ky < d.kernelH; ++ky) {
                        for (uint32_t kx = 0; kx < d.kernelW; ++kx) {
                            const int y = int(oy * d.strideY + ky * d.dilY) - int(d.padTop);
                            const int x = int(ox * d.strideX + kx * d.dilX) - int(d.padLeft);
                            if (y < 0 || x < 0 || y >= int(d.ifmH) || x >= int(d.ifmW)) continue;
                            const uint8_t* px = sp + d.ifmAddr + y * d.ifmRowStride + x * d.ifmC;
                            const uint32_t tap = ky * d.kernelW + kx;
                            if (depthwise) {
                                e += int64_t(value(px[o], si) - d.zpIn) *
                                     (value(sp[d.wAddr + tap * d.ifmC + o], sw) - d.zpW);
                                continue;
                            }
                            for (uint32_t ci = 0; ci < d.ifmC; ++ci) {
                                e += int64_t(value(px[ci], si) - d.zpIn) *
                                     (value(sp[d.wAddr + (tap * d.ifmC + ci) * d.cout + o], sw) - d.zpW);
                            }
                        }
                    }
                    const uint32_t at = d.accAddr + (oy * d.ofmW + ox) * d.cout + o;
                    REQUIRE(s.dev.accumulator()[at] == wrapAdd(acc ? before[at] : 0, e));
                }
            }
        }
    }
}

// REQUANT's output byte for one accumulator and its little-endian bias bytes (or none).
uint8_t requantExpected(int32_t x, const uint8_t* b, const isa::VecParams& p) {
    if (b != nullptr) {
        x = int32_t(uint32_t(x) +
                    (b[0] | (uint32_t(b[1]) << 8) | (uint32_t(b[2]) << 16) | (uint32_t(b[3]) << 24)));
    }
    const int64_t v = int64_t(isa::multiplyByQuantizedMultiplier(x, p.outMult, p.outShift)) + p.outOffset;
    return uint8_t(std::clamp<int64_t>(v, p.clampMin, p.clampMax));
}

void randomRequants(std::mt19937& rng) {
    Sim s;
    uint8_t* sp = s.dev.scratchpad();
    int32_t* accMem = s.dev.accumulator();
    const int32_t edgeMults[] = {INT32_MIN, INT32_MAX, 0, -1, 1 << 30, -(1 << 30), 1518500250};
    const int32_t edgeValues[] = {INT32_MIN, INT32_MAX, 0, -1, 1, 1 << 30, -(1 << 30)};
    for (int iter = 0; iter < 60; ++iter) {
        isa::VecParams p;
        p.outMult = rng() % 3 == 0 ? edgeMults[rng() % 7] : int32_t(rng());
        p.outShift = int32_t(rng() % 62) - 31;
        p.outOffset = int32_t(rng() % 512) - 256;
        const bool signedOut = rng() % 2;
        const int32_t lo = signedOut ? -128 : 0, span = 256;
        p.clampMin = lo + int32_t(rng() % 100);
        p.clampMax = std::max(p.clampMin, lo + span - 1 - int32_t(rng() % 100));
        isa::RequantDesc r;
        r.rows = 1 + rng() % 5;
        r.cols = 1 + rng() % 80;
        r.accAddr = rng() % 16;
        r.accRowStride = r.cols + rng() % 3;
        r.biasAddr = 50000 + rng() % 16;
        r.outAddr = rng() % 16;
        r.outRowStride = r.cols + rng() % 3;
        const bool hasBias = rng() % 2;
        for (uint32_t i = 0; i < 1024; ++i)
            accMem[i] = rng() % 5 == 0 ? edgeValues[rng() % 7] : int32_t(rng());
        for (uint32_t i = 0; i < 400; ++i) sp[50000 + i] = uint8_t(rng());
        const uint32_t flags =
            (hasBias ? isa::vec::kFlagHasBias : 0) | (signedOut ? isa::vec::kFlagSignedOut : 0);
        INFO("requant mult " << p.outMult << " shift " << p.outShift << " cols " << r.cols);
        REQUIRE(s.run({isa::makeVecParams(p), isa::makeRequant(r, flags)}) == isa::kIrqDone);
        for (uint32_t row = 0; row < r.rows; ++row) {
            for (uint32_t c = 0; c < r.cols; ++c) {
                const int32_t x = accMem[r.accAddr + row * r.accRowStride + c];
                REQUIRE(sp[r.outAddr + row * r.outRowStride + c] ==
                        requantExpected(x, hasBias ? sp + r.biasAddr + 4 * c : nullptr, p));
            }
        }
    }
}

// REQUANT boxes narrower than 16 columns (a per-channel requantization is one column per
// command) are gathered into contiguous runs: many rows, few columns, strided.
void randomNarrowRequants(std::mt19937& rng) {
    Sim s;
    uint8_t* sp = s.dev.scratchpad();
    int32_t* accMem = s.dev.accumulator();
    for (int iter = 0; iter < 40; ++iter) {
        isa::VecParams p;
        p.outMult = iter % 7 == 0 ? INT32_MIN : int32_t(rng());
        p.outShift = int32_t(rng() % 62) - 31;
        p.outOffset = int32_t(rng() % 512) - 256;
        p.clampMin = int32_t(rng() % 100);
        p.clampMax = 255 - int32_t(rng() % 100);
        isa::RequantDesc r;
        r.rows = 2 + rng() % 700;
        r.cols = iter % 3 == 0 ? 1 : 1 + rng() % 15;  // one column: the per-channel case
        r.accAddr = rng() % 16;
        r.accRowStride = r.cols + rng() % 20;
        r.biasAddr = 60000 + rng() % 16;
        r.outAddr = rng() % 16;
        r.outRowStride = r.cols + rng() % 20;
        const bool hasBias = rng() % 2;
        for (uint32_t i = 0; i < r.accAddr + r.rows * r.accRowStride; ++i) accMem[i] = int32_t(rng());
        for (uint32_t i = 0; i < 64; ++i) sp[60000 + i] = uint8_t(rng());
        const std::vector<uint8_t> before(sp, sp + 30000);
        INFO("narrow requant rows " << r.rows << " cols " << r.cols << " mult " << p.outMult);
        REQUIRE(s.run({isa::makeVecParams(p), isa::makeRequant(r, hasBias ? isa::vec::kFlagHasBias : 0)}) ==
                isa::kIrqDone);
        for (uint32_t i = 0; i < 30000; ++i) {
            const uint32_t rel = i - r.outAddr, row = rel / r.outRowStride, c = rel % r.outRowStride;
            if (i < r.outAddr || row >= r.rows || c >= r.cols) {
                REQUIRE(sp[i] == before[i]);  // outside the box: untouched
                continue;
            }
            const int32_t x = accMem[r.accAddr + row * r.accRowStride + c];
            REQUIRE(sp[i] == requantExpected(x, hasBias ? sp + r.biasAddr + 4 * c : nullptr, p));
        }
    }
}

// Random VEC_PARAMS over the whole range the vector unit accepts, edge multipliers and offsets
// included (an offset of 2^16 added to a rescaled value near INT32_MAX leaves int32).
isa::VecParams edgeParams(std::mt19937& rng, bool signedOut) {
    const int32_t edgeMults[] = {INT32_MIN, INT32_MAX, 0, -1, 1 << 30, -(1 << 30), 1518500250};
    auto mult = [&] { return rng() % 3 == 0 ? edgeMults[rng() % 7] : int32_t(rng()); };
    auto shift = [&] { return int32_t(rng() % 62) - 31; };
    auto offset = [&] { return rng() % 4 == 0 ? (rng() % 2 ? 65536 : -65536) : int32_t(rng() % 512) - 256; };
    isa::VecParams p;
    p.in1Mult = mult();
    p.in2Mult = mult();
    p.outMult = mult();
    p.in1Shift = shift();
    p.in2Shift = shift();
    p.outShift = shift();
    p.in1Offset = offset();
    p.in2Offset = offset();
    p.outOffset = offset();
    p.leftShift = int32_t(rng() % 31);
    const int32_t lo = signedOut ? -128 : 0;
    p.clampMin = lo + int32_t(rng() % 100);
    p.clampMax = std::max(p.clampMin, lo + 255 - int32_t(rng() % 100));
    return p;
}

// The ISA's ADD and VEC_OP MUL on one element (hwsim/isa/commands.h), written out here.
int64_t addExpected(int32_t a, int32_t b, const isa::VecParams& p) {
    const int32_t x1 = isa::wrapToInt32(int64_t(a + p.in1Offset) << p.leftShift);
    const int32_t x2 = isa::wrapToInt32(int64_t(b + p.in2Offset) << p.leftShift);
    const int32_t sum =
        isa::wrapToInt32(int64_t(isa::multiplyByQuantizedMultiplier(x1, p.in1Mult, p.in1Shift)) +
                         isa::multiplyByQuantizedMultiplier(x2, p.in2Mult, p.in2Shift));
    return std::clamp<int64_t>(
        int64_t(isa::multiplyByQuantizedMultiplier(sum, p.outMult, p.outShift)) + p.outOffset, p.clampMin,
        p.clampMax);
}
int64_t mulExpected(int32_t a, int32_t b, const isa::VecParams& p) {
    const int32_t x = isa::wrapToInt32(int64_t(a + p.in1Offset) * (b + p.in2Offset));
    return std::clamp<int64_t>(
        int64_t(isa::multiplyByQuantizedMultiplier(x, p.outMult, p.outShift)) + p.outOffset, p.clampMin,
        p.clampMax);
}

// ADD and VEC_OP MUL over random shapes: contiguous, broadcast (column stride 0) and strided
// (column stride 2) inputs, row strides of 0 (row broadcast) and more, every edge parameter.
void randomBinaryOps(std::mt19937& rng, bool mul) {
    Sim s;
    uint8_t* sp = s.dev.scratchpad();
    for (int iter = 0; iter < 80; ++iter) {
        const bool signedIn = rng() % 2, signedOut = rng() % 2;
        const isa::VecParams p = edgeParams(rng, signedOut);
        const uint32_t rows = 1 + rng() % 4, cols = 1 + rng() % 100;
        const uint32_t aCol = rng() % 3, bCol = rng() % 3;
        const uint32_t aRow = rng() % 4 == 0 ? 0 : cols * 2 + rng() % 4;
        const uint32_t bRow = rng() % 4 == 0 ? 0 : cols * 2 + rng() % 4;
        const uint32_t aAddr = rng() % 16, bAddr = 4096 + rng() % 16, outAddr = 8192 + rng() % 16;
        const uint32_t outRow = cols + rng() % 4;
        for (uint32_t i = 0; i < 8192; ++i) sp[i] = uint8_t(rng());
        const uint32_t flags =
            (signedIn ? isa::vec::kFlagSignedIn : 0) | (signedOut ? isa::vec::kFlagSignedOut : 0);
        isa::Command c;
        if (mul) {
            isa::VecOpDesc d;
            d.function = isa::VecFunction::kMul;
            d.rows = rows;
            d.cols = cols;
            d.aAddr = aAddr;
            d.aRowStride = aRow;
            d.aColStride = aCol;
            d.bAddr = bAddr;
            d.bRowStride = bRow;
            d.bColStride = bCol;
            d.outAddr = outAddr;
            d.outRowStride = outRow;
            c = isa::makeVecOp(d, flags);
        } else {
            c = isa::makeAdd({rows, cols, aAddr, aRow, aCol, bAddr, bRow, bCol, outAddr, outRow}, flags);
        }
        INFO((mul ? "mul" : "add") << " iter " << iter << " rows " << rows << " cols " << cols << " strides "
                                   << aCol << "/" << bCol << " mults " << p.in1Mult << " " << p.in2Mult << " "
                                   << p.outMult);
        REQUIRE(s.run({isa::makeVecParams(p), c}) == isa::kIrqDone);
        for (uint32_t r = 0; r < rows; ++r) {
            for (uint32_t col = 0; col < cols; ++col) {
                const int32_t a = value(sp[aAddr + r * aRow + col * aCol], signedIn);
                const int32_t b = value(sp[bAddr + r * bRow + col * bCol], signedIn);
                const int64_t e = mul ? mulExpected(a, b, p) : addExpected(a, b, p);
                REQUIRE(sp[outAddr + r * outRow + col] == uint8_t(e));
            }
        }
    }
}

// ADD writes element by element in order: in place (the output is input A) and shifted by one
// (each output is the next element's input) both give the in-order loop's result.
void aliasedAdds(std::mt19937& rng) {
    Sim s;
    uint8_t* sp = s.dev.scratchpad();
    for (uint32_t shift : {0u, 1u}) {
        isa::VecParams p = edgeParams(rng, false);
        p.in1Mult = p.in2Mult = p.outMult = 1 << 30;
        for (uint32_t i = 0; i < 512; ++i) sp[i] = uint8_t(rng());
        std::vector<uint8_t> expected(sp, sp + 512);
        const uint32_t cols = 100;
        for (uint32_t col = 0; col < cols; ++col) {
            expected[100 + shift + col] = uint8_t(addExpected(expected[100 + col], expected[300], p));
        }
        REQUIRE(s.run({isa::makeVecParams(p),
                       isa::makeAdd({1, cols, 100, 0, 1, 300, 0, 0, 100 + shift, cols})}) == isa::kIrqDone);
        INFO("output shifted by " << shift);
        REQUIRE(std::vector<uint8_t>(sp, sp + 512) == expected);
    }
}

}  // namespace

TEST_CASE("ADD, VEC_OP MUL and narrow REQUANT are exact on every host kernel") {
    const auto kernels = hostKernels();
    for (const auto& k : kernels) {
        REQUIRE(sim::selectHostKernel(k));
        INFO("kernel " << k);
        std::mt19937 rng(7);
        randomBinaryOps(rng, false);
        randomBinaryOps(rng, true);
        aliasedAdds(rng);
        randomNarrowRequants(rng);
    }
    REQUIRE(sim::selectHostKernel(kernels.back()));
}

TEST_CASE("REQUANT's offset does not wrap in the SIMD lanes") {
    // A rescaled value next to INT32_MAX plus a positive offset clamps high (the definition adds
    // in 64 bits); an int32 lane addition would wrap it negative and clamp low.
    const auto kernels = hostKernels();
    for (const auto& k : kernels) {
        REQUIRE(sim::selectHostKernel(k));
        INFO("kernel " << k);
        Sim s;
        isa::VecParams p;
        p.outMult = INT32_MAX;
        p.outShift = 0;
        p.outOffset = 100;
        p.clampMin = 0;
        p.clampMax = 255;
        std::fill(s.dev.accumulator(), s.dev.accumulator() + 32, INT32_MAX);
        REQUIRE(s.run({isa::makeVecParams(p), isa::makeRequant({0, 32, 1, 32, 0, 0, 32})}) == isa::kIrqDone);
        for (uint32_t i = 0; i < 32; ++i) REQUIRE(s.dev.scratchpad()[i] == 255);
    }
    REQUIRE(sim::selectHostKernel(kernels.back()));
}

TEST_CASE("GEMM, CONV, DWCONV and REQUANT are exact on every host kernel") {
    const auto kernels = hostKernels();
    REQUIRE(!kernels.empty());
    for (const auto& k : kernels) {
        REQUIRE(sim::selectHostKernel(k));
        INFO("kernel " << k);
        std::mt19937 rng(42);
        randomGemms(rng);
        randomConvs(rng, false);
        randomConvs(rng, false, true);
        randomConvs(rng, true);
        randomRequants(rng);
    }
    REQUIRE(sim::selectHostKernel(kernels.back()));
}

TEST_CASE("long reductions are packed in passes with the same bits (GEMM and CONV)") {
    Sim s;
    uint8_t* sp = s.dev.scratchpad();
    std::mt19937 rng(9);
    // GEMM: K = 70000 > one pass for a 1-column B (65536 reduction rows).
    const uint32_t m = 2, k = 70000, n = 1;
    for (uint32_t i = 0; i < m * k + k; ++i) sp[i] = uint8_t(rng());
    isa::GemmDesc g;
    g.m = m;
    g.k = k;
    g.n = n;
    g.aAddr = 0;
    g.aRowStride = k;
    g.bAddr = m * k;
    g.bRowStride = n;
    g.accAddr = 0;
    g.accRowStride = n;
    g.zpA = 5;
    g.zpB = -7;
    REQUIRE(s.run({isa::makeGemm(g, isa::kMacFlagSignedB)}) == isa::kIrqDone);
    for (uint32_t i = 0; i < m; ++i) {
        int64_t e = 0;
        for (uint32_t kk = 0; kk < k; ++kk) e += int64_t(sp[i * k + kk] - 5) * (int8_t(sp[m * k + kk]) + 7);
        CHECK(s.dev.accumulator()[i] == int32_t(uint32_t(uint64_t(e))));
    }
    // CONV: K = 2 taps x 40000 channels, the pass boundary inside the second tap; 20 output
    // pixels, more than one pass of im2col rows (16 at this K).
    isa::ConvDesc d;
    d.ifmH = 2;
    d.ifmW = 1;
    d.ifmC = 40000;
    d.ifmRowStride = 40000;
    d.wAddr = 200000;
    d.kernelH = 2;
    d.kernelW = 1;
    d.padTop = 1;
    d.ofmH = 20;
    d.ofmW = 1;
    d.cout = 1;
    d.zpIn = 3;
    d.zpW = 1;
    for (uint32_t i = 0; i < 80000; ++i) {
        sp[i] = uint8_t(rng());
        sp[200000 + i] = uint8_t(rng());
    }
    REQUIRE(s.run({isa::makeConv(d)}) == isa::kIrqDone);
    for (uint32_t oy = 0; oy < d.ofmH; ++oy) {
        int64_t e = 0;
        for (uint32_t ky = 0; ky < 2; ++ky) {
            const int y = int(oy + ky) - 1;
            if (y < 0 || y >= 2) continue;
            for (uint32_t ci = 0; ci < 40000; ++ci)
                e += int64_t(sp[y * 40000 + ci] - 3) * (sp[200000 + ky * 40000 + ci] - 1);
        }
        CHECK(s.dev.accumulator()[oy] == int32_t(uint32_t(uint64_t(e))));
    }
}

TEST_CASE("DWCONV beyond the host budget widens tap by tap with the same bits") {
    sim::HwConfig c;
    c.scratchpadBytes = 4u << 20;
    c.accumulatorBytes = 4u << 20;
    Sim s(c);
    uint8_t* sp = s.dev.scratchpad();
    std::mt19937 rng(10);
    const uint32_t ch = 600000;  // tile and weights both above 2^20 elements
    for (uint32_t i = 0; i < 2 * ch; ++i) {
        sp[i] = uint8_t(rng());
        sp[2 * ch + i] = uint8_t(rng());
    }
    isa::ConvDesc d;
    d.ifmH = 2;
    d.ifmW = 1;
    d.ifmC = ch;
    d.ifmRowStride = ch;
    d.wAddr = 2 * ch;
    d.kernelH = 2;
    d.kernelW = 1;
    d.ofmH = 1;
    d.ofmW = 1;
    d.cout = ch;
    d.zpIn = -4;
    d.zpW = 6;
    REQUIRE(s.run({isa::makeDwConv(d, isa::kMacFlagSignedA)}) == isa::kIrqDone);
    for (uint32_t ci = 0; ci < ch; ci += 997) {
        const int32_t e =
            (int8_t(sp[ci]) + 4) * (sp[2 * ch + ci] - 6) + (int8_t(sp[ch + ci]) + 4) * (sp[3 * ch + ci] - 6);
        REQUIRE(s.dev.accumulator()[ci] == e);
    }
}

// DWCONV, VEC_OP (MUL, MAX, MIN, SHIFT, CLAMP, LUT) and POOL (max, average): bit-exact against
// straightforward loops of TFLite's integer formulas, over many random shapes.
#include <algorithm>
#include <catch2/catch.hpp>
#include <random>

#include "sim_fixture.h"

using namespace simtest;
using isa::ErrorCode;

namespace {

// TFLite's reference MultiplyByQuantizedMultiplier, written the gemmlowp way (independent of
// hwsim/isa/fixed_point.h on purpose).
int32_t srdhm(int32_t a, int32_t b) {
    bool overflow = a == b && a == INT32_MIN;
    int64_t ab = int64_t(a) * int64_t(b);
    int32_t nudge = ab >= 0 ? (1 << 30) : (1 - (1 << 30));
    int32_t hi = int32_t((ab + nudge) / (int64_t(1) << 31));
    return overflow ? INT32_MAX : hi;
}
int32_t rdbp(int32_t x, int exponent) {
    const int32_t mask = int32_t((int64_t(1) << exponent) - 1);
    const int32_t remainder = x & mask;
    const int32_t threshold = (mask >> 1) + (x < 0 ? 1 : 0);
    return (x >> exponent) + (remainder > threshold ? 1 : 0);
}
int32_t mbqm(int32_t x, int32_t mult, int shift) {
    int left = shift > 0 ? shift : 0, right = shift > 0 ? 0 : -shift;
    return rdbp(srdhm(int32_t(uint32_t(x) << left), mult), right);
}
int32_t clampTo(int64_t v, int32_t lo, int32_t hi) {
    return int32_t(std::min<int64_t>(hi, std::max<int64_t>(lo, v)));
}

isa::VecParams randomParams(std::mt19937& rng, bool signedOut) {
    isa::VecParams p;
    p.in1Offset = int32_t(rng() % 256) - 128;
    p.in2Offset = int32_t(rng() % 256) - 128;
    p.outOffset = int32_t(rng() % 256) - 128;
    p.outMult = int32_t((1u << 30) + rng() % (1u << 30));
    p.outShift = -int32_t(rng() % 12);
    p.leftShift = int32_t(rng() % 8);
    const int32_t lo = signedOut ? -128 : 0, hi = signedOut ? 127 : 255;
    p.clampMin = lo + int32_t(rng() % 20);
    p.clampMax = hi - int32_t(rng() % 20);
    return p;
}

}  // namespace

TEST_CASE("DWCONV matches the depthwise loop over random shapes") {
    std::mt19937 rng(11);
    for (int iter = 0; iter < 40; ++iter) {
        Sim s;
        const uint32_t h = 1 + rng() % 9, w = 1 + rng() % 9, c = 1 + rng() % 20;
        const uint32_t kh = 1 + rng() % 3, kw = 1 + rng() % 3, sy = 1 + rng() % 2, sx = 1 + rng() % 2;
        const uint32_t pt = rng() % kh, pl = rng() % kw;
        const uint32_t oh = (h + 2 * pt - kh) / sy + 1, ow = (w + 2 * pl - kw) / sx + 1;
        if (h + 2 * pt < kh || w + 2 * pl < kw) continue;
        uint8_t* sp = s.dev.scratchpad();
        for (uint32_t i = 0; i < h * w * c; ++i) sp[i] = uint8_t(rng());
        for (uint32_t i = 0; i < kh * kw * c; ++i) sp[8192 + i] = uint8_t(rng());
        const bool sgn = iter % 2 == 1;
        isa::ConvDesc d;
        d.ifmH = h;
        d.ifmW = w;
        d.ifmC = c;
        d.ifmRowStride = w * c;
        d.wAddr = 8192;
        d.kernelH = kh;
        d.kernelW = kw;
        d.strideY = sy;
        d.strideX = sx;
        d.padTop = pt;
        d.padLeft = pl;
        d.ofmH = oh;
        d.ofmW = ow;
        d.cout = c;
        d.zpIn = sgn ? -5 : 128;
        d.zpW = sgn ? 0 : 120;
        const uint32_t flags = sgn ? (isa::kMacFlagSignedA | isa::kMacFlagSignedB) : 0;
        REQUIRE(s.run({isa::makeDwConv(d, flags)}) == isa::kIrqDone);
        auto el = [&](uint32_t at) { return sgn ? int32_t(int8_t(sp[at])) : int32_t(sp[at]); };
        for (uint32_t oy = 0; oy < oh; ++oy)
            for (uint32_t ox = 0; ox < ow; ++ox)
                for (uint32_t ci = 0; ci < c; ++ci) {
                    int32_t e = 0;
                    for (uint32_t ky = 0; ky < kh; ++ky)
                        for (uint32_t kx = 0; kx < kw; ++kx) {
                            int y = int(oy * sy + ky) - int(pt), x = int(ox * sx + kx) - int(pl);
                            if (y < 0 || x < 0 || y >= int(h) || x >= int(w)) continue;
                            e += (el((y * w + x) * c + ci) - d.zpIn) *
                                 (el(8192 + (ky * kw + kx) * c + ci) - d.zpW);
                        }
                    REQUIRE(s.dev.accumulator()[(oy * ow + ox) * c + ci] == e);
                }
        CHECK(s.pmu(isa::kRegPmuMacsLo) > 0);
    }
}

TEST_CASE("VEC_OP functions match TFLite's formulas") {
    std::mt19937 rng(5);
    for (int iter = 0; iter < 70; ++iter) {
        Sim s;
        const auto fn = static_cast<isa::VecFunction>(iter % 7);
        const bool sIn = (iter / 7) % 2 == 1, sOut = sIn;
        const uint32_t rows = 1 + rng() % 7, cols = 1 + rng() % 40;
        uint8_t* sp = s.dev.scratchpad();
        for (uint32_t i = 0; i < 4096; ++i) sp[i] = uint8_t(rng());
        const isa::VecParams p = randomParams(rng, sOut);
        isa::VecOpDesc d;
        d.function = fn;
        d.rows = rows;
        d.cols = cols;
        d.aAddr = 0;
        d.aRowStride = cols;
        d.aColStride = 1;
        d.bAddr = 1024;
        d.bRowStride = iter % 3 == 0 ? 0 : cols;
        d.bColStride = 1;  // row broadcast
        d.outAddr = 8192;
        d.outRowStride = cols + 3;
        d.lutAddr = 2048;
        const uint32_t flags = (sIn ? isa::vec::kFlagSignedIn : 0) | (sOut ? isa::vec::kFlagSignedOut : 0);
        REQUIRE(s.run({isa::makeVecParams(p), isa::makeVecOp(d, flags)}) == isa::kIrqDone);
        auto el = [&](uint32_t at) { return sIn ? int32_t(int8_t(sp[at])) : int32_t(sp[at]); };
        for (uint32_t r = 0; r < rows; ++r)
            for (uint32_t c = 0; c < cols; ++c) {
                const uint8_t araw = sp[r * cols + c];
                const int32_t a = el(r * cols + c), b = el(1024 + r * d.bRowStride + c);
                int64_t e = 0;
                switch (fn) {
                    case isa::VecFunction::kMul:
                        e = clampTo(
                            mbqm((a + p.in1Offset) * (b + p.in2Offset), p.outMult, p.outShift) + p.outOffset,
                            p.clampMin, p.clampMax);
                        break;
                    case isa::VecFunction::kMax:
                        e = clampTo(std::max(a, b), p.clampMin, p.clampMax);
                        break;
                    case isa::VecFunction::kMin:
                        e = clampTo(std::min(a, b), p.clampMin, p.clampMax);
                        break;
                    case isa::VecFunction::kShift:
                        e = clampTo(
                            mbqm((a + p.in1Offset) * (1 << p.leftShift), p.outMult, p.outShift) + p.outOffset,
                            p.clampMin, p.clampMax);
                        break;
                    case isa::VecFunction::kClamp:
                        e = clampTo(a, p.clampMin, p.clampMax);
                        break;
                    case isa::VecFunction::kLut:
                        e = sOut ? int8_t(sp[2048 + araw]) : sp[2048 + araw];
                        break;
                    case isa::VecFunction::kPrelu: {
                        const int32_t x = a + p.in1Offset;
                        e = clampTo((x >= 0 ? mbqm(x, p.in1Mult, p.in1Shift)
                                            : mbqm(x * (b + p.in2Offset), p.outMult, p.outShift)) +
                                        p.outOffset,
                                    p.clampMin, p.clampMax);
                        break;
                    }
                }
                INFO("fn " << int(fn) << " r " << r << " c " << c);
                REQUIRE(sp[8192 + r * d.outRowStride + c] == uint8_t(e));
            }
    }
}

TEST_CASE("POOL max and average match TFLite's integer pooling") {
    std::mt19937 rng(9);
    for (int iter = 0; iter < 40; ++iter) {
        Sim s;
        const bool sgn = iter % 2 == 0;
        const uint32_t mode = (iter / 2) % 2;
        const uint32_t h = 2 + rng() % 8, w = 2 + rng() % 8, c = 1 + rng() % 10;
        const uint32_t kh = 1 + rng() % 3, kw = 1 + rng() % 3, sy = 1 + rng() % 2, sx = 1 + rng() % 2;
        const uint32_t pt = rng() % kh, pl = rng() % kw;
        if (h + pt < kh || w + pl < kw) continue;
        const uint32_t oh = (h + pt - kh) / sy + 1, ow = (w + pl - kw) / sx + 1;
        uint8_t* sp = s.dev.scratchpad();
        for (uint32_t i = 0; i < h * w * c; ++i) sp[i] = uint8_t(rng());
        isa::VecParams p;
        p.clampMin = sgn ? -100 : 3;
        p.clampMax = sgn ? 120 : 250;
        isa::PoolDesc d;
        d.mode = mode;
        d.ifmH = h;
        d.ifmW = w;
        d.ifmC = c;
        d.ifmRowStride = w * c;
        d.kernelH = kh;
        d.kernelW = kw;
        d.strideY = sy;
        d.strideX = sx;
        d.padTop = pt;
        d.padLeft = pl;
        d.ofmH = oh;
        d.ofmW = ow;
        d.outAddr = 16384;
        REQUIRE(s.run({isa::makeVecParams(p), isa::makePool(d, sgn ? isa::pool::kFlagSigned : 0)}) ==
                isa::kIrqDone);
        for (uint32_t oy = 0; oy < oh; ++oy)
            for (uint32_t ox = 0; ox < ow; ++ox)
                for (uint32_t ci = 0; ci < c; ++ci) {
                    int32_t mx = -1000, sum = 0, n = 0;
                    for (uint32_t ky = 0; ky < kh; ++ky)
                        for (uint32_t kx = 0; kx < kw; ++kx) {
                            int y = int(oy * sy + ky) - int(pt), x = int(ox * sx + kx) - int(pl);
                            if (y < 0 || x < 0 || y >= int(h) || x >= int(w)) continue;
                            int32_t v = sgn ? int8_t(sp[(y * w + x) * c + ci]) : sp[(y * w + x) * c + ci];
                            mx = std::max(mx, v);
                            sum += v;
                            ++n;
                        }
                    // TFLite reference_integer_ops::AveragePool: (sum +- count/2) / count.
                    int32_t e = mode == 0 ? mx : (sum > 0 ? (sum + n / 2) / n : (sum - n / 2) / n);
                    e = clampTo(e, p.clampMin, p.clampMax);
                    REQUIRE(sp[16384 + (oy * ow + ox) * c + ci] == uint8_t(e));
                }
    }
}

TEST_CASE("new opcodes reject malformed commands with an error code and offset") {
    auto expectError = [](const isa::Command& bad, ErrorCode code) {
        Sim s;
        REQUIRE(s.run({isa::makeNop(), bad}) == isa::kIrqError);
        CHECK(s.dev.readReg(isa::kRegErrorCode) == uint32_t(code));
        CHECK(s.dev.readReg(isa::kRegErrorOffset) == isa::kCommandBytes);
    };
    isa::ConvDesc d;
    d.ifmH = d.ifmW = 4;
    d.ifmC = 2;
    d.ifmRowStride = 8;
    d.kernelH = d.kernelW = 3;
    d.ofmH = d.ofmW = 2;
    d.cout = 2;
    isa::ConvDesc wrongCout = d;
    wrongCout.cout = 3;
    expectError(isa::makeDwConv(wrongCout), ErrorCode::kBadParameter);
    isa::ConvDesc zero = d;
    zero.ifmC = 0;
    expectError(isa::makeDwConv(zero), ErrorCode::kBadSize);
    isa::ConvDesc far = d;
    far.ifmAddr = 1u << 20;
    expectError(isa::makeDwConv(far), ErrorCode::kSramOutOfRange);
    isa::ConvDesc accFar = d;
    accFar.accAddr = 1u << 20;
    expectError(isa::makeDwConv(accFar), ErrorCode::kAccumulatorOutOfRange);
    isa::VecOpDesc v;
    v.rows = 1;
    v.cols = 4;
    v.outRowStride = 4;
    isa::Command badFn = isa::makeVecOp(v);
    badFn.w[isa::vecop::kFunction] = 9;
    expectError(badFn, ErrorCode::kBadParameter);
    isa::VecOpDesc vz = v;
    vz.cols = 0;
    expectError(isa::makeVecOp(vz), ErrorCode::kBadSize);
    isa::VecOpDesc vf = v;
    vf.function = isa::VecFunction::kLut;
    vf.lutAddr = (1u << 20) - 10;
    expectError(isa::makeVecOp(vf), ErrorCode::kSramOutOfRange);
    isa::PoolDesc p;
    p.ifmH = p.ifmW = 4;
    p.ifmC = 1;
    p.ifmRowStride = 4;
    p.kernelH = p.kernelW = 2;
    p.ofmH = p.ofmW = 2;
    p.mode = 7;
    expectError(isa::makePool(p), ErrorCode::kBadParameter);
    p.mode = 0;
    p.outAddr = 1u << 20;
    expectError(isa::makePool(p), ErrorCode::kSramOutOfRange);
    p.outAddr = 0;
    p.kernelH = 0;
    expectError(isa::makePool(p), ErrorCode::kBadSize);
}

TEST_CASE("SOFTMAX (ISA 1.2) rejects malformed commands with an error code and offset") {
    auto expectError = [](const isa::Command& bad, ErrorCode code) {
        Sim s;
        REQUIRE(s.run({isa::makeNop(), bad}) == isa::kIrqError);
        CHECK(s.dev.readReg(isa::kRegErrorCode) == uint32_t(code));
        CHECK(s.dev.readReg(isa::kRegErrorOffset) == isa::kCommandBytes);
    };
    isa::SoftmaxDesc d;
    d.rows = 2;
    d.cols = 5;
    d.inRowStride = d.outRowStride = 5;
    d.outAddr = 64;
    d.multiplier = 1 << 30;
    d.leftShift = 20;
    d.diffMin = -100;
    {
        Sim s;  // the well-formed command runs
        CHECK(s.run({isa::makeSoftmax(d)}) == isa::kIrqDone);
    }
    isa::SoftmaxDesc z = d;
    z.rows = 0;
    expectError(isa::makeSoftmax(z), ErrorCode::kBadSize);
    isa::SoftmaxDesc longRow = d;
    longRow.cols = isa::softmax::kMaxRowLength + 1;
    expectError(isa::makeSoftmax(longRow), ErrorCode::kBadSize);
    isa::SoftmaxDesc shift = d;
    shift.leftShift = 32;
    expectError(isa::makeSoftmax(shift), ErrorCode::kBadParameter);
    isa::SoftmaxDesc mult = d;
    mult.multiplier = 0;
    expectError(isa::makeSoftmax(mult), ErrorCode::kBadParameter);
    isa::SoftmaxDesc diff = d;
    diff.diffMin = 1;
    expectError(isa::makeSoftmax(diff), ErrorCode::kBadParameter);
    expectError(isa::makeSoftmax(d, 0x2), ErrorCode::kBadParameter);  // unknown flag
    isa::SoftmaxDesc far = d;
    far.inColStride = 1u << 20;
    expectError(isa::makeSoftmax(far), ErrorCode::kSramOutOfRange);
    isa::SoftmaxDesc outFar = d;
    outFar.outAddr = (1u << 20) - 3;
    expectError(isa::makeSoftmax(outFar), ErrorCode::kSramOutOfRange);
}

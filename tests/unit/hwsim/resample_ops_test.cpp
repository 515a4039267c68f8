// The ISA 1.2 vector-unit commands: RESIZE, MEAN and VEC_OP PRELU, and ISA 1.3's CONVERT, on
// hand-computed cases, and their refusal of malformed commands (error code, offset, nothing
// written).
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "sim_fixture.h"

using namespace simtest;
using isa::ErrorCode;

namespace {

uint32_t floatBits(float f) {
    uint32_t b = 0;
    std::memcpy(&b, &f, 4);
    return b;
}

void expectError(const isa::Command& bad, ErrorCode code) {
    Sim s;
    REQUIRE(s.run({isa::makeNop(), bad}) == isa::kIrqError);
    CHECK(s.dev.readReg(isa::kRegErrorCode) == uint32_t(code));
    CHECK(s.dev.readReg(isa::kRegErrorOffset) == isa::kCommandBytes);
}

// Runs `cmd` on `input` loaded at scratchpad 0; returns `outBytes` from scratchpad `outAddr`.
std::vector<uint8_t> runOn(const std::vector<uint8_t>& input, const std::vector<isa::Command>& cmds,
                           uint32_t outAddr, uint32_t outBytes) {
    Sim s;
    std::memcpy(s.dram.data(), input.data(), input.size());
    std::vector<isa::Command> all = {s.load(0, 0, uint32_t(input.size()))};
    all.insert(all.end(), cmds.begin(), cmds.end());
    all.push_back(isa::makeFence());
    all.push_back(s.store(0x1000, outAddr, outBytes));
    REQUIRE(s.run(all) == isa::kIrqDone);
    return std::vector<uint8_t>(s.dram.begin() + 0x1000, s.dram.begin() + 0x1000 + outBytes);
}

isa::ResizeDesc resize2x2To4x4(uint32_t mode) {
    isa::ResizeDesc d;
    d.mode = mode;
    d.ifmH = 2;
    d.ifmC = 1;
    d.ifmRowStride = 2;
    d.fullInH = d.fullInW = 2;
    d.fullOutH = d.fullOutW = 4;
    d.ofmH = 4;
    d.outAddr = 256;
    return d;
}

}  // namespace

TEST_CASE("RESIZE nearest and bilinear on a 2x2 image") {
    const std::vector<uint8_t> img = {10, 20, 30, 40};
    CHECK(runOn(img, {isa::makeResize(resize2x2To4x4(isa::resize::kModeNearest))}, 256, 16) ==
          std::vector<uint8_t>{10, 10, 20, 20, 10, 10, 20, 20, 30, 30, 40, 40, 30, 30, 40, 40});
    // Scale 0.5: source 0, 0.5, 1, 1.5 (clamped to the last pixel).
    CHECK(runOn(img, {isa::makeResize(resize2x2To4x4(isa::resize::kModeBilinear))}, 256, 16) ==
          std::vector<uint8_t>{10, 15, 20, 20, 20, 25, 30, 30, 30, 35, 40, 40, 30, 35, 40, 40});
    // Output rows 2..3 only, from input row 1 only (the tile a compiler would load).
    isa::ResizeDesc tile = resize2x2To4x4(isa::resize::kModeNearest);
    tile.ifmAddr = 2;
    tile.ifmH = 1;
    tile.ifmFirstRow = 1;
    tile.ofmFirstRow = 2;
    tile.ofmH = 2;
    CHECK(runOn(img, {isa::makeResize(tile)}, 256, 8) ==
          std::vector<uint8_t>{30, 30, 40, 40, 30, 30, 40, 40});
}

TEST_CASE("MEAN dequantizes, averages and requantizes; VEC_OP PRELU scales each sign") {
    isa::MeanDesc m;
    m.outer = 2;  // [2][3] -> the mean of each row
    m.outerStride = 3;
    m.count1 = 3;
    m.stride1 = 1;
    m.outAddr = 64;
    m.scaleInBits = floatBits(0.5f);
    m.scaleOutBits = floatBits(0.25f);
    m.zpIn = 10;
    m.zpOut = 3;
    // Row 0: (0 + 1 + 3) * 0.5 / 3 = 0.6667 -> round(2.667) + 3 = 6; row 1: 100 -> 90 * 0.5 / 0.25 + 3.
    CHECK(runOn({10, 11, 13, 100, 100, 100}, {isa::makeMean(m)}, 64, 2) == std::vector<uint8_t>{6, 183});

    isa::VecParams p;  // positive: x * 0.5; negative: x * alpha * 0.25 (Q31 0.5 shifts)
    p.in1Mult = 1 << 30;
    p.outMult = 1 << 30;
    p.outShift = -1;
    p.in1Offset = -100;
    p.in2Offset = -2;
    p.outOffset = 50;
    isa::VecOpDesc v;
    v.function = isa::VecFunction::kPrelu;
    v.rows = 1;
    v.cols = 4;
    v.aAddr = 0;
    v.bAddr = 4;
    v.outAddr = 64;
    v.outRowStride = 4;
    // x - 100 = 20, -20, -8, 0 with alpha - 2 = 4, 4, -2, 1: 50 + 10, 50 - 20, 50 + 4, 50.
    CHECK(runOn({120, 80, 92, 100, 6, 6, 0, 3}, {isa::makeVecParams(p), isa::makeVecOp(v)}, 64, 4) ==
          std::vector<uint8_t>{60, 30, 54, 50});
}

TEST_CASE("ISA 1.2 commands reject malformed commands with an error code and offset") {
    isa::ResizeDesc r = resize2x2To4x4(isa::resize::kModeBilinear);
    isa::ResizeDesc badMode = r;
    badMode.mode = 2;
    expectError(isa::makeResize(badMode), ErrorCode::kBadParameter);
    expectError(isa::makeResize(r, isa::resize::kFlagAlignCorners | isa::resize::kFlagHalfPixel),
                ErrorCode::kBadParameter);
    isa::ResizeDesc missingRow = r;  // output row 3 samples input row 1, outside a 1-row tile
    missingRow.ifmH = 1;
    expectError(isa::makeResize(missingRow), ErrorCode::kBadParameter);
    isa::ResizeDesc zero = r;
    zero.ifmC = 0;
    expectError(isa::makeResize(zero), ErrorCode::kBadSize);
    isa::ResizeDesc far = r;
    far.outAddr = (1u << 20) - 8;
    expectError(isa::makeResize(far), ErrorCode::kSramOutOfRange);
    expectError(isa::makeResize(r, 1u << 5), ErrorCode::kBadParameter);

    isa::MeanDesc m;
    m.inner = 4;
    m.innerStride = 1;
    m.count1 = 2;
    m.stride1 = 4;
    m.scaleInBits = m.scaleOutBits = floatBits(1.0f);
    isa::MeanDesc negativeScale = m;
    negativeScale.scaleOutBits = floatBits(-1.0f);
    expectError(isa::makeMean(negativeScale), ErrorCode::kBadParameter);
    isa::MeanDesc badZp = m;
    badZp.zpIn = 300;
    expectError(isa::makeMean(badZp), ErrorCode::kBadParameter);
    isa::MeanDesc tooMany = m;
    tooMany.count1 = 1u << 11;
    tooMany.count2 = 1u << 11;
    expectError(isa::makeMean(tooMany), ErrorCode::kBadSize);
    isa::MeanDesc empty = m;
    empty.inner = 0;
    expectError(isa::makeMean(empty), ErrorCode::kBadSize);
    isa::MeanDesc farIn = m;
    farIn.ifmAddr = (1u << 20) - 4;
    expectError(isa::makeMean(farIn), ErrorCode::kSramOutOfRange);
    expectError(isa::makeMean(m, 1u << 3), ErrorCode::kBadParameter);

    isa::VecOpDesc v;
    v.function = isa::VecFunction::kPrelu;
    v.rows = 1;
    v.cols = 4;
    v.outRowStride = 4;
    v.bAddr = (1u << 20) - 2;
    expectError(isa::makeVecOp(v), ErrorCode::kSramOutOfRange);
}

TEST_CASE("CONVERT (ISA 1.3): float32 -> uint8 / int8 with ties away from zero, back to float32") {
    const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
    const std::vector<float> x = {0.25f, -0.25f, 0.75f, 1.25f, -1.25f, 100.0f, -inf, nan};
    std::vector<uint8_t> bytes(x.size() * 4);
    std::memcpy(bytes.data(), x.data(), bytes.size());
    isa::ConvertDesc d;
    d.count = uint32_t(x.size());
    d.outAddr = 256;
    d.scaleBits = floatBits(0.5f);
    d.zp = 3;  // x / 0.5 = 0.5, -0.5, 1.5, 2.5, -2.5: rounded away from zero, + 3
    CHECK(runOn(bytes, {isa::makeConvert(d)}, 256, 8) == std::vector<uint8_t>{4, 2, 5, 6, 0, 203, 0, 0});
    d.zp = -3;
    CHECK(runOn(bytes, {isa::makeConvert(d, isa::convert::kFlagSigned)}, 256, 8) ==
          std::vector<uint8_t>{uint8_t(-2), uint8_t(-4), uint8_t(-1), 0, uint8_t(-6), 127, 0x80, 0x80});
    // Dequantize: 0.5 * (q - zp) in float32.
    isa::ConvertDesc back;
    back.count = 3;
    back.outAddr = 64;
    back.scaleBits = floatBits(0.5f);
    back.zp = 1;
    const std::vector<uint8_t> out =
        runOn({0, 1, 255}, {isa::makeConvert(back, isa::convert::kFlagToFloat)}, 64, 12);
    float f[3] = {};
    std::memcpy(f, out.data(), 12);
    CHECK(f[0] == -0.5f);
    CHECK(f[1] == 0.0f);
    CHECK(f[2] == 127.0f);
}

TEST_CASE("CONVERT refuses a malformed command") {
    isa::ConvertDesc d;
    d.count = 16;
    d.outAddr = 256;
    d.scaleBits = floatBits(1.0f);
    isa::ConvertDesc c = d;
    c.scaleBits = floatBits(-1.0f);
    expectError(isa::makeConvert(c), ErrorCode::kBadParameter);
    c = d;
    c.zp = 256;
    expectError(isa::makeConvert(c), ErrorCode::kBadParameter);
    c = d;
    c.count = 0;
    expectError(isa::makeConvert(c), ErrorCode::kBadSize);
    c = d;
    c.outAddr = 32;  // inside the 64 input bytes
    expectError(isa::makeConvert(c), ErrorCode::kBadParameter);
    c = d;
    c.inAddr = (1u << 20) - 8;
    expectError(isa::makeConvert(c), ErrorCode::kSramOutOfRange);
    expectError(isa::makeConvert(d, 1u << 2), ErrorCode::kBadParameter);
}

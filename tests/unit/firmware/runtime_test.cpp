// Runtime end to end on the simulator: compile, load, execute, compare bit-exact with reference
// kernels written from the TFLite formulas (model_fixture.h).
#include <catch2/catch.hpp>
#include <memory>

#include "model_fixture.h"

using namespace fwtest;

namespace {

constexpr uint32_t kAdd = 0, kConv = 3, kDepthwise = 4, kFc = 9, kGroupedConv = 55;

struct ConvCase {
    uint32_t n, h, w, cin, cout, kh, kw;
    uint32_t sx, sy, dx, dy;
    bool implicit;
    int scheme;  // implicit: 1 SAME, 2 VALID
    uint32_t pl, pr, pt, pb;
    int act;
    bool nchw;
    bool optionalArgs;
};

// The integer convolution of TFLite/NNAPI: in and f hold (value - zero point); mult[co] is the
// requantization multiplier of output channel co (one for all channels unless per-channel).
// GROUPED_CONV_2D: `groups` groups, filter [cout][kh][kw][cin / groups].
// The case's paddings as left, right, top, bottom: explicit ones as given; implicit SAME (scheme
// 1) as NNAPI computes them; implicit VALID none.
void explicitPadding(const ConvCase& c, uint32_t* pl, uint32_t* pr, uint32_t* pt, uint32_t* pb) {
    *pl = c.pl, *pr = c.pr, *pt = c.pt, *pb = c.pb;
    if (!c.implicit) return;
    *pl = *pr = *pt = *pb = 0;
    if (c.scheme != 1) return;
    auto same = [](uint32_t in, uint32_t s, uint32_t d, uint32_t k, uint32_t* p0, uint32_t* p1) {
        int eff = int((k - 1) * d + 1), o = int((in + s - 1) / s), t = (o - 1) * int(s) + eff - int(in);
        if (t > 0) {
            *p0 = uint32_t(t / 2);
            *p1 = uint32_t(t - t / 2);
        }
    };
    same(c.w, c.sx, c.dx, c.kw, pl, pr);
    same(c.h, c.sy, c.dy, c.kh, pt, pb);
}

std::vector<int> refConv(const ConvCase& c, const std::vector<int>& in, const std::vector<int>& f,
                         const std::vector<int32_t>& bias, const std::vector<std::pair<int32_t, int>>& mult,
                         int outZp, int lo, int hi, uint32_t pl, uint32_t pt, uint32_t oh, uint32_t ow,
                         uint32_t groups = 1) {
    const uint32_t cinG = c.cin / groups, coutG = c.cout / groups;
    auto inAt = [&](uint32_t b, uint32_t y, uint32_t x, uint32_t ch) {
        return c.nchw ? in[((b * c.cin + ch) * c.h + y) * c.w + x]
                      : in[((b * c.h + y) * c.w + x) * c.cin + ch];
    };
    std::vector<int> out(size_t(c.n) * oh * ow * c.cout);
    for (uint32_t b = 0; b < c.n; ++b)
        for (uint32_t oy = 0; oy < oh; ++oy)
            for (uint32_t ox = 0; ox < ow; ++ox)
                for (uint32_t co = 0; co < c.cout; ++co) {
                    int32_t acc = 0;
                    for (uint32_t ky = 0; ky < c.kh; ++ky)
                        for (uint32_t kx = 0; kx < c.kw; ++kx) {
                            int y = int(oy * c.sy + ky * c.dy) - int(pt),
                                x = int(ox * c.sx + kx * c.dx) - int(pl);
                            if (y < 0 || x < 0 || y >= int(c.h) || x >= int(c.w)) continue;
                            for (uint32_t ci = 0; ci < cinG; ++ci)
                                acc += inAt(b, y, x, co / coutG * cinG + ci) *
                                       f[((co * c.kh + ky) * c.kw + kx) * cinG + ci];
                        }
                    acc += bias[co];
                    const auto& [m, sh] = mult[mult.size() == 1 ? 0 : co];
                    int v = refMbqm(acc, m, sh) + outZp;
                    v = std::min(hi, std::max(lo, v));
                    size_t o = c.nchw ? ((size_t(b) * c.cout + co) * oh + oy) * ow + ox
                                      : ((size_t(b) * oh + oy) * ow + ox) * c.cout + co;
                    out[o] = v;
                }
    return out;
}

uint32_t outSize(uint32_t in, uint32_t k, uint32_t s, uint32_t d, uint32_t p0, uint32_t p1) {
    uint32_t eff = (k - 1) * d + 1;
    return (in + p0 + p1 - eff) / s + 1;
}

// CONV_2D / DEPTHWISE_CONV_2D arguments after input, filter and bias: padding (implicit scheme or
// explicit), strides, the depth multiplier (depthwise only, `multiplier` > 0), the activation,
// then the optional layout and dilation.
std::vector<uint32_t> convolutionArgs(ModelBuilder& mb, const ConvCase& c, std::vector<uint32_t> args,
                                      uint32_t multiplier) {
    if (c.implicit) {
        args.insert(args.end(), {mb.i32(c.scheme), mb.i32(int(c.sx)), mb.i32(int(c.sy))});
    } else {
        args.insert(args.end(), {mb.i32(int(c.pl)), mb.i32(int(c.pr)), mb.i32(int(c.pt)), mb.i32(int(c.pb)),
                                 mb.i32(int(c.sx)), mb.i32(int(c.sy))});
    }
    if (multiplier > 0) args.push_back(mb.i32(int(multiplier)));
    args.push_back(mb.i32(c.act));
    if (c.optionalArgs || c.nchw || c.dx != 1 || c.dy != 1) {
        args.push_back(mb.boolean(c.nchw));
        if (c.optionalArgs || c.dx != 1 || c.dy != 1)
            args.insert(args.end(), {mb.i32(int(c.dx)), mb.i32(int(c.dy))});
    }
    return args;
}

// TFLite's requantization multiplier and shift per filter scale (one, or one per output channel).
std::vector<std::pair<int32_t, int>> requantMultipliers(float inputScale,
                                                        const std::vector<float>& filterScales,
                                                        float outputScale) {
    std::vector<std::pair<int32_t, int>> mult(filterScales.size());
    for (size_t i = 0; i < filterScales.size(); ++i) {
        refQuantizeMultiplier(double(inputScale) * double(filterScales[i]) / double(outputScale),
                              &mult[i].first, &mult[i].second);
    }
    return mult;
}

// The operand types of a CONV_2D: activations uint8 or int8; the filter per-tensor of the same
// type, or TENSOR_QUANT8_SYMM_PER_CHANNEL.
enum class ConvTypes { kUint8, kInt8, kUint8PerChannel, kInt8PerChannel };

// groups > 1: GROUPED_CONV_2D (no dilation; the layout input is required).
void runConvCase(const ConvCase& c, uint32_t seed, npu::sim::HwConfig hw = {},
                 ConvTypes types = ConvTypes::kUint8, uint32_t groups = 1) {
    Harness h(hw);
    REQUIRE(h.runtime.init().ok());
    std::mt19937 rng(seed);
    const bool signedData = types == ConvTypes::kInt8 || types == ConvTypes::kInt8PerChannel;
    const bool perChannel = types == ConvTypes::kUint8PerChannel || types == ConvTypes::kInt8PerChannel;
    const uint32_t dataType = signedData ? 14 : 5;
    const int zpShift = signedData ? -128 : 0;  // int8 zero points and values are uint8's minus 128
    Quant qi{0.5f, int(rng() % 256) + zpShift}, qf{0.25f, int(rng() % 256) + zpShift},
        qo{3.0f + float(rng() % 8), int(rng() % 256) + zpShift};
    std::vector<float> channelScales;
    if (perChannel) {
        qf.zp = 0;
        for (uint32_t co = 0; co < c.cout; ++co) channelScales.push_back(0.05f * float(1 + rng() % 16));
    }
    uint32_t pl, pr, pt, pb;
    explicitPadding(c, &pl, &pr, &pt, &pb);
    const uint32_t oh = outSize(c.h, c.kh, c.sy, c.dy, pt, pb), ow = outSize(c.w, c.kw, c.sx, c.dx, pl, pr);
    auto in = randomBytes(rng, size_t(c.n) * c.h * c.w * c.cin);
    auto f = randomBytes(rng, size_t(c.cout) * c.kh * c.kw * c.cin / groups);
    auto bias = randomBias(rng, c.cout, 5000);
    // Bytes as the type reads them, minus the zero point.
    auto centred = [](const std::vector<uint8_t>& bytes, bool asSigned, int zp) {
        std::vector<int> v(bytes.size());
        for (size_t i = 0; i < bytes.size(); ++i)
            v[i] = (asSigned ? int(int8_t(bytes[i])) : int(bytes[i])) - zp;
        return v;
    };

    ModelBuilder mb(h);
    std::vector<uint32_t> inDims =
        c.nchw ? std::vector<uint32_t>{c.n, c.cin, c.h, c.w} : std::vector<uint32_t>{c.n, c.h, c.w, c.cin};
    std::vector<uint32_t> outDims =
        c.nchw ? std::vector<uint32_t>{c.n, c.cout, oh, ow} : std::vector<uint32_t>{c.n, oh, ow, c.cout};
    uint32_t x = mb.input(inDims, qi, dataType);
    uint32_t fo = mb.constant(perChannel ? 11 : dataType, {c.cout, c.kh, c.kw, c.cin / groups},
                              perChannel ? 0.0f : qf.scale, qf.zp, f.data(), f.size());
    if (perChannel) {
        mb.operands[fo].channelScales = channelScales.data();
        mb.operands[fo].channelScaleCount = c.cout;
        mb.operands[fo].channelDim = 0;
    }
    uint32_t bo =
        mb.constant(4, {c.cout}, perChannel ? 0.0f : qi.scale * qf.scale, 0, bias.data(), bias.size() * 4);
    uint32_t y = mb.output(outDims, qo, dataType);
    if (groups == 1) {
        mb.op(kConv, convolutionArgs(mb, c, {x, fo, bo}, 0), {y});
    } else {
        auto args = convolutionArgs(mb, c, {x, fo, bo}, groups);
        if (!c.nchw && !c.optionalArgs) args.push_back(mb.boolean(false));  // the layout is required
        mb.op(kGroupedConv, args, {y});
    }
    const ModelDesc& model = mb.build();

    const BlobInfo info = prepareClaimed(h, model);
    const auto mult =
        requantMultipliers(qi.scale, perChannel ? channelScales : std::vector<float>{qf.scale}, qo.scale);
    int lo, hi;
    refActRange(c.act, qo.scale, qo.zp, &lo, &hi, signedData);
    const auto values =
        refConv(c, centred(in, signedData, qi.zp), centred(f, signedData || perChannel, qf.zp), bias, mult,
                qo.zp, lo, hi, pl, pt, oh, ow, groups);
    std::vector<uint8_t> expect(values.size());
    for (size_t i = 0; i < values.size(); ++i) expect[i] = uint8_t(values[i]);  // the byte of a uint8 or int8
    Run r = execute(h, info, {in}, {expect.size()});
    INFO(r.status.message);
    REQUIRE(r.status.ok());
    CHECK(r.outputs[0] == expect);
    CHECK(r.result.deviceCycles > 0);
    CHECK(r.result.profileCount == 1);
    CHECK(r.result.profile[0].macs > 0);
    CHECK(r.result.outputs[0].rank == 4);
    CHECK(r.result.outputs[0].dims[3] == outDims[3]);
    CHECK(h.runtime.release(info.handle).ok());
    CHECK(h.runtime.loadedModels() == 0);
}

}  // namespace

TEST_CASE("CONV_2D explicit padding, NHWC, shapes/strides/activations") {
    // n h w cin cout kh kw sx sy dx dy implicit scheme pl pr pt pb act nchw opt
    runConvCase({1, 5, 5, 3, 4, 3, 3, 1, 1, 1, 1, false, 0, 1, 1, 1, 1, 0, false, false}, 1);
    runConvCase({2, 7, 6, 2, 5, 3, 2, 2, 1, 1, 1, false, 0, 0, 1, 2, 0, 1, false, false}, 2);
    runConvCase({1, 8, 8, 4, 3, 1, 1, 1, 1, 1, 1, false, 0, 0, 0, 0, 0, 2, false, false}, 3);
    runConvCase({1, 9, 9, 3, 6, 3, 3, 2, 2, 1, 1, false, 0, 1, 2, 1, 2, 3, false, true}, 4);
}

TEST_CASE("CONV_2D implicit padding SAME/VALID, dilation, NCHW") {
    runConvCase({1, 6, 6, 3, 4, 3, 3, 1, 1, 1, 1, true, 1, 0, 0, 0, 0, 1, false, false}, 5);
    runConvCase({1, 7, 5, 2, 3, 3, 3, 2, 2, 1, 1, true, 2, 0, 0, 0, 0, 0, false, false}, 6);
    runConvCase({1, 9, 9, 2, 3, 3, 3, 1, 1, 2, 2, true, 1, 0, 0, 0, 0, 0, false, true}, 7);
    runConvCase({2, 5, 6, 3, 4, 2, 3, 1, 2, 1, 1, true, 1, 0, 0, 0, 0, 3, true, false}, 8);
    runConvCase({1, 6, 6, 2, 2, 3, 3, 1, 1, 1, 1, false, 0, 2, 1, 1, 2, 0, true, false}, 9);
}

TEST_CASE("CONV_2D with TENSOR_QUANT8_ASYMM_SIGNED and per-channel filters, bit-exact") {
    // HAL 1.3: every operation taken for uint8 is taken for int8 too.
    const ConvTypes all[] = {ConvTypes::kInt8, ConvTypes::kUint8PerChannel, ConvTypes::kInt8PerChannel};
    uint32_t seed = 40;
    for (ConvTypes types : all) {
        runConvCase({1, 5, 5, 3, 4, 3, 3, 1, 1, 1, 1, false, 0, 1, 1, 1, 1, 0, false, false}, seed++, {},
                    types);
        runConvCase({2, 7, 6, 2, 5, 3, 2, 2, 1, 1, 1, false, 0, 0, 1, 2, 0, 1, false, false}, seed++, {},
                    types);
        runConvCase({1, 9, 9, 2, 3, 3, 3, 1, 1, 2, 2, true, 1, 0, 0, 0, 0, 2, false, true}, seed++, {},
                    types);
        runConvCase({2, 5, 6, 3, 4, 2, 3, 1, 2, 1, 1, true, 1, 0, 0, 0, 0, 3, true, false}, seed++, {},
                    types);
    }
    npu::sim::HwConfig hw;
    hw.scratchpadBytes = 16 << 10;
    hw.accumulatorBytes = 4 << 10;
    hw.arrayRows = hw.arrayCols = 8;
    runConvCase({1, 17, 13, 5, 70, 3, 3, 2, 1, 1, 2, false, 0, 2, 1, 1, 2, 3, true, true}, seed++, hw,
                ConvTypes::kInt8PerChannel);
}

TEST_CASE("GROUPED_CONV_2D bit-exact: groups, padding, strides, NCHW, int8, per-channel, tiling") {
    // n h w cin cout kh kw sx sy dx dy implicit scheme pl pr pt pb act nchw opt; groups
    runConvCase({1, 5, 5, 4, 6, 3, 3, 1, 1, 1, 1, false, 0, 1, 1, 1, 1, 0, false, false}, 170, {},
                ConvTypes::kUint8, 2);
    runConvCase({2, 7, 6, 6, 9, 3, 2, 2, 1, 1, 1, true, 1, 0, 0, 0, 0, 1, false, false}, 171, {},
                ConvTypes::kInt8, 3);
    runConvCase({1, 6, 5, 8, 4, 2, 3, 1, 2, 1, 1, true, 2, 0, 0, 0, 0, 3, true, false}, 172, {},
                ConvTypes::kUint8PerChannel, 4);
    runConvCase({1, 4, 4, 6, 6, 3, 3, 1, 1, 1, 1, false, 0, 2, 1, 4, 5, 0, true, false}, 173, {},
                ConvTypes::kInt8PerChannel, 6);  // one channel per group; rows wholly in padding
    npu::sim::HwConfig hw;
    hw.scratchpadBytes = 16 << 10;
    hw.accumulatorBytes = 4 << 10;
    hw.arrayRows = hw.arrayCols = 8;
    runConvCase({1, 17, 13, 20, 70, 3, 3, 2, 1, 1, 1, false, 0, 2, 1, 1, 2, 3, false, false}, 174, hw,
                ConvTypes::kInt8, 2);  // channel and row tiles per group
}

TEST_CASE("CONV_2D tiles rows and output channels on a small scratchpad") {
    npu::sim::HwConfig hw;
    hw.scratchpadBytes = 16 << 10;
    hw.accumulatorBytes = 4 << 10;
    hw.arrayRows = hw.arrayCols = 8;
    runConvCase({2, 20, 20, 8, 40, 3, 3, 1, 1, 1, 1, true, 1, 0, 0, 0, 0, 1, false, false}, 10, hw);
    runConvCase({1, 17, 13, 5, 70, 3, 3, 2, 1, 1, 2, false, 0, 2, 1, 1, 2, 3, true, true}, 11, hw);
}

namespace {

// DEPTHWISE_CONV_2D: c.cin input channels, c.cout = c.cin * multiplier output channels; output
// channel co reads input channel co / multiplier; filter [1][kh][kw][cout].
std::vector<int> refDepthwise(const ConvCase& c, uint32_t multiplier, const std::vector<int>& in,
                              const std::vector<int>& f, const std::vector<int32_t>& bias,
                              const std::vector<std::pair<int32_t, int>>& mult, int outZp, int lo, int hi,
                              uint32_t pl, uint32_t pt, uint32_t oh, uint32_t ow) {
    auto inAt = [&](uint32_t b, uint32_t y, uint32_t x, uint32_t ch) {
        return c.nchw ? in[((b * c.cin + ch) * c.h + y) * c.w + x]
                      : in[((b * c.h + y) * c.w + x) * c.cin + ch];
    };
    std::vector<int> out(size_t(c.n) * oh * ow * c.cout);
    for (uint32_t b = 0; b < c.n; ++b)
        for (uint32_t oy = 0; oy < oh; ++oy)
            for (uint32_t ox = 0; ox < ow; ++ox)
                for (uint32_t co = 0; co < c.cout; ++co) {
                    int32_t acc = 0;
                    for (uint32_t ky = 0; ky < c.kh; ++ky)
                        for (uint32_t kx = 0; kx < c.kw; ++kx) {
                            int y = int(oy * c.sy + ky * c.dy) - int(pt),
                                x = int(ox * c.sx + kx * c.dx) - int(pl);
                            if (y < 0 || x < 0 || y >= int(c.h) || x >= int(c.w)) continue;
                            acc += inAt(b, y, x, co / multiplier) * f[(ky * c.kw + kx) * c.cout + co];
                        }
                    acc += bias[co];
                    const auto& [m, sh] = mult[mult.size() == 1 ? 0 : co];
                    int v = std::min(hi, std::max(lo, refMbqm(acc, m, sh) + outZp));
                    size_t o = c.nchw ? ((size_t(b) * c.cout + co) * oh + oy) * ow + ox
                                      : ((size_t(b) * oh + oy) * ow + ox) * c.cout + co;
                    out[o] = v;
                }
    return out;
}

// A DEPTHWISE_CONV_2D case (c.cout must be c.cin * multiplier), compiled, run on the simulator
// and compared byte for byte with refDepthwise.
void runDepthwiseCase(const ConvCase& c, uint32_t multiplier, uint32_t seed, npu::sim::HwConfig hw = {},
                      ConvTypes types = ConvTypes::kUint8) {
    REQUIRE(c.cout == c.cin * multiplier);
    Harness h(hw);
    REQUIRE(h.runtime.init().ok());
    std::mt19937 rng(seed);
    const bool signedData = types == ConvTypes::kInt8 || types == ConvTypes::kInt8PerChannel;
    const bool perChannel = types == ConvTypes::kUint8PerChannel || types == ConvTypes::kInt8PerChannel;
    const uint32_t dataType = signedData ? 14 : 5;
    const int zpShift = signedData ? -128 : 0;
    Quant qi{0.5f, int(rng() % 256) + zpShift}, qf{0.25f, int(rng() % 256) + zpShift},
        qo{1.0f + float(rng() % 8), int(rng() % 256) + zpShift};
    std::vector<float> channelScales;
    if (perChannel) {
        qf.zp = 0;
        for (uint32_t co = 0; co < c.cout; ++co) channelScales.push_back(0.05f * float(1 + rng() % 16));
    }
    uint32_t pl, pr, pt, pb;
    explicitPadding(c, &pl, &pr, &pt, &pb);
    const uint32_t oh = outSize(c.h, c.kh, c.sy, c.dy, pt, pb), ow = outSize(c.w, c.kw, c.sx, c.dx, pl, pr);
    auto in = randomBytes(rng, size_t(c.n) * c.h * c.w * c.cin);
    auto f = randomBytes(rng, size_t(c.cout) * c.kh * c.kw);
    auto bias = randomBias(rng, c.cout, 5000);
    auto centred = [](const std::vector<uint8_t>& bytes, bool asSigned, int zp) {
        std::vector<int> v(bytes.size());
        for (size_t i = 0; i < bytes.size(); ++i)
            v[i] = (asSigned ? int(int8_t(bytes[i])) : int(bytes[i])) - zp;
        return v;
    };
    ModelBuilder mb(h);
    std::vector<uint32_t> inDims =
        c.nchw ? std::vector<uint32_t>{c.n, c.cin, c.h, c.w} : std::vector<uint32_t>{c.n, c.h, c.w, c.cin};
    std::vector<uint32_t> outDims =
        c.nchw ? std::vector<uint32_t>{c.n, c.cout, oh, ow} : std::vector<uint32_t>{c.n, oh, ow, c.cout};
    uint32_t x = mb.input(inDims, qi, dataType);
    uint32_t fo = mb.constant(perChannel ? 11 : dataType, {1, c.kh, c.kw, c.cout},
                              perChannel ? 0.0f : qf.scale, qf.zp, f.data(), f.size());
    if (perChannel) {
        mb.operands[fo].channelScales = channelScales.data();
        mb.operands[fo].channelScaleCount = c.cout;
        mb.operands[fo].channelDim = 3;
    }
    uint32_t bo =
        mb.constant(4, {c.cout}, perChannel ? 0.0f : qi.scale * qf.scale, 0, bias.data(), bias.size() * 4);
    uint32_t y = mb.output(outDims, qo, dataType);
    mb.op(kDepthwise, convolutionArgs(mb, c, {x, fo, bo}, multiplier), {y});
    const ModelDesc& model = mb.build();

    const BlobInfo info = prepareClaimed(h, model);
    const auto mult =
        requantMultipliers(qi.scale, perChannel ? channelScales : std::vector<float>{qf.scale}, qo.scale);
    int lo, hi;
    refActRange(c.act, qo.scale, qo.zp, &lo, &hi, signedData);
    const auto values =
        refDepthwise(c, multiplier, centred(in, signedData, qi.zp),
                     centred(f, signedData || perChannel, qf.zp), bias, mult, qo.zp, lo, hi, pl, pt, oh, ow);
    std::vector<uint8_t> expect(values.size());
    for (size_t i = 0; i < values.size(); ++i) expect[i] = uint8_t(values[i]);
    Run r = execute(h, info, {in}, {expect.size()});
    INFO(r.status.message);
    REQUIRE(r.status.ok());
    CHECK(r.outputs[0] == expect);
    CHECK(r.result.profileCount == 1);
    CHECK(r.result.profile[0].macs > 0);
    CHECK(h.runtime.release(info.handle).ok());
}

}  // namespace

TEST_CASE("DEPTHWISE_CONV_2D explicit padding, NHWC, shapes/strides/activations, bit-exact") {
    // n h w cin cout kh kw sx sy dx dy implicit scheme pl pr pt pb act nchw opt; multiplier
    runDepthwiseCase({1, 5, 5, 3, 3, 3, 3, 1, 1, 1, 1, false, 0, 1, 1, 1, 1, 0, false, false}, 1, 101);
    runDepthwiseCase({2, 7, 6, 4, 4, 3, 2, 2, 1, 1, 1, false, 0, 0, 1, 2, 0, 1, false, false}, 1, 102);
    runDepthwiseCase({1, 8, 8, 5, 5, 1, 1, 1, 1, 1, 1, false, 0, 0, 0, 0, 0, 2, false, false}, 1, 103);
    runDepthwiseCase({1, 9, 9, 3, 3, 3, 3, 2, 2, 1, 1, false, 0, 1, 2, 1, 2, 3, false, true}, 1, 104);
    runDepthwiseCase({1, 6, 7, 2, 2, 3, 3, 1, 1, 1, 1, false, 0, 5, 4, 2, 2, 0, false, false}, 1,
                     105);  // wide left/right pad
}

TEST_CASE("DEPTHWISE_CONV_2D implicit padding SAME/VALID, dilation, NCHW, depth multiplier") {
    runDepthwiseCase({1, 6, 6, 3, 3, 3, 3, 1, 1, 1, 1, true, 1, 0, 0, 0, 0, 1, false, false}, 1, 111);
    runDepthwiseCase({1, 7, 5, 2, 2, 3, 3, 2, 2, 1, 1, true, 2, 0, 0, 0, 0, 0, false, false}, 1, 112);
    runDepthwiseCase({1, 9, 9, 2, 2, 3, 3, 1, 1, 2, 2, true, 1, 0, 0, 0, 0, 0, false, true}, 1, 113);
    runDepthwiseCase({2, 5, 6, 3, 3, 2, 3, 1, 2, 1, 1, true, 1, 0, 0, 0, 0, 3, true, false}, 1, 114);
    runDepthwiseCase({1, 6, 6, 2, 2, 3, 3, 1, 1, 1, 1, false, 0, 2, 1, 1, 2, 0, true, false}, 1, 115);
    // depth multiplier 2 and 3, NHWC and NCHW
    runDepthwiseCase({1, 5, 5, 2, 4, 3, 3, 1, 1, 1, 1, false, 0, 1, 1, 1, 1, 0, false, false}, 2, 116);
    runDepthwiseCase({2, 7, 6, 3, 9, 3, 2, 2, 1, 1, 1, true, 1, 0, 0, 0, 0, 1, false, false}, 3, 117);
    runDepthwiseCase({1, 6, 5, 2, 6, 2, 2, 1, 1, 2, 1, true, 1, 0, 0, 0, 0, 3, true, true}, 3, 118);
    runDepthwiseCase({1, 4, 4, 1, 4, 2, 2, 1, 1, 1, 1, true, 2, 0, 0, 0, 0, 0, true, false}, 4, 119);
}

TEST_CASE("DEPTHWISE_CONV_2D with TENSOR_QUANT8_ASYMM_SIGNED and per-channel filters, bit-exact") {
    const ConvTypes all[] = {ConvTypes::kInt8, ConvTypes::kUint8PerChannel, ConvTypes::kInt8PerChannel};
    uint32_t seed = 140;
    for (ConvTypes types : all) {
        runDepthwiseCase({1, 5, 5, 3, 3, 3, 3, 1, 1, 1, 1, false, 0, 1, 1, 1, 1, 0, false, false}, 1, seed++,
                         {}, types);
        runDepthwiseCase({2, 7, 6, 2, 4, 3, 2, 2, 1, 1, 1, false, 0, 0, 1, 2, 0, 1, false, false}, 2, seed++,
                         {}, types);
        runDepthwiseCase({1, 9, 9, 2, 2, 3, 3, 1, 1, 2, 2, true, 1, 0, 0, 0, 0, 2, false, true}, 1, seed++,
                         {}, types);
        runDepthwiseCase({2, 5, 6, 3, 6, 2, 3, 1, 2, 1, 1, true, 1, 0, 0, 0, 0, 3, true, false}, 2, seed++,
                         {}, types);
    }
}

TEST_CASE("DEPTHWISE_CONV_2D tiles rows and channels on a small scratchpad") {
    npu::sim::HwConfig hw;
    hw.scratchpadBytes = 16 << 10;
    hw.accumulatorBytes = 4 << 10;
    hw.arrayRows = hw.arrayCols = 8;
    runDepthwiseCase({2, 20, 20, 40, 40, 3, 3, 1, 1, 1, 1, true, 1, 0, 0, 0, 0, 1, false, false}, 1, 150, hw);
    runDepthwiseCase({1, 17, 13, 24, 72, 3, 3, 2, 1, 1, 2, false, 0, 2, 1, 1, 2, 3, true, true}, 3, 151, hw,
                     ConvTypes::kInt8PerChannel);
    runDepthwiseCase({1, 30, 30, 100, 100, 3, 3, 1, 1, 1, 1, true, 1, 0, 0, 0, 0, 0, false, false}, 1, 152,
                     hw, ConvTypes::kInt8);
    // Channel tiles of whole depth-multiplier groups (50 channels: 25 does not split into
    // groups of 2, so 12), NHWC and NCHW.
    runDepthwiseCase({1, 10, 16, 25, 50, 3, 3, 1, 1, 1, 1, true, 1, 0, 0, 0, 0, 1, false, false}, 2, 153, hw);
    runDepthwiseCase({1, 10, 16, 14, 42, 3, 3, 1, 1, 1, 1, true, 1, 0, 0, 0, 0, 2, true, false}, 3, 154, hw,
                     ConvTypes::kUint8PerChannel);
}

namespace {

// Flips uint8 bytes to the int8 bytes of the same real values (zero point minus 128).
// signedData: the same case as TENSOR_QUANT8_ASYMM_SIGNED, every zero point and value shifted by
// -128; the outputs must be the uint8 ones shifted likewise (the HAL 1.3 rule for signed ops).
// outScale: the output scale (a coarse one keeps long sums off the clamps, so every weight counts).
void runFc(uint32_t batch, uint32_t inputSize, uint32_t units, int act, uint32_t seed, bool rank4Input,
           npu::sim::HwConfig hw = {}, bool signedData = false, float outScale = 0.7f) {
    Harness h(hw);
    REQUIRE(h.runtime.init().ok());
    std::mt19937 rng(seed);
    Quant qi{0.1f, int(rng() % 256)}, qw{0.05f, int(rng() % 256)}, qo{outScale, int(rng() % 256)};
    auto in = randomBytes(rng, size_t(batch) * inputSize);
    auto w = randomBytes(rng, size_t(units) * inputSize);
    auto bias = randomBias(rng, units, 3000);
    ModelBuilder mb(h);
    const uint32_t type = signedData ? 14 : 5;
    const int shift = signedData ? -128 : 0;
    const auto wBytes = signedData ? toInt8(w) : w;
    const Quant sqi{qi.scale, qi.zp + shift}, sqo{qo.scale, qo.zp + shift};
    uint32_t x =
        rank4Input ? mb.input({batch, 1, 1, inputSize}, sqi, type) : mb.input({batch, inputSize}, sqi, type);
    uint32_t wo =
        mb.constant(type, {units, inputSize}, qw.scale, qw.zp + shift, wBytes.data(), wBytes.size());
    uint32_t bo = mb.constant(4, {units}, qi.scale * qw.scale, 0, bias.data(), bias.size() * 4);
    uint32_t y = mb.output({batch, units}, sqo, type);
    mb.op(kFc, {x, wo, bo, mb.i32(act)}, {y});
    const ModelDesc& model = mb.build();
    Arena scratch(h.scratchMem.data(), h.scratchMem.size());
    BlobInfo info;
    FwStatus st = h.runtime.prepare(model, scratch, &info);
    INFO(st.message);
    REQUIRE(st.ok());
    int32_t m;
    int s;
    refQuantizeMultiplier(double(qi.scale) * double(qw.scale) / double(qo.scale), &m, &s);
    int lo, hi;
    refActRange(act, qo.scale, qo.zp, &lo, &hi);
    std::vector<uint8_t> expect(size_t(batch) * units);
    for (uint32_t b = 0; b < batch; ++b)
        for (uint32_t u = 0; u < units; ++u) {
            int32_t acc = bias[u];
            for (uint32_t k = 0; k < inputSize; ++k)
                acc += (int(in[b * inputSize + k]) - qi.zp) * (int(w[u * inputSize + k]) - qw.zp);
            expect[b * units + u] = uint8_t(std::min(hi, std::max(lo, refMbqm(acc, m, s) + qo.zp)));
        }
    if (signedData) expect = toInt8(expect);
    Run r = execute(h, info, {signedData ? toInt8(in) : in}, {expect.size()});
    INFO(r.status.message);
    REQUIRE(r.status.ok());
    CHECK(r.outputs[0] == expect);
    CHECK(r.result.profile[0].macs == uint64_t(batch) * inputSize * units);
}

}  // namespace

TEST_CASE("FULLY_CONNECTED bit-exact, flattening, activations, tiling") {
    runFc(1, 16, 8, 0, 20, false);
    runFc(3, 40, 10, 1, 21, true);
    runFc(4, 33, 7, 2, 22, false);
    runFc(2, 64, 50, 3, 23, false);
    npu::sim::HwConfig hw;
    hw.scratchpadBytes = 8 << 10;
    hw.accumulatorBytes = 2 << 10;
    runFc(37, 300, 45, 1, 24, false, hw);
}

TEST_CASE("FULLY_CONNECTED with TENSOR_QUANT8_ASYMM_SIGNED equals uint8 shifted by 128") {
    runFc(1, 16, 8, 0, 60, false, {}, true);
    runFc(3, 40, 10, 1, 61, true, {}, true);
    runFc(4, 33, 7, 2, 62, false, {}, true);
    runFc(2, 64, 50, 3, 63, false, {}, true);
}

namespace {

void runAdd(std::vector<uint32_t> da, std::vector<uint32_t> db, int act, uint32_t seed,
            npu::sim::HwConfig hw = {}, bool signedData = false) {
    Harness h(hw);
    REQUIRE(h.runtime.init().ok());
    std::mt19937 rng(seed);
    Quant qa{0.02f + float(rng() % 10) * 0.01f, int(rng() % 256)}, qb{0.05f, int(rng() % 256)},
        qo{0.1f, int(rng() % 256)};
    size_t rank = std::max(da.size(), db.size());
    std::vector<uint32_t> pa(4, 1), pb(4, 1), po(4, 1);
    for (size_t i = 0; i < da.size(); ++i) pa[4 - da.size() + i] = da[i];
    for (size_t i = 0; i < db.size(); ++i) pb[4 - db.size() + i] = db[i];
    for (int i = 0; i < 4; ++i) po[i] = std::max(pa[i], pb[i]);
    std::vector<uint32_t> outDims(po.end() - rank, po.end());
    size_t na = 1, nb = 1, no = 1;
    for (int i = 0; i < 4; ++i) {
        na *= pa[i];
        nb *= pb[i];
        no *= po[i];
    }
    auto a = randomBytes(rng, na), b = randomBytes(rng, nb);
    ModelBuilder mb(h);
    const uint32_t type = signedData ? 14 : 5;
    const int shift = signedData ? -128 : 0;
    uint32_t x = mb.input(da, {qa.scale, qa.zp + shift}, type),
             y = mb.input(db, {qb.scale, qb.zp + shift}, type);
    uint32_t z = mb.output(outDims, {qo.scale, qo.zp + shift}, type);
    mb.op(kAdd, {x, y, mb.i32(act)}, {z});
    const ModelDesc& model = mb.build();
    Arena scratch(h.scratchMem.data(), h.scratchMem.size());
    BlobInfo info;
    FwStatus st = h.runtime.prepare(model, scratch, &info);
    INFO(st.message);
    REQUIRE(st.ok());
    // TFLite add.cc Prepare + reference Add for uint8.
    const int ls = 20;
    const double twiceMax = 2 * std::max(qa.scale, qb.scale);
    int32_t m1, m2, mo;
    int s1, s2, so;
    refQuantizeMultiplier(qa.scale / twiceMax, &m1, &s1);
    refQuantizeMultiplier(qb.scale / twiceMax, &m2, &s2);
    refQuantizeMultiplier(twiceMax / ((1 << ls) * qo.scale), &mo, &so);
    int lo, hi;
    refActRange(act, qo.scale, qo.zp, &lo, &hi);
    std::vector<uint8_t> expect(no);
    for (uint32_t i0 = 0; i0 < po[0]; ++i0)
        for (uint32_t i1 = 0; i1 < po[1]; ++i1)
            for (uint32_t i2 = 0; i2 < po[2]; ++i2)
                for (uint32_t i3 = 0; i3 < po[3]; ++i3) {
                    auto idx = [&](const std::vector<uint32_t>& d) {
                        return (((i0 % d[0]) * d[1] + i1 % d[1]) * d[2] + i2 % d[2]) * d[3] + i3 % d[3];
                    };
                    int32_t x1 = (a[idx(pa)] - qa.zp) * (1 << ls), x2 = (b[idx(pb)] - qb.zp) * (1 << ls);
                    int32_t sum = refMbqm(x1, m1, s1) + refMbqm(x2, m2, s2);
                    int v = refMbqm(sum, mo, so) + qo.zp;
                    expect[idx(po)] = uint8_t(std::min(hi, std::max(lo, v)));
                }
    if (signedData) expect = toInt8(expect);
    Run r = execute(h, info, {signedData ? toInt8(a) : a, signedData ? toInt8(b) : b}, {no});
    INFO(r.status.message);
    REQUIRE(r.status.ok());
    CHECK(r.outputs[0] == expect);
}

}  // namespace

TEST_CASE("ADD bit-exact with broadcasting and activations") {
    runAdd({2, 3, 4, 5}, {2, 3, 4, 5}, 0, 30);
    runAdd({2, 3, 4, 5}, {5}, 1, 31);
    runAdd({4, 1}, {4, 5}, 2, 32);
    runAdd({1, 3, 1, 5}, {2, 1, 4, 1}, 3, 33);
    runAdd({7}, {1}, 0, 34);
    npu::sim::HwConfig hw;
    hw.scratchpadBytes = 4 << 10;
    runAdd({3, 40, 50}, {40, 1}, 1, 35, hw);
    runAdd({2, 3000}, {1, 3000}, 0, 36, hw);
}

TEST_CASE("ADD with TENSOR_QUANT8_ASYMM_SIGNED equals uint8 shifted by 128") {
    runAdd({2, 3, 4, 5}, {5}, 1, 64, {}, true);
    runAdd({1, 3, 1, 5}, {2, 1, 4, 1}, 3, 65, {}, true);
    runAdd({4, 1}, {4, 5}, 2, 66, {}, true);
    runAdd({7}, {1}, 0, 67, {}, true);
}

TEST_CASE("multi-operation model: FC -> ADD through a temporary, per-op profile") {
    Harness h;
    REQUIRE(h.runtime.init().ok());
    std::mt19937 rng(40);
    Quant q{0.1f, 128};
    auto w = randomBytes(rng, 6 * 8);
    auto bias = randomBias(rng, 6, 100);
    auto in = randomBytes(rng, 2 * 8), other = randomBytes(rng, 6);
    ModelBuilder mb(h);
    uint32_t x = mb.input({2, 8}, q);
    uint32_t o = mb.input({6}, q);
    uint32_t wo = mb.constant(5, {6, 8}, 0.1f, 128, w.data(), w.size());
    uint32_t bo = mb.constant(4, {6}, 0.01f, 0, bias.data(), bias.size() * 4);
    uint32_t t = mb.temp({2, 6}, Quant{0.5f, 100});
    uint32_t y = mb.output({2, 6}, Quant{0.6f, 90});
    mb.op(kFc, {x, wo, bo, mb.i32(0)}, {t});
    mb.op(kAdd, {t, o, mb.i32(1)}, {y});
    const ModelDesc& model = mb.build();
    Arena scratch(h.scratchMem.data(), h.scratchMem.size());
    BlobInfo info;
    REQUIRE(h.runtime.prepare(model, scratch, &info).ok());
    CHECK(info.numInputs == 2);
    CHECK(info.numOutputs == 1);
    Run r = execute(h, info, {in, other}, {12});
    REQUIRE(r.status.ok());
    REQUIRE(r.result.profileCount == 2);
    CHECK(r.result.profile[0].type == kFc);
    CHECK(r.result.profile[1].type == kAdd);
    CHECK(r.result.profile[0].cycles + r.result.profile[1].cycles == r.result.deviceCycles);
    // Same again: deterministic.
    Run r2 = execute(h, info, {in, other}, {12});
    CHECK(r2.outputs[0] == r.outputs[0]);
}

TEST_CASE("supportedOperations is false for unsupported variants") {
    Harness h;
    REQUIRE(h.runtime.init().ok());
    std::vector<uint8_t> f(4 * 9 * 2, 1);
    std::vector<int32_t> bias(4, 0);
    ModelBuilder mb(h);
    Quant q{0.5f, 10};
    uint32_t x = mb.input({1, 5, 5, 2}, q);
    uint32_t fo = mb.constant(5, {4, 3, 3, 2}, 0.5f, 0, f.data(), f.size());
    uint32_t bo = mb.constant(4, {4}, 0.25f, 0, bias.data(), 16);
    uint32_t y = mb.output({1, 5, 5, 4}, q);
    // 0: OK reference case
    mb.op(kConv, {x, fo, bo, mb.i32(1), mb.i32(1), mb.i32(1), mb.i32(0)}, {y});
    // 1: unknown activation
    mb.op(kConv, {x, fo, bo, mb.i32(1), mb.i32(1), mb.i32(1), mb.i32(4)}, {y});
    // 2: float input
    uint32_t xf = mb.tensor(3, {1, 5, 5, 2}, 0, 0, 1);
    mb.op(kConv, {xf, fo, bo, mb.i32(1), mb.i32(1), mb.i32(1), mb.i32(0)}, {y});
    // 3: non-constant filter
    uint32_t fv = mb.tensor(5, {4, 3, 3, 2}, 0.5f, 0, 1);
    mb.op(kConv, {x, fv, bo, mb.i32(1), mb.i32(1), mb.i32(1), mb.i32(0)}, {y});
    // 4: another operation type (MUL)
    mb.op(18, {x, x, mb.i32(0)}, {y});
    // 5: wrong output shape
    uint32_t yBad = mb.output({1, 4, 4, 4}, q);
    mb.op(kConv, {x, fo, bo, mb.i32(1), mb.i32(1), mb.i32(1), mb.i32(0)}, {yBad});
    // 6: ADD of non-broadcastable shapes
    uint32_t a3 = mb.input({3}, q), a4 = mb.input({4}, q);
    uint32_t yAdd = mb.output({4}, q);
    mb.op(kAdd, {a3, a4, mb.i32(0)}, {yAdd});
    // 7: per-channel filter without its channel scales
    uint32_t fpc = mb.constant(11, {4, 3, 3, 2}, 0, 0, f.data(), f.size());
    mb.op(kConv, {x, fpc, bo, mb.i32(1), mb.i32(1), mb.i32(1), mb.i32(0)}, {y});
    // 8: unknown dimension
    uint32_t xu = mb.input({1, 0, 5, 2}, q);
    mb.op(kConv, {xu, fo, bo, mb.i32(1), mb.i32(1), mb.i32(1), mb.i32(0)}, {y});
    // 9: ADD of int8 inputs into a uint8 output (types must match)
    uint32_t s1 = mb.tensor(14, {4}, 0.5f, 0, 1);
    mb.op(kAdd, {s1, s1, mb.i32(0)}, {yAdd});
    // 10: padding as large as the filter
    mb.op(kConv, {x, fo, bo, mb.i32(0), mb.i32(0), mb.i32(3), mb.i32(0), mb.i32(1), mb.i32(1), mb.i32(0)},
          {y});
    // 11: DEPTHWISE_CONV_2D with padding as large as the filter
    std::vector<uint8_t> fd(9 * 2, 1);
    std::vector<int32_t> biasD(2, 0);
    uint32_t fdo = mb.constant(5, {1, 3, 3, 2}, 0.5f, 0, fd.data(), fd.size());
    uint32_t bdo = mb.constant(4, {2}, 0.25f, 0, biasD.data(), 8);
    uint32_t yd = mb.output({1, 5, 5, 2}, q);
    mb.op(
        kDepthwise,
        {x, fdo, bdo, mb.i32(0), mb.i32(0), mb.i32(3), mb.i32(0), mb.i32(1), mb.i32(1), mb.i32(1), mb.i32(0)},
        {yd});
    // 12: DEPTHWISE_CONV_2D whose filter depth is not input depth x multiplier
    mb.op(kDepthwise, {x, fdo, bdo, mb.i32(1), mb.i32(1), mb.i32(1), mb.i32(2), mb.i32(0)}, {yd});
    // 13: DEPTHWISE_CONV_2D with a per-channel filter quantized along dimension 0
    uint32_t fdpc = mb.constant(11, {1, 3, 3, 2}, 0, 0, fd.data(), fd.size());
    static const float kScales[1] = {0.5f};
    mb.operands[fdpc].channelScales = kScales;
    mb.operands[fdpc].channelScaleCount = 1;
    mb.operands[fdpc].channelDim = 0;
    mb.op(kDepthwise, {x, fdpc, bdo, mb.i32(1), mb.i32(1), mb.i32(1), mb.i32(1), mb.i32(0)}, {yd});
    // 14: a valid DEPTHWISE_CONV_2D is claimed (checked below)
    mb.op(kDepthwise, {x, fdo, bdo, mb.i32(1), mb.i32(1), mb.i32(1), mb.i32(1), mb.i32(0)}, {yd});
    const ModelDesc& model = mb.build();
    std::vector<uint8_t> raw(model.operationCount, 1);
    bool supported[16];
    REQUIRE(h.runtime.supportedOperations(model, supported).ok());
    CHECK(supported[0]);
    CHECK(supported[14]);
    for (uint32_t i = 1; i < 14; ++i) {
        INFO("operation " << i);
        CHECK_FALSE(supported[i]);
        // The reason is the compiler's check, naming the operation.
        const FwStatus why = h.runtime.unsupportedReason(model, supported, i);
        CHECK_FALSE(why.ok());
        CHECK_THAT(why.message, Catch::StartsWith("operation " + std::to_string(i) + " ("));
    }
    CHECK(h.runtime.unsupportedReason(model, supported, 0).ok());
    CHECK(h.runtime.unsupportedReason(model, supported, 14).ok());
    CHECK_THAT(h.runtime.unsupportedReason(model, supported, 4).message, Catch::Contains("MUL"));
    CHECK_FALSE(h.runtime.unsupportedReason(model, supported, 15).ok());  // no such operation
}

TEST_CASE("prepare rejects an unsupported model with a message naming the operation") {
    Harness h;
    REQUIRE(h.runtime.init().ok());
    ModelBuilder mb(h);
    Quant q{0.5f, 10};
    uint32_t x = mb.input({4}, q), y = mb.output({4}, q);
    mb.op(kAdd, {x, x, mb.i32(7)}, {y});
    Arena scratch(h.scratchMem.data(), h.scratchMem.size());
    BlobInfo info;
    FwStatus st = h.runtime.prepare(mb.build(), scratch, &info);
    CHECK(st.code == Code::kInvalidArgument);
    CHECK(std::string(st.message).find("operation 0 (ADD)") != std::string::npos);
    CHECK(h.runtime.loadedModels() == 0);
}

TEST_CASE("CONV_2D and DEPTHWISE_CONV_2D paddings past the dilated filter: bias-only rows, bit-exact") {
    // n h w cin cout kh kw sx sy dx dy implicit scheme pl pr pt pb act nchw opt
    // Top padding 3 >= dilated height 2, bottom 4; left/right past the filter too.
    runDepthwiseCase({1, 4, 4, 3, 3, 2, 2, 1, 1, 1, 1, false, 0, 0, 0, 3, 4, 0, false, false}, 1, 160);
    runDepthwiseCase({1, 5, 4, 2, 4, 2, 2, 1, 2, 1, 1, false, 0, 3, 4, 5, 6, 1, true, false}, 2, 161, {},
                     ConvTypes::kInt8PerChannel);
    runConvCase({1, 4, 5, 3, 4, 1, 1, 1, 1, 1, 1, false, 0, 1, 2, 2, 3, 0, false, false}, 162);
    runConvCase({2, 6, 4, 2, 3, 3, 2, 1, 2, 2, 1, false, 0, 4, 0, 7, 9, 3, true, true}, 163, {},
                ConvTypes::kInt8);
    // Tiles of whole padding rows on a small scratchpad.
    npu::sim::HwConfig hw;
    hw.scratchpadBytes = 16 << 10;
    hw.accumulatorBytes = 4 << 10;
    hw.arrayRows = hw.arrayCols = 8;
    runConvCase({1, 9, 12, 8, 40, 3, 3, 1, 1, 1, 1, false, 0, 1, 1, 12, 15, 1, false, false}, 164, hw);
    runDepthwiseCase({1, 9, 12, 40, 40, 3, 3, 1, 1, 1, 1, false, 0, 1, 1, 12, 15, 0, false, false}, 1, 165,
                     hw);
}

namespace {

// A small CNN + classifier: CONV 24x24x16 -> 32 (3x3), DEPTHWISE_CONV 3x3, CONV -> 64 (3x3,
// stride 2), FC 9216 -> 64.
struct TunedRun {
    Run run;
    BlobInfo info;
};
TunedRun runTuningNetwork(bool autotune, npu::sim::HwConfig hw = {}) {
    Harness h(hw, autotune);
    REQUIRE(h.runtime.init().ok());
    std::mt19937 rng(77);
    ModelBuilder mb(h);
    Quant q{0.05f, 128}, qw{0.01f, 120};
    uint32_t x = mb.input({1, 24, 24, 16}, q);
    std::vector<std::vector<uint8_t>> weights;
    std::vector<std::vector<int32_t>> biases;
    uint32_t c = 16, size = 24;
    for (auto [cout, stride] : {std::pair<uint32_t, uint32_t>{32, 1}, {64, 2}}) {
        weights.push_back(randomBytes(rng, size_t(cout) * 9 * c));
        biases.push_back(randomBias(rng, cout, 2000));
        uint32_t f =
            mb.constant(5, {cout, 3, 3, c}, qw.scale, qw.zp, weights.back().data(), weights.back().size());
        uint32_t b =
            mb.constant(4, {cout}, q.scale * qw.scale, 0, biases.back().data(), biases.back().size() * 4);
        size = (size + stride - 1) / stride;
        uint32_t y = mb.temp({1, size, size, cout}, q);
        mb.op(kConv, {x, f, b, mb.i32(1), mb.i32(int(stride)), mb.i32(int(stride)), mb.i32(1)}, {y});
        x = y;
        c = cout;
        if (stride == 1) {  // then a 3x3 DEPTHWISE_CONV_2D (depth multiplier 1), tuned like the rest
            weights.push_back(randomBytes(rng, size_t(9) * c));
            biases.push_back(randomBias(rng, c, 2000));
            uint32_t fd =
                mb.constant(5, {1, 3, 3, c}, qw.scale, qw.zp, weights.back().data(), weights.back().size());
            uint32_t bd =
                mb.constant(4, {c}, q.scale * qw.scale, 0, biases.back().data(), biases.back().size() * 4);
            uint32_t yd = mb.temp({1, size, size, c}, q);
            mb.op(kDepthwise, {x, fd, bd, mb.i32(1), mb.i32(1), mb.i32(1), mb.i32(1), mb.i32(1)}, {yd});
            x = yd;
        }
    }
    const uint32_t features = size * size * c;
    weights.push_back(randomBytes(rng, size_t(64) * features));
    biases.push_back(randomBias(rng, 64, 2000));
    uint32_t f =
        mb.constant(5, {64, features}, qw.scale, qw.zp, weights.back().data(), weights.back().size());
    uint32_t b = mb.constant(4, {64}, q.scale * qw.scale, 0, biases.back().data(), biases.back().size() * 4);
    uint32_t out = mb.output({1, 64}, q);
    mb.op(kFc, {x, f, b, mb.i32(0)}, {out});
    const ModelDesc& model = mb.build();
    Arena scratch(h.scratchMem.data(), h.scratchMem.size());
    TunedRun r;
    FwStatus st = h.runtime.prepare(model, scratch, &r.info);
    INFO(st.message);
    REQUIRE(st.ok());
    r.run = execute(h, r.info, {randomBytes(rng, 24 * 24 * 16)}, {64});
    REQUIRE(r.run.status.ok());
    return r;
}

}  // namespace

TEST_CASE("autotuning picks per-operation tilings: same outputs, never more cycles") {
    for (bool smallNpu : {false, true}) {
        npu::sim::HwConfig hw;
        if (smallNpu) {
            hw.scratchpadBytes = 32 << 10;
            hw.accumulatorBytes = 8 << 10;
        }
        const TunedRun greedy = runTuningNetwork(false, hw);
        const TunedRun tuned = runTuningNetwork(true, hw);
        CHECK(greedy.info.tuningTrials == 0);
        CHECK(tuned.info.tuningTrials > 1);
        CHECK(tuned.run.outputs == greedy.run.outputs);  // tiling never changes arithmetic
        // The trial with the planner's choices is the greedy compile; the tuned blob runs in
        // exactly the cycles the tuner predicted, and never in more than the greedy one.
        CHECK(tuned.info.greedyCycles == greedy.run.result.deviceCycles);
        CHECK(tuned.run.result.deviceCycles == tuned.info.tunedCycles);
        CHECK(tuned.run.result.deviceCycles <= greedy.run.result.deviceCycles);
        WARN("autotuning (scratchpad "
             << hw.scratchpadBytes / 1024 << " KiB): greedy " << greedy.run.result.deviceCycles
             << " cycles, tuned " << tuned.run.result.deviceCycles << " cycles, " << tuned.info.tuningTrials
             << " trials");
    }
}

TEST_CASE("the 32-bit accumulator: models that could wrap are refused, the largest that cannot are exact") {
    // CONV_2D 1x1 of one channel: out = MBQM(x * w + bias) + zp, uint8, zero points 0, w = 200.
    auto conv = [](Harness& h, ModelBuilder& mb, int32_t bias, uint32_t* x) {
        REQUIRE(h.runtime.init().ok());
        static const uint8_t w = 200;
        *x = mb.input({1, 2, 2, 1}, {1.0f, 0});
        const uint32_t fo = mb.constant(5, {1, 1, 1, 1}, 1.0f, 0, &w, 1);
        const uint32_t bo = mb.constant(4, {1}, 1.0f, 0, &bias, 4);
        const uint32_t y = mb.output({1, 2, 2, 1}, {float(1 << 24), 0});
        mb.op(kConv,
              {*x, fo, bo, mb.i32(0), mb.i32(0), mb.i32(0), mb.i32(0), mb.i32(1), mb.i32(1), mb.i32(0)}, {y});
    };
    SECTION("a bias within 200 x 255 of INT32_MAX is refused, naming the operation") {
        Harness h;
        ModelBuilder mb(h);
        uint32_t x;
        conv(h, mb, INT32_MAX - 200 * 255 + 1, &x);
        expectRefused(h, mb, "CONV_2D", "worst-case accumulator 2147483648");
    }
    SECTION("a negative extreme bias likewise") {
        Harness h;
        ModelBuilder mb(h);
        uint32_t x;
        conv(h, mb, INT32_MIN + 1, &x);
        expectRefused(h, mb, "CONV_2D", "exceeds int32");
    }
    SECTION("the largest bias that cannot wrap runs bit-exact") {
        Harness h;
        ModelBuilder mb(h);
        uint32_t x;
        const int32_t bias = INT32_MAX - 200 * 255;
        conv(h, mb, bias, &x);
        const BlobInfo info = prepareClaimed(h, mb.build());
        const std::vector<uint8_t> in = {0, 1, 128, 255};
        int32_t m;
        int s;
        refQuantizeMultiplier(1.0 / double(1 << 24), &m, &s);
        std::vector<uint8_t> expect;
        for (uint8_t v : in)
            expect.push_back(uint8_t(std::min(255, std::max(0, refMbqm(v * 200 + bias, m, s)))));
        Run r = execute(h, info, {in}, {4});
        REQUIRE(r.status.ok());
        CHECK(r.outputs[0] == expect);
        CHECK(expect[3] == 128);  // (255 * 200 + bias) / 2^24 rounds to 128: the top of int32 reached
    }
    SECTION("FULLY_CONNECTED with K = 40000 weights of 255 is refused") {
        Harness h;
        REQUIRE(h.runtime.init().ok());
        ModelBuilder mb(h);
        std::vector<uint8_t> w(40000, 255);
        const int32_t bias = 0;
        const uint32_t x = mb.input({1, 40000}, {1.0f, 0});
        const uint32_t wo = mb.constant(5, {1, 40000}, 1.0f, 0, w.data(), w.size());
        const uint32_t bo = mb.constant(4, {1}, 1.0f, 0, &bias, 4);
        const uint32_t y = mb.output({1, 1}, {float(1 << 24), 0});
        mb.op(kFc, {x, wo, bo, mb.i32(0)}, {y});
        expectRefused(h, mb, "FULLY_CONNECTED", "sum |w| x 255");
    }
}

namespace {

constexpr uint32_t kRelu = 19;

// Which operations the runtime claims, and whether the model of exactly those prepares.
std::vector<bool> claimed(Harness& h, const ModelDesc& model) {
    std::unique_ptr<bool[]> s(new bool[model.operationCount]);
    REQUIRE(h.runtime.supportedOperations(model, s.get()).ok());
    return std::vector<bool>(s.get(), s.get() + model.operationCount);
}

// The runtime's reason for operation `op`, not claimed for a whole-model limit.
std::string reasonOf(Harness& h, const ModelDesc& model, uint32_t op) {
    std::unique_ptr<bool[]> s(new bool[model.operationCount]);
    REQUIRE(h.runtime.supportedOperations(model, s.get()).ok());
    const FwStatus why = h.runtime.unsupportedReason(model, s.get(), op);
    CHECK_FALSE(why.ok());
    return why.message;
}

}  // namespace

TEST_CASE("whole-model honesty: the claimed operations form a model that prepares") {
    SECTION("over the operation-count limit: the first kMaxOperations are claimed") {
        Harness h;
        REQUIRE(h.runtime.init().ok());
        ModelBuilder mb(h);
        uint32_t x = mb.input({1, 8}, {0.1f, 0});
        for (uint32_t i = 0; i < kMaxOperations + 44; ++i) {
            const uint32_t y =
                i + 1 == kMaxOperations + 44 ? mb.output({1, 8}, {0.1f, 0}) : mb.temp({1, 8}, {0.1f, 0});
            mb.op(kRelu, {x}, {y});
            x = y;
        }
        const auto s = claimed(h, mb.build());
        for (uint32_t i = 0; i < s.size(); ++i) {
            INFO(i);
            CHECK(s[i] == (i < kMaxOperations));
        }
        CHECK_THAT(reasonOf(h, mb.build(), kMaxOperations),
                   Catch::Contains("operation 256 (RELU)") && Catch::Contains("at most 256 operations"));
        // The claimed prefix alone (its last output a model output) prepares and runs.
        mb.types.resize(kMaxOperations);
        mb.opInputs.resize(kMaxOperations);
        mb.opOutputs.resize(kMaxOperations);
        mb.operands[mb.opOutputs.back()[0]].lifetime = 2;
        mb.outputs = {mb.opOutputs.back()[0]};
        const BlobInfo info = prepareClaimed(h, mb.build());
        Run r = execute(h, info, {std::vector<uint8_t>(8, 7)}, {8});
        CHECK(r.status.ok());
    }
    SECTION("over the input limit: 65 independent RELUs, 64 claimed") {
        Harness h;
        REQUIRE(h.runtime.init().ok());
        ModelBuilder mb(h);
        for (uint32_t i = 0; i < kMaxIo + 1; ++i)
            mb.op(kRelu, {mb.input({4}, {0.1f, 0})}, {mb.output({4}, {0.1f, 0})});
        const auto s = claimed(h, mb.build());
        for (uint32_t i = 0; i < s.size(); ++i) CHECK(s[i] == (i < kMaxIo));
        CHECK_THAT(reasonOf(h, mb.build(), kMaxIo),
                   Catch::Contains("operation 64 (RELU)") && Catch::Contains("64 model inputs or outputs"));
    }
    SECTION("over the device memory: weights larger than the firmware DRAM are not claimed") {
        Harness h;  // 16 MiB of firmware DRAM
        REQUIRE(h.runtime.init().ok());
        ModelBuilder mb(h);
        const uint32_t inputSize = 4096, units = 4352;  // 17 MiB of weights
        std::vector<uint8_t> w(size_t(inputSize) * units, 3);
        std::vector<int32_t> bias(units, 0);
        const uint32_t x = mb.input({1, 16}, {0.1f, 0});
        const uint32_t t = mb.temp({1, 16}, {0.1f, 0});
        mb.op(kRelu, {x}, {t});  // small: claimed
        const uint32_t wo = mb.constant(5, {units, 16}, 0.01f, 0, w.data(), size_t(units) * 16);
        const uint32_t big = mb.constant(5, {units, inputSize}, 0.01f, 0, w.data(), w.size());
        const uint32_t bo = mb.constant(4, {units}, 0.001f, 0, bias.data(), bias.size() * 4);
        const uint32_t y = mb.output({1, units}, {10.0f, 0});
        mb.op(kFc, {t, wo, bo, mb.i32(0)}, {y});
        const auto small = claimed(h, mb.build());
        CHECK(small[0]);
        CHECK(small[1]);
        mb.opInputs[1][1] = big;  // the same FC on 4096 inputs: 17 MiB of weights
        mb.operands[x].dims[1] = mb.operands[t].dims[1] = inputSize;
        const auto s = claimed(h, mb.build());
        CHECK(s[0]);
        CHECK_FALSE(s[1]);
        CHECK_THAT(reasonOf(h, mb.build(), 1),
                   Catch::Contains("operation 1 (FULLY_CONNECTED)") && Catch::Contains("firmware DRAM"));
        Arena scratch(h.scratchMem.data(), h.scratchMem.size());
        BlobInfo info;
        CHECK_FALSE(h.runtime.prepare(mb.build(), scratch, &info, false).ok());  // as predicted
    }
}

namespace {

constexpr uint32_t kTransposeConv = 91;

struct TransposeCase {
    uint32_t n, h, w, cin, cout, kh, kw, sx, sy;
    bool implicit;
    int scheme;               // implicit: 1 SAME, 2 VALID; the output size is oh x ow
    uint32_t oh, ow;          // implicit only
    uint32_t pl, pr, pt, pb;  // explicit only
    int act;
    bool nchw;
};

// TRANSPOSE_CONV_2D as NNAPI defines it: every input pixel scatters input x filter into the
// output window at (iy * sy + ky - pt, ix * sx + kx - pl); then bias and requantization.
void runTransposeCase(const TransposeCase& c, uint32_t seed, bool isSigned, bool perChannel,
                      npu::sim::HwConfig hw = {}) {
    Harness h(hw);
    REQUIRE(h.runtime.init().ok());
    std::mt19937 rng(seed);
    const uint32_t type = isSigned ? 14 : 5;
    const int lo8 = isSigned ? -128 : 0;
    Quant qi{0.5f, int(rng() % 256) + lo8}, qf{0.25f, perChannel ? 0 : int(rng() % 256) + lo8},
        qo{2.0f + float(rng() % 6), int(rng() % 256) + lo8};
    std::vector<float> scales(c.cout, qf.scale);
    if (perChannel)
        for (auto& s : scales) s = 0.05f * float(1 + rng() % 16);
    uint32_t pl = c.pl, pr = c.pr, pt = c.pt, pb = c.pb, oh = c.oh, ow = c.ow;
    if (c.implicit) {
        pl = pr = pt = pb = 0;
        auto same = [](uint32_t out, uint32_t s, uint32_t k, uint32_t* p0, uint32_t* p1) {
            const int o = int((out + s - 1) / s), t = std::max(0, (o - 1) * int(s) + int(k) - int(out));
            *p0 = uint32_t(t / 2);
            *p1 = uint32_t(t - t / 2);
        };
        if (c.scheme == 1) {
            same(ow, c.sx, c.kw, &pl, &pr);
            same(oh, c.sy, c.kh, &pt, &pb);
        }
    } else {
        oh = (c.h - 1) * c.sy + c.kh - pt - pb;
        ow = (c.w - 1) * c.sx + c.kw - pl - pr;
    }
    auto in = randomBytes(rng, size_t(c.n) * c.h * c.w * c.cin);
    auto f = randomBytes(rng, size_t(c.cout) * c.kh * c.kw * c.cin);
    auto bias = randomBias(rng, c.cout, 5000);
    auto val = [&](uint8_t b, bool s) { return s ? int(int8_t(b)) : int(b); };
    auto inAt = [&](uint32_t b, uint32_t y, uint32_t x, uint32_t ch) {
        return val(in[c.nchw ? ((size_t(b) * c.cin + ch) * c.h + y) * c.w + x
                             : ((size_t(b) * c.h + y) * c.w + x) * c.cin + ch],
                   isSigned) -
               qi.zp;
    };
    std::vector<int64_t> acc(size_t(c.n) * oh * ow * c.cout, 0);
    for (uint32_t b = 0; b < c.n; ++b)
        for (uint32_t iy = 0; iy < c.h; ++iy)
            for (uint32_t ix = 0; ix < c.w; ++ix)
                for (uint32_t co = 0; co < c.cout; ++co)
                    for (uint32_t ky = 0; ky < c.kh; ++ky)
                        for (uint32_t kx = 0; kx < c.kw; ++kx) {
                            const int oy = int(iy * c.sy + ky) - int(pt), ox = int(ix * c.sx + kx) - int(pl);
                            if (oy < 0 || ox < 0 || oy >= int(oh) || ox >= int(ow)) continue;
                            for (uint32_t ci = 0; ci < c.cin; ++ci)
                                acc[((size_t(b) * oh + oy) * ow + ox) * c.cout + co] +=
                                    inAt(b, iy, ix, ci) *
                                    (val(f[((size_t(co) * c.kh + ky) * c.kw + kx) * c.cin + ci],
                                         isSigned || perChannel) -
                                     qf.zp);
                        }
    int lo, hi;
    refActRange(c.act, qo.scale, qo.zp, &lo, &hi, isSigned);
    const auto mult = requantMultipliers(qi.scale, scales, qo.scale);
    std::vector<uint8_t> expect(acc.size());
    for (uint32_t b = 0; b < c.n; ++b)
        for (uint32_t y = 0; y < oh; ++y)
            for (uint32_t x = 0; x < ow; ++x)
                for (uint32_t co = 0; co < c.cout; ++co) {
                    const int64_t a = acc[((size_t(b) * oh + y) * ow + x) * c.cout + co] + bias[co];
                    const int v = std::min(
                        hi, std::max(lo, refMbqm(int32_t(a), mult[co].first, mult[co].second) + qo.zp));
                    const size_t o = c.nchw ? ((size_t(b) * c.cout + co) * oh + y) * ow + x
                                            : ((size_t(b) * oh + y) * ow + x) * c.cout + co;
                    expect[o] = uint8_t(v);
                }
    ModelBuilder mb(h);
    auto dims = [&](uint32_t ch, uint32_t hh, uint32_t ww) {
        return c.nchw ? std::vector<uint32_t>{c.n, ch, hh, ww} : std::vector<uint32_t>{c.n, hh, ww, ch};
    };
    const uint32_t x = mb.input(dims(c.cin, c.h, c.w), qi, type);
    const uint32_t fo = mb.constant(perChannel ? 11 : type, {c.cout, c.kh, c.kw, c.cin},
                                    perChannel ? 0.0f : qf.scale, qf.zp, f.data(), f.size());
    if (perChannel) {
        mb.operands[fo].channelScales = scales.data();
        mb.operands[fo].channelScaleCount = c.cout;
        mb.operands[fo].channelDim = 0;
    }
    const uint32_t bo = mb.constant(4, {c.cout}, 0.0f, 0, bias.data(), bias.size() * 4);
    const uint32_t y = mb.output(dims(c.cout, oh, ow), qo, type);
    std::vector<uint32_t> args = {x, fo, bo};
    if (c.implicit) {
        const std::vector<int32_t> shape =
            c.nchw ? std::vector<int32_t>{int(c.n), int(c.cout), int(oh), int(ow)}
                   : std::vector<int32_t>{int(c.n), int(oh), int(ow), int(c.cout)};
        args.insert(args.end(), {mb.constant(4, {4}, 0, 0, shape.data(), 16), mb.i32(c.scheme)});
    } else {
        args.insert(args.end(), {mb.i32(int(pl)), mb.i32(int(pr)), mb.i32(int(pt)), mb.i32(int(pb))});
    }
    args.insert(args.end(), {mb.i32(int(c.sx)), mb.i32(int(c.sy)), mb.i32(c.act), mb.boolean(c.nchw)});
    mb.op(kTransposeConv, args, {y});
    const BlobInfo info = prepareClaimed(h, mb.build());
    Run r = execute(h, info, {in}, {expect.size()});
    INFO(r.status.message);
    REQUIRE(r.status.ok());
    CHECK(r.outputs[0] == expect);
}

}  // namespace

TEST_CASE("TRANSPOSE_CONV_2D bit-exact: strides, paddings, output shapes, NCHW, int8, per-channel, tiles") {
    // n h w cin cout kh kw sx sy implicit scheme oh ow pl pr pt pb act nchw
    runTransposeCase({1, 3, 3, 2, 3, 3, 3, 2, 2, false, 0, 0, 0, 1, 1, 1, 1, 0, false}, 180, false, false);
    runTransposeCase({2, 4, 3, 3, 2, 2, 3, 1, 2, false, 0, 0, 0, 0, 2, 1, 0, 1, true}, 181, true, false);
    runTransposeCase({1, 3, 4, 2, 4, 3, 3, 2, 2, true, 1, 6, 8, 0, 0, 0, 0, 3, false}, 182, false, true);
    runTransposeCase({1, 2, 2, 3, 2, 2, 2, 3, 3, true, 2, 7, 5, 0, 0, 0, 0, 0, true}, 183, true, true);
    runTransposeCase({1, 5, 5, 1, 1, 1, 1, 3, 2, false, 0, 0, 0, 0, 0, 0, 0, 2, false}, 184, false,
                     false);  // gaps
    npu::sim::HwConfig hw;
    hw.scratchpadBytes = 16 << 10;
    hw.accumulatorBytes = 4 << 10;
    hw.arrayRows = hw.arrayCols = 8;
    runTransposeCase({1, 9, 7, 8, 40, 3, 3, 2, 2, false, 0, 0, 0, 1, 0, 2, 1, 1, false}, 185, true, true, hw);
    runTransposeCase({1, 6, 9, 5, 12, 4, 4, 2, 3, false, 0, 0, 0, 3, 1, 0, 2, 0, true}, 186, false, false,
                     hw);
}

TEST_CASE("double-buffered weight tiles: CONV_2D, GROUPED_CONV_2D, TRANSPOSE_CONV_2D, FC, bit-exact") {
    // Weights wider than half the scratchpad: channel tiles whose two weight buffers fit, each
    // loading while the previous tile computes (op_plan.h doubleBufferedWeights), over several
    // row tiles, with a partial last channel tile.
    npu::sim::HwConfig hw;
    hw.scratchpadBytes = 16 << 10;
    hw.accumulatorBytes = 4 << 10;
    hw.arrayRows = hw.arrayCols = 8;
    // n h w cin cout kh kw sx sy dx dy implicit scheme pl pr pt pb act nchw opt
    const ConvCase wide = {2, 8, 8, 32, 45, 3, 3, 1, 1, 1, 1, false, 0, 1, 1, 1, 1, 1, false, false};
    runConvCase(wide, 190, hw);  // 5 channel tiles of 11, 1 (k = 288)
    runConvCase(wide, 191, hw, ConvTypes::kInt8PerChannel);
    ConvCase nchw = wide;
    nchw.nchw = true;
    runConvCase(nchw, 192, hw, ConvTypes::kUint8PerChannel);
    // Per group: 45 channels of k = 144, split in two for weight/compute overlap (24 + 21).
    runConvCase({2, 8, 8, 32, 90, 3, 3, 1, 1, 1, 1, false, 0, 1, 1, 1, 1, 0, false, false}, 193, hw,
                ConvTypes::kInt8, 2);
    // n h w cin cout kh kw sx sy implicit scheme oh ow pl pr pt pb act nchw: 4 tiles of 10 (k = 216)
    runTransposeCase({1, 4, 4, 24, 40, 3, 3, 2, 2, false, 0, 0, 0, 1, 1, 1, 1, 1, false}, 194, true, true,
                     hw);
    npu::sim::HwConfig fc;
    fc.scratchpadBytes = 8 << 10;
    fc.accumulatorBytes = 2 << 10;
    runFc(13, 200, 70, 0, 195, false, fc, false, 256.0f);  // 7 channel tiles of 10, 3 row tiles
    runFc(13, 200, 70, 0, 197, false, fc, true, 256.0f);
}

TEST_CASE("TRANSPOSE_CONV_2D padding of the filter size or more is refused, naming the rule") {
    Harness h;
    REQUIRE(h.runtime.init().ok());
    ModelBuilder mb(h);
    std::vector<uint8_t> f(2 * 2 * 2, 1);
    std::vector<int32_t> bias(1, 0);
    const uint32_t x = mb.input({1, 4, 4, 2}, {0.5f, 10});
    const uint32_t fo = mb.constant(5, {1, 2, 2, 2}, 0.5f, 0, f.data(), f.size());
    const uint32_t bo = mb.constant(4, {1}, 0.25f, 0, bias.data(), 4);
    const uint32_t y = mb.output({1, 4, 6, 1}, {1.0f, 0});  // (4-1)*2+2-2-2 = 4, (4-1)*2+2-0-2 = 6
    mb.op(kTransposeConv,
          {x, fo, bo, mb.i32(0), mb.i32(2), mb.i32(2), mb.i32(0), mb.i32(2), mb.i32(2), mb.i32(0),
           mb.boolean(false)},
          {y});
    expectRefused(h, mb, "TRANSPOSE_CONV_2D", "not below the filter");
}

TEST_CASE("one row tile over several channel tiles: the input loads once and stays resident, bit-exact") {
    // Output height 1, so every tiling candidate has a single row tile and the input stays in
    // the scratchpad for all channel tiles (op_plan.cpp residentInput, compiler.cpp emitMacOp);
    // weights wider than half the scratchpad take several channel tiles, the last one partial.
    npu::sim::HwConfig hw;
    hw.scratchpadBytes = 16 << 10;
    hw.accumulatorBytes = 4 << 10;
    hw.arrayRows = hw.arrayCols = 8;
    // n h w cin cout kh kw sx sy dx dy implicit scheme pl pr pt pb act nchw opt: k = 576, tiles of 5
    const ConvCase row = {1, 1, 6, 64, 47, 3, 3, 1, 1, 1, 1, false, 0, 1, 1, 1, 1, 1, false, false};
    runConvCase(row, 230, hw);
    runConvCase(row, 231, hw, ConvTypes::kInt8PerChannel);
    ConvCase nchw = row;
    nchw.nchw = true;
    runConvCase(nchw, 232, hw, ConvTypes::kUint8PerChannel);
    // VALID 2x2 over two rows: one output row, the input's two rows resident.
    runConvCase({1, 2, 9, 64, 33, 2, 2, 1, 1, 1, 1, false, 0, 0, 0, 0, 0, 0, false, false}, 233, hw);
    // Two groups: each group's input slice is loaded once, after the fence before its channels.
    runConvCase({1, 1, 6, 64, 94, 3, 3, 1, 1, 1, 1, false, 0, 1, 1, 1, 1, 0, false, false}, 234, hw,
                ConvTypes::kInt8, 2);
    // n h w cin cout kh kw sx sy implicit scheme oh ow pl pr pt pb act nchw: one output row
    runTransposeCase({1, 1, 4, 48, 40, 3, 3, 2, 2, false, 0, 0, 0, 1, 1, 1, 1, 1, false}, 235, false, false,
                     hw);
    npu::sim::HwConfig fc;
    fc.scratchpadBytes = 8 << 10;
    fc.accumulatorBytes = 2 << 10;
    runFc(1, 600, 45, 0, 236, false, fc, false, 256.0f);  // batch 1: the input row resident
    runFc(1, 600, 45, 0, 237, false, fc, true, 256.0f);
}

TEST_CASE("CONV_2D and FULLY_CONNECTED too large for the scratchpad are refused, naming the limit") {
    npu::sim::HwConfig hw;
    hw.scratchpadBytes = 4 << 10;
    const Quant q{0.5f, 100};
    const std::vector<uint8_t> w(3 * 3 * 512, 1);
    const std::vector<int32_t> bias(4, 0);
    SECTION("a filter whose taps for one output channel exceed half the scratchpad") {
        Harness h(hw);
        REQUIRE(h.runtime.init().ok());
        ModelBuilder mb(h);
        const uint32_t x = mb.input({1, 3, 3, 512}, q);
        const uint32_t f = mb.constant(5, {1, 3, 3, 512}, 0.5f, 120, w.data(), w.size());
        mb.op(
            kConv,
            {x, f, mb.constant(4, {1}, 0.25f, 0, bias.data(), 4), mb.i32(2), mb.i32(1), mb.i32(1), mb.i32(0)},
            {mb.output({1, 1, 1, 1}, q)});
        expectRefused(h, mb, "CONV_2D", "filter of 4608 taps per output channel does not fit the scratchpad");
    }
    SECTION("an output row whose input rows do not fit") {
        Harness h(hw);
        REQUIRE(h.runtime.init().ok());
        ModelBuilder mb(h);
        const uint32_t x = mb.input({1, 3, 1500, 2}, q);
        const uint32_t f = mb.constant(5, {2, 3, 3, 2}, 0.5f, 120, w.data(), 36);
        mb.op(
            kConv,
            {x, f, mb.constant(4, {2}, 0.25f, 0, bias.data(), 8), mb.i32(1), mb.i32(1), mb.i32(1), mb.i32(0)},
            {mb.output({1, 3, 1500, 2}, q)});
        expectRefused(h, mb, "CONV_2D",
                      "one output row (width 1500) does not fit the scratchpad/accumulator");
    }
    SECTION("a FULLY_CONNECTED input row longer than half the scratchpad") {
        Harness h(hw);
        REQUIRE(h.runtime.init().ok());
        ModelBuilder mb(h);
        const uint32_t x = mb.input({1, 3000}, q);
        const std::vector<uint8_t> fw(4 * 3000, 1);
        const uint32_t f = mb.constant(5, {4, 3000}, 0.5f, 120, fw.data(), fw.size());
        mb.op(kFc, {x, f, mb.constant(4, {4}, 0.25f, 0, bias.data(), 16), mb.i32(0)}, {mb.output({1, 4}, q)});
        expectRefused(h, mb, "FULLY_CONNECTED", "input_size 3000 does not fit the scratchpad");
    }
}

namespace {

// A residual block: y = ADD(CONV_2D(x) [+ a 1x1 CONV_2D before it], skip), skip the model input x
// or the output of the first convolution. With `observeConv` the convolution's output is also a
// model output, so the ADD cannot be fused (the bytes must reach DRAM): the unfused twin.
struct Residual {
    uint32_t n, h, w, c;
    bool skipIsInput, convFirst, isSigned;
};
Run runResidual(const Residual& b, bool observeConv, uint32_t seed, npu::sim::HwConfig hw,
                uint32_t* addCycles) {
    Harness h(hw);
    REQUIRE(h.runtime.init().ok());
    std::mt19937 rng(seed);
    const int zs = b.isSigned ? -128 : 0;
    const uint32_t type = b.isSigned ? 14 : 5;  // TENSOR_QUANT8_ASYMM(_SIGNED)
    const Quant qx{0.1f, 120 + zs}, qc{0.15f, 110 + zs}, qy{0.2f, 125 + zs};
    ModelBuilder mb(h);
    const std::vector<uint32_t> dims = {b.n, b.h, b.w, b.c};
    const uint32_t x = mb.input(dims, qx, type);
    auto conv = [&](uint32_t in, uint32_t kh, Quant out, bool output) {
        static std::vector<std::vector<uint8_t>> keep;  // constants outlive the model
        keep.push_back(randomBytes(rng, size_t(b.c) * kh * kh * b.c));
        const std::vector<int32_t> bias = randomBias(rng, b.c, 200);
        keep.emplace_back(reinterpret_cast<const uint8_t*>(bias.data()),
                          reinterpret_cast<const uint8_t*>(bias.data()) + 4 * b.c);
        const uint32_t f = mb.constant(type, {b.c, kh, kh, b.c}, 0.01f, 3 + zs, keep[keep.size() - 2].data(),
                                       keep[keep.size() - 2].size());
        const uint32_t bo = mb.constant(4, {b.c}, 0.1f * 0.01f, 0, keep.back().data(), 4 * b.c);
        const uint32_t y = output ? mb.output(dims, out, type) : mb.temp(dims, out, type);
        mb.op(kConv, {in, f, bo, mb.i32(1), mb.i32(1), mb.i32(1), mb.i32(0)}, {y});
        return y;
    };
    const uint32_t first = b.convFirst ? conv(x, 1, qx, false) : x;
    const uint32_t t = conv(first, 3, qc, observeConv);
    const uint32_t skip = b.skipIsInput ? x : first;
    const uint32_t y = mb.output(dims, qy, type);
    mb.op(kAdd, {seed % 2 == 0 ? t : skip, seed % 2 == 0 ? skip : t, mb.i32(1)}, {y});
    Arena scratch(h.scratchMem.data(), h.scratchMem.size());
    BlobInfo info;
    const FwStatus st = h.runtime.prepare(mb.build(), scratch, &info);
    INFO(st.message);
    REQUIRE(st.ok());
    const size_t bytes = size_t(b.n) * b.h * b.w * b.c;
    std::vector<size_t> outs = {bytes};
    if (observeConv) outs.insert(outs.begin(), bytes);
    Run r = execute(h, info, {randomBytes(rng, bytes)}, outs);
    REQUIRE(r.status.ok());
    if (observeConv) r.outputs.erase(r.outputs.begin());  // keep y only
    const uint32_t addOp = b.convFirst ? 2 : 1;
    REQUIRE(r.result.profileCount > addOp);
    *addCycles = static_cast<uint32_t>(r.result.profile[addOp].cycles);
    return r;
}

}  // namespace

TEST_CASE("a residual ADD fused into its CONV_2D's store gives the unfused bytes") {
    npu::sim::HwConfig small;
    small.scratchpadBytes = 16 << 10;
    small.accumulatorBytes = 4 << 10;
    small.arrayRows = small.arrayCols = 8;
    const Residual blocks[] = {
        {1, 6, 7, 8, true, false, false},    // skip = the model input
        {2, 9, 5, 12, false, true, false},   // skip = an earlier convolution's output, two images
        {1, 11, 13, 24, true, true, true},   // int8, several row and channel tiles on `small`
        {1, 20, 17, 16, false, true, true},  // int8, several row tiles
    };
    uint32_t seed = 700;
    for (const Residual& b : blocks) {
        for (const npu::sim::HwConfig& hw : {npu::sim::HwConfig{}, small}) {
            for (int order = 0; order < 2; ++order, ++seed) {  // the convolution as ADD input a, then b
                INFO("block " << b.h << "x" << b.w << "x" << b.c << " seed " << seed << " scratchpad "
                              << hw.scratchpadBytes);
                uint32_t fusedAdd = 1, unfusedAdd = 0;
                const Run fused = runResidual(b, false, seed, hw, &fusedAdd);
                const Run unfused = runResidual(b, true, seed, hw, &unfusedAdd);
                CHECK(fused.outputs[0] == unfused.outputs[0]);
                CHECK(fusedAdd == 0);   // the ADD emits nothing: its convolution did it
                CHECK(unfusedAdd > 0);  // the twin really ran it on its own
            }
        }
    }
}

// The data-movement, resampling and reduction operations end to end on the simulator:
// TRANSPOSE, SPACE_TO_DEPTH, DEPTH_TO_SPACE and STRIDED_SLICE (strided DMA only),
// RESIZE_NEAREST_NEIGHBOR / RESIZE_BILINEAR (RESIZE), MEAN (MEAN) and PRELU (VEC_OP PRELU).
// Expected values come from the reference's index and float arithmetic written out here,
// independently of the firmware; small scratchpads make tiles that do not divide the shapes
// and tensors larger than the scratchpad.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <functional>
#include <string>

#include "blob_format.h"
#include "model_fixture.h"
#include "npu/hal/types.h"
#include "op_plan.h"

using namespace fwtest;
namespace isa = npu::isa;

namespace {

using npu::hal::OperationType;

// The firmware's operation and operand type numbers are the HAL's (firmware/core cannot include
// the HAL).
static_assert(npu::fw::hal::kOpTranspose == uint32_t(OperationType::TRANSPOSE));
static_assert(npu::fw::hal::kOpSpaceToDepth == uint32_t(OperationType::SPACE_TO_DEPTH));
static_assert(npu::fw::hal::kOpDepthToSpace == uint32_t(OperationType::DEPTH_TO_SPACE));
static_assert(npu::fw::hal::kOpStridedSlice == uint32_t(OperationType::STRIDED_SLICE));
static_assert(npu::fw::hal::kOpResizeBilinear == uint32_t(OperationType::RESIZE_BILINEAR));
static_assert(npu::fw::hal::kOpResizeNearest == uint32_t(OperationType::RESIZE_NEAREST_NEIGHBOR));
static_assert(npu::fw::hal::kOpMean == uint32_t(OperationType::MEAN));
static_assert(npu::fw::hal::kOpPrelu == uint32_t(OperationType::PRELU));
static_assert(npu::fw::hal::kFloat32 == uint32_t(npu::hal::OperandType::FLOAT32));
// And the rest of op_plan.h's hand-typed numbers.
static_assert(npu::fw::hal::kInt32 == uint32_t(npu::hal::OperandType::INT32));
static_assert(npu::fw::hal::kBool == uint32_t(npu::hal::OperandType::BOOL));
static_assert(npu::fw::hal::kTensorInt32 == uint32_t(npu::hal::OperandType::TENSOR_INT32));
static_assert(npu::fw::hal::kTensorQuant8Asymm == uint32_t(npu::hal::OperandType::TENSOR_QUANT8_ASYMM));
static_assert(npu::fw::hal::kTensorQuant8AsymmSigned ==
              uint32_t(npu::hal::OperandType::TENSOR_QUANT8_ASYMM_SIGNED));
static_assert(npu::fw::hal::kTensorQuant8SymmPerChannel ==
              uint32_t(npu::hal::OperandType::TENSOR_QUANT8_SYMM_PER_CHANNEL));
static_assert(npu::fw::hal::kOpAdd == uint32_t(OperationType::ADD));
static_assert(npu::fw::hal::kOpAveragePool2d == uint32_t(OperationType::AVERAGE_POOL_2D));
static_assert(npu::fw::hal::kOpConcatenation == uint32_t(OperationType::CONCATENATION));
static_assert(npu::fw::hal::kOpConv2d == uint32_t(OperationType::CONV_2D));
static_assert(npu::fw::hal::kOpDepthwiseConv2d == uint32_t(OperationType::DEPTHWISE_CONV_2D));
static_assert(npu::fw::hal::kOpFullyConnected == uint32_t(OperationType::FULLY_CONNECTED));
static_assert(npu::fw::hal::kOpLogistic == uint32_t(OperationType::LOGISTIC));
static_assert(npu::fw::hal::kOpMaxPool2d == uint32_t(OperationType::MAX_POOL_2D));
static_assert(npu::fw::hal::kOpRelu == uint32_t(OperationType::RELU));
static_assert(npu::fw::hal::kOpRelu1 == uint32_t(OperationType::RELU1));
static_assert(npu::fw::hal::kOpRelu6 == uint32_t(OperationType::RELU6));
static_assert(npu::fw::hal::kOpReshape == uint32_t(OperationType::RESHAPE));
static_assert(npu::fw::hal::kOpTanh == uint32_t(OperationType::TANH));
static_assert(npu::fw::hal::kOpSqueeze == uint32_t(OperationType::SQUEEZE));
static_assert(npu::fw::hal::kOpSub == uint32_t(OperationType::SUB));
static_assert(npu::fw::hal::kOpMul == uint32_t(OperationType::MUL));
static_assert(npu::fw::hal::kOpMaximum == uint32_t(OperationType::MAXIMUM));
static_assert(npu::fw::hal::kOpMinimum == uint32_t(OperationType::MINIMUM));
static_assert(npu::fw::hal::kOpPad == uint32_t(OperationType::PAD));
static_assert(npu::fw::hal::kOpPadV2 == uint32_t(OperationType::PAD_V2));
static_assert(npu::fw::hal::kOpHardSwish == uint32_t(OperationType::HARD_SWISH));

constexpr uint32_t kU8 = 5, kI8 = 14, kInt32Tensor = 4, kFloat32 = npu::fw::hal::kFloat32;

int valueOf(uint8_t b, bool isSigned) {
    return isSigned ? int(int8_t(b)) : int(b);
}

size_t count(const std::vector<uint32_t>& dims) {
    size_t n = 1;
    for (uint32_t d : dims) n *= d;
    return n;
}

std::vector<size_t> stridesOf(const std::vector<uint32_t>& dims) {
    std::vector<size_t> s(dims.size(), 1);
    for (size_t k = dims.size(); k-- > 1;) s[k - 1] = s[k] * dims[k];
    return s;
}

// out[n] = in[f(multi-index of n in outDims)].
std::vector<uint8_t> gatherExpect(const std::vector<uint8_t>& in, const std::vector<uint32_t>& outDims,
                                  const std::function<size_t(const std::vector<uint32_t>&)>& source) {
    std::vector<uint8_t> out(count(outDims));
    std::vector<uint32_t> idx(outDims.size(), 0);
    for (size_t n = 0; n < out.size(); ++n) {
        out[n] = in[source(idx)];
        for (size_t k = outDims.size(); k-- > 0;) {
            if (++idx[k] < outDims[k]) break;
            idx[k] = 0;
        }
    }
    return out;
}

// One operation on one random input (and further operands the caller adds).
struct OneOp {
    Harness h;
    ModelBuilder mb{h};
    std::mt19937 rng;
    std::vector<std::vector<uint8_t>> inputs;

    OneOp(uint32_t seed, npu::sim::HwConfig hw = {}) : h(hw, false), rng(seed) {
        REQUIRE(h.runtime.init().ok());
    }
    uint32_t input(std::vector<uint32_t> dims, Quant q, uint32_t type) {
        inputs.push_back(randomBytes(rng, count(dims)));
        return mb.input(dims, q, type);
    }
    uint32_t i32s(const std::vector<int32_t>& v) {
        return mb.constant(kInt32Tensor, {uint32_t(v.size())}, 0, 0, v.data(), v.size() * 4);
    }
    std::vector<uint8_t> run(size_t outBytes) {
        const BlobInfo info = prepareClaimed(h, mb.build());
        Run r = execute(h, info, inputs, {outBytes});
        INFO(r.status.message);
        REQUIRE(r.status.ok());
        return r.outputs[0];
    }
};

npu::sim::HwConfig smallScratchpad() {
    npu::sim::HwConfig hw;
    hw.scratchpadBytes = 4 << 10;
    return hw;
}

// ---- TRANSPOSE ------------------------------------------------------------------------------

void runTranspose(std::vector<uint32_t> dims, std::vector<int32_t> perm, bool isSigned, uint32_t seed,
                  npu::sim::HwConfig hw = {}) {
    OneOp t(seed, hw);
    const Quant q{0.5f, isSigned ? -3 : 7};
    const uint32_t type = isSigned ? kI8 : kU8;
    const uint32_t x = t.input(dims, q, type);
    std::vector<uint32_t> outDims;
    for (int32_t p : perm) outDims.push_back(dims[size_t(p)]);
    t.mb.op(npu::fw::hal::kOpTranspose, {x, t.i32s(perm)}, {t.mb.output(outDims, q, type)});
    const auto inStride = stridesOf(dims);
    const auto expect = gatherExpect(t.inputs[0], outDims, [&](const std::vector<uint32_t>& i) {
        size_t s = 0;
        for (size_t k = 0; k < i.size(); ++k) s += i[k] * inStride[size_t(perm[k])];
        return s;
    });
    CHECK(t.run(expect.size()) == expect);
}

// ---- SPACE_TO_DEPTH / DEPTH_TO_SPACE (the reference's loop over the deep side) ---------------

struct Layout {
    uint32_t n, h, w, c;
    bool nchw;
    size_t index(uint32_t b, uint32_t y, uint32_t x, uint32_t ch) const {
        return nchw ? ((size_t(b) * c + ch) * h + y) * w + x : ((size_t(b) * h + y) * w + x) * c + ch;
    }
    std::vector<uint32_t> dims() const {
        return nchw ? std::vector<uint32_t>{n, c, h, w} : std::vector<uint32_t>{n, h, w, c};
    }
};

void runSpaceDepth(bool toDepth, Layout wide, uint32_t bs, bool isSigned, uint32_t seed,
                   npu::sim::HwConfig hw = {}) {
    OneOp t(seed, hw);
    const Quant q{0.25f, isSigned ? 5 : 130};
    const uint32_t type = isSigned ? kI8 : kU8;
    const Layout deep{wide.n, wide.h / bs, wide.w / bs, wide.c * bs * bs, wide.nchw};
    const Layout& in = toDepth ? wide : deep;
    const Layout& out = toDepth ? deep : wide;
    const uint32_t x = t.input(in.dims(), q, type);
    std::vector<uint32_t> args = {x, t.mb.i32(int32_t(bs))};
    if (wide.nchw || seed % 2 == 0) args.push_back(t.mb.boolean(wide.nchw));
    t.mb.op(toDepth ? npu::fw::hal::kOpSpaceToDepth : npu::fw::hal::kOpDepthToSpace, args,
            {t.mb.output(out.dims(), q, type)});
    std::vector<uint8_t> expect(count(out.dims()));
    for (uint32_t b = 0; b < deep.n; ++b)
        for (uint32_t y = 0; y < deep.h; ++y)
            for (uint32_t xx = 0; xx < deep.w; ++xx)
                for (uint32_t c = 0; c < deep.c; ++c) {
                    const uint32_t wc = c % wide.c, offset = c / wide.c, dy = offset / bs, dx = offset % bs;
                    const size_t d = deep.index(b, y, xx, c),
                                 w = wide.index(b, y * bs + dy, xx * bs + dx, wc);
                    if (toDepth) {
                        expect[d] = t.inputs[0][w];
                    } else {
                        expect[w] = t.inputs[0][d];
                    }
                }
    CHECK(t.run(expect.size()) == expect);
}

// ---- STRIDED_SLICE (TFLite's masks, negative indices, shrink axes) ---------------------------

void runStridedSlice(std::vector<uint32_t> dims, std::vector<int32_t> begin, std::vector<int32_t> end,
                     std::vector<int32_t> strides, int32_t beginMask, int32_t endMask, int32_t shrinkMask,
                     bool isSigned, uint32_t seed, npu::sim::HwConfig hw = {}) {
    OneOp t(seed, hw);
    const Quant q{0.1f, isSigned ? 0 : 128};
    const uint32_t type = isSigned ? kI8 : kU8;
    const uint32_t x = t.input(dims, q, type);
    std::vector<uint32_t> full, outDims;
    std::vector<int64_t> first;
    for (size_t k = 0; k < dims.size(); ++k) {
        const int64_t d = dims[k], s = strides[k];
        auto clampIndex = [&](int64_t v) {
            return s > 0 ? std::clamp<int64_t>(v, 0, d) : std::clamp<int64_t>(v, -1, d - 1);
        };
        int64_t b = begin[k] < 0 ? begin[k] + d : begin[k], e = end[k] < 0 ? end[k] + d : end[k];
        b = (beginMask >> k) & 1 ? (s > 0 ? 0 : d - 1) : clampIndex(b);
        e = (endMask >> k) & 1 ? (s > 0 ? d : -1) : clampIndex(e);
        full.push_back(uint32_t(s > 0 ? std::max<int64_t>(0, (e - b + s - 1) / s)
                                      : std::max<int64_t>(0, (b - e - s - 1) / -s)));
        first.push_back(b);
        if (!((shrinkMask >> k) & 1)) outDims.push_back(full.back());
    }
    if (outDims.empty()) outDims.push_back(1);
    t.mb.op(npu::fw::hal::kOpStridedSlice,
            {x, t.i32s(begin), t.i32s(end), t.i32s(strides), t.mb.i32(beginMask), t.mb.i32(endMask),
             t.mb.i32(shrinkMask)},
            {t.mb.output(outDims, q, type)});
    const auto inStride = stridesOf(dims);
    const auto expect = gatherExpect(t.inputs[0], full, [&](const std::vector<uint32_t>& i) {
        size_t s = 0;
        for (size_t k = 0; k < i.size(); ++k)
            s += size_t(first[k] + int64_t(i[k]) * strides[k]) * inStride[k];
        return s;
    });
    CHECK(t.run(expect.size()) == expect);
}

// ---- RESIZE (the reference's float coordinate and interpolation arithmetic) -----------------

struct ResizeCase {
    Layout in;
    uint32_t outH, outW;
    bool bilinear, align, half;
    bool byScale;  // the size given as FLOAT32 scales
};

void runResize(const ResizeCase& rc, bool isSigned, uint32_t seed, npu::sim::HwConfig hw = {}) {
    OneOp t(seed, hw);
    const Quant q{0.2f, isSigned ? -1 : 100};
    const uint32_t type = isSigned ? kI8 : kU8;
    const Layout& in = rc.in;
    const Layout out{in.n, rc.outH, rc.outW, in.c, in.nchw};
    const uint32_t x = t.input(in.dims(), q, type);
    std::vector<uint32_t> args = {x};
    if (rc.byScale) {
        const float sw = float(rc.outW) / float(in.w), sh = float(rc.outH) / float(in.h);
        REQUIRE(uint32_t(std::floor(double(in.w) * sw)) == rc.outW);
        REQUIRE(uint32_t(std::floor(double(in.h) * sh)) == rc.outH);
        args.push_back(t.mb.constant(kFloat32, {}, 0, 0, &sw, 4));
        args.push_back(t.mb.constant(kFloat32, {}, 0, 0, &sh, 4));
    } else {
        args.push_back(t.mb.i32(int32_t(rc.outW)));
        args.push_back(t.mb.i32(int32_t(rc.outH)));
    }
    args.push_back(t.mb.boolean(in.nchw));
    if (rc.align || rc.half) {
        args.push_back(t.mb.boolean(rc.align));
        args.push_back(t.mb.boolean(rc.half));
    }
    t.mb.op(rc.bilinear ? npu::fw::hal::kOpResizeBilinear : npu::fw::hal::kOpResizeNearest, args,
            {t.mb.output(out.dims(), q, type)});
    auto scaleOf = [&](uint32_t i, uint32_t o) {
        return rc.align && o > 1 ? float(i - 1) / float(o - 1) : float(i) / float(o);
    };
    const float scaleH = scaleOf(in.h, out.h), scaleW = scaleOf(in.w, out.w);
    auto nearest = [&](uint32_t v, uint32_t size, float scale) {
        const float offset = rc.half ? 0.5f : 0.0f;
        int32_t r =
            rc.align ? int32_t(std::round((v + offset) * scale)) : int32_t(std::floor((v + offset) * scale));
        return uint32_t(std::max(std::min<int32_t>(r, int32_t(size) - 1), 0));
    };
    struct Interp {
        uint32_t lo, hi;
        float frac;
    };
    auto interp = [&](uint32_t v, uint32_t size, float scale) {
        const float s = rc.half ? (v + 0.5f) * scale - 0.5f : v * scale;
        const int32_t lo = std::max(int32_t(std::floor(s)), 0);
        const int32_t hi = std::min(int32_t(std::ceil(s)), int32_t(size) - 1);
        return Interp{uint32_t(lo), uint32_t(hi), s - float(lo)};
    };
    const auto& data = t.inputs[0];
    std::vector<uint8_t> expect(count(out.dims()));
    for (uint32_t b = 0; b < out.n; ++b)
        for (uint32_t y = 0; y < out.h; ++y)
            for (uint32_t xx = 0; xx < out.w; ++xx)
                for (uint32_t c = 0; c < out.c; ++c) {
                    uint8_t v = 0;
                    if (!rc.bilinear) {
                        v = data[in.index(b, nearest(y, in.h, scaleH), nearest(xx, in.w, scaleW), c)];
                    } else {
                        const Interp iy = interp(y, in.h, scaleH), ix = interp(xx, in.w, scaleW);
                        auto at = [&](uint32_t yy, uint32_t xv) {
                            return float(valueOf(data[in.index(b, yy, xv, c)], isSigned));
                        };
                        const float f = at(iy.lo, ix.lo) * (1 - iy.frac) * (1 - ix.frac) +
                                        at(iy.hi, ix.lo) * iy.frac * (1 - ix.frac) +
                                        at(iy.lo, ix.hi) * (1 - iy.frac) * ix.frac +
                                        at(iy.hi, ix.hi) * iy.frac * ix.frac;
                        v = uint8_t(
                            std::clamp(int32_t(std::round(f)), isSigned ? -128 : 0, isSigned ? 127 : 255));
                    }
                    expect[out.index(b, y, xx, c)] = v;
                }
    CHECK(t.run(expect.size()) == expect);
}

// ---- MEAN (dequantize, sum in double, divide, quantize: the reference) ----------------------

void runMean(std::vector<uint32_t> dims, std::vector<int32_t> axes, bool keepDims, Quant qi, Quant qo,
             bool isSigned, uint32_t seed, npu::sim::HwConfig hw = {}) {
    OneOp t(seed, hw);
    const uint32_t type = isSigned ? kI8 : kU8;
    const uint32_t x = t.input(dims, qi, type);
    std::vector<bool> reduced(dims.size(), false);
    for (int32_t a : axes) reduced[size_t(a < 0 ? a + int32_t(dims.size()) : a)] = true;
    std::vector<uint32_t> outDims, keptDims;
    for (size_t k = 0; k < dims.size(); ++k) {
        if (!reduced[k]) keptDims.push_back(dims[k]);
        if (!reduced[k] || keepDims) outDims.push_back(reduced[k] ? 1 : dims[k]);
    }
    if (outDims.empty()) outDims.push_back(1);
    t.mb.op(npu::fw::hal::kOpMean, {x, t.i32s(axes), t.mb.i32(keepDims ? 1 : 0)},
            {t.mb.output(outDims, qo, type)});
    const size_t outCount = count(keptDims);
    std::vector<double> sum(outCount, 0.0);
    std::vector<size_t> n(outCount, 0);
    std::vector<uint32_t> idx(dims.size(), 0);
    for (size_t i = 0; i < count(dims); ++i) {
        size_t o = 0;
        for (size_t k = 0; k < dims.size(); ++k)
            if (!reduced[k]) o = o * dims[k] + idx[k];
        sum[o] += double(qi.scale * float(valueOf(t.inputs[0][i], isSigned) - qi.zp));
        ++n[o];
        for (size_t k = dims.size(); k-- > 0;) {
            if (++idx[k] < dims[k]) break;
            idx[k] = 0;
        }
    }
    std::vector<uint8_t> expect(outCount);
    const int lo = isSigned ? -128 : 0, hi = lo + 255;
    for (size_t o = 0; o < outCount; ++o) {
        const float mean = float(sum[o] / double(n[o]));
        const float v = std::round(mean / qo.scale) + float(qo.zp);
        expect[o] = uint8_t(!(v >= float(lo)) ? lo : (v > float(hi) ? hi : int32_t(v)));
    }
    CHECK(t.run(expect.size()) == expect);
}

// ---- PRELU (the reference's integer arithmetic, alpha broadcast) ----------------------------

void runPrelu(std::vector<uint32_t> dims, std::vector<uint32_t> alphaDims, bool constantAlpha, bool isSigned,
              uint32_t seed, npu::sim::HwConfig hw = {}) {
    OneOp t(seed, hw);
    const uint32_t type = isSigned ? kI8 : kU8;
    const int shift = isSigned ? -128 : 0;
    const Quant qi{0.05f, 120 + shift}, qa{0.01f, 50 + shift}, qo{0.04f, 100 + shift};
    const uint32_t x = t.input(dims, qi, type);
    uint32_t alpha = 0;
    std::vector<uint8_t> alphaBytes;
    if (constantAlpha) {
        alphaBytes = randomBytes(t.rng, count(alphaDims));
        alpha = t.mb.constant(type, alphaDims, qa.scale, qa.zp, alphaBytes.data(), alphaBytes.size());
    } else {
        alpha = t.input(alphaDims, qa, type);
        alphaBytes = t.inputs.back();
    }
    t.mb.op(npu::fw::hal::kOpPrelu, {x, alpha}, {t.mb.output(dims, qo, type)});
    int32_t mPos, mNeg;
    int sPos, sNeg;
    refQuantizeMultiplier(double(qi.scale / qo.scale), &mPos, &sPos);
    refQuantizeMultiplier(double(qi.scale * qa.scale) / double(qo.scale), &mNeg, &sNeg);
    const auto& in = t.inputs[0];
    std::vector<uint8_t> expect(in.size());
    const size_t inner = count(alphaDims);  // alpha broadcasts over the leading dimensions here
    for (size_t i = 0; i < in.size(); ++i) {
        const int32_t xv = valueOf(in[i], isSigned) - qi.zp;
        const int32_t a = valueOf(alphaBytes[i % inner], isSigned) - qa.zp;
        const int32_t v = qo.zp + (xv >= 0 ? refMbqm(xv, mPos, sPos) : refMbqm(xv * a, mNeg, sNeg));
        expect[i] = uint8_t(std::clamp(v, isSigned ? -128 : 0, isSigned ? 127 : 255));
    }
    CHECK(t.run(expect.size()) == expect);
}

}  // namespace

TEST_CASE("TRANSPOSE moves bytes by strided DMA, any permutation, uint8 and int8, tiled") {
    runTranspose({2, 3, 4, 5}, {0, 3, 1, 2}, false, 1);
    runTranspose({2, 3, 4, 5}, {3, 2, 1, 0}, true, 2);
    runTranspose({7, 9}, {1, 0}, false, 3);
    runTranspose({11}, {0}, true, 4);
    runTranspose({1, 5, 1, 3}, {2, 3, 0, 1}, false, 5);
    runTranspose({3, 37, 41, 5}, {0, 3, 1, 2}, true, 6, smallScratchpad());  // NHWC -> NCHW, 22 KiB
    runTranspose({2, 70, 3, 90}, {1, 3, 0, 2}, false, 7, smallScratchpad());
}

TEST_CASE("SPACE_TO_DEPTH and DEPTH_TO_SPACE, NHWC and NCHW, block sizes 1 to 3, tiled") {
    uint32_t seed = 100;
    for (bool toDepth : {true, false}) {
        for (bool nchw : {false, true}) {
            INFO((toDepth ? "SPACE_TO_DEPTH" : "DEPTH_TO_SPACE") << (nchw ? " NCHW" : " NHWC"));
            runSpaceDepth(toDepth, {1, 4, 4, 1, nchw}, 2, false, seed++);
            runSpaceDepth(toDepth, {2, 6, 9, 3, nchw}, 3, true, seed++);
            runSpaceDepth(toDepth, {1, 3, 5, 2, nchw}, 1, false, seed++);
            runSpaceDepth(toDepth, {2, 40, 60, 7, nchw}, 2, true, seed++, smallScratchpad());
        }
    }
}

TEST_CASE("STRIDED_SLICE with masks, negative indices, strides and shrink axes, tiled") {
    runStridedSlice({2, 3}, {0, 0}, {1, 3}, {1, 1}, 0, 0, 0, false, 200);
    runStridedSlice({2, 3}, {1, -1}, {2, 0}, {1, 1}, 0, 2, 1, true, 201);  // shrink axis 0, end mask 1
    runStridedSlice({4, 5, 6, 7}, {1, 0, -5, 2}, {4, 5, 6, -1}, {2, 2, 3, 1}, 2, 0, 0, false, 202);
    runStridedSlice({4, 5, 6, 7}, {3, 1, 2, 0}, {4, 2, 3, 7}, {1, 1, 1, 3}, 0, 0, 7, true, 203);
    runStridedSlice({10}, {-20}, {20}, {4}, 0, 0, 0, false, 204);
    runStridedSlice({3, 4, 5}, {1, 0, 4}, {3, 4, 0}, {2147483647, 1, -2147483647}, 0, 0, 0, true, 210);
    runStridedSlice({2, 3}, {-1, -1}, {-3, -4}, {-1, -1}, 0, 0, 0, true,
                    206);  // reversed: one DMA per element
    runStridedSlice({4, 5, 6, 7}, {3, 0, 5, 1}, {0, 5, 0, 7}, {-1, 2, -2, 3}, 0, 0, 0, false, 207);
    runStridedSlice({4, 5, 6, 7}, {0, 4, 0, 6}, {0, 0, 6, 0}, {-2, -1, 1, -3}, 3, 8, 0, true, 208);
    runStridedSlice({5, 300, 7}, {0, 0, 0}, {5, 300, 7}, {1, -1, 1}, 0, 3, 0, false, 209, smallScratchpad());
    runStridedSlice({3, 80, 90, 3}, {0, 3, 1, 0}, {3, 77, 90, 3}, {1, 2, 3, 1}, 0, 0, 0, true, 205,
                    smallScratchpad());
}

TEST_CASE("RESIZE_NEAREST_NEIGHBOR and RESIZE_BILINEAR: align_corners, half_pixel_centers, scales, NCHW") {
    uint32_t seed = 300;
    for (bool bilinear : {false, true}) {
        for (bool isSigned : {false, true}) {
            INFO((bilinear ? "bilinear" : "nearest") << (isSigned ? " int8" : " uint8"));
            runResize({{1, 2, 2, 1, false}, 3, 3, bilinear, false, false, false}, isSigned, seed++);
            runResize({{2, 4, 5, 3, false}, 7, 3, bilinear, true, false, false}, isSigned, seed++);
            runResize({{1, 5, 4, 2, true}, 3, 9, bilinear, false, true, false}, isSigned, seed++);
            runResize({{1, 3, 3, 2, false}, 6, 6, bilinear, false, false, true}, isSigned, seed++);
            runResize({{1, 6, 4, 3, true}, 1, 1, bilinear, true, false, false}, isSigned, seed++);
        }
    }
}

TEST_CASE("RESIZE tiles output rows and channels that do not divide the shape on a small scratchpad") {
    runResize({{2, 30, 40, 5, false}, 47, 61, true, false, true, false}, false, 320, smallScratchpad());
    runResize({{1, 50, 33, 70, false}, 17, 20, false, false, false, false}, true, 321, smallScratchpad());
    runResize({{1, 9, 64, 3, true}, 31, 128, true, true, false, false}, true, 322, smallScratchpad());
}

TEST_CASE("MEAN over any axes, keep_dims, requantizing, uint8 and int8, tiled") {
    const Quant a{0.8f, 5}, b{0.3f, 100};
    runMean({4, 3, 2}, {1, 0, -3, -3}, false, a, a, false, 400);
    runMean({4, 3, 2}, {0, 2}, true, a, a, false, 401);
    runMean({1, 7, 9, 5}, {1, 2}, true, a, b, false, 402);
    runMean({2, 7, 9, 5}, {1, 2}, false, {0.05f, -20}, {0.02f, 3}, true, 403);
    runMean({2, 3, 4, 5}, {3}, true, b, a, true, 404);
    runMean({2, 3, 4, 5}, {0, 1, 2, 3}, false, b, b, false, 405);
    runMean({2, 3, 4, 5}, {1, 3}, true, b, a, false, 406);
    runMean({2, 3, 1, 5}, {2}, true, b, a, false, 407);  // a unit axis: one term per mean
    runMean({3, 30, 40, 13}, {1, 2}, true, a, b, true, 408, smallScratchpad());
    runMean({2, 50, 60}, {0}, false, a, b, false, 409, smallScratchpad());
    runMean({1, 40, 40, 1}, {1, 2}, true, a, b, false, 410, smallScratchpad());  // one window, 1600 bytes
}

TEST_CASE("PRELU with per-channel alpha, constant or input, uint8 and int8, tiled") {
    for (bool isSigned : {false, true}) {
        runPrelu({2, 3, 4, 5}, {5}, true, isSigned, 500);
        runPrelu({2, 3, 4, 5}, {1, 1, 5}, false, isSigned, 501);
        runPrelu({2, 3, 4, 5}, {3, 4, 5}, true, isSigned, 502);
        runPrelu({4, 30, 40, 7}, {7}, true, isSigned, 503, smallScratchpad());
    }
}

TEST_CASE("data-movement, resize and mean refusals name the operation and the rule") {
    SECTION("TRANSPOSE that would requantize") {
        Harness h;
        REQUIRE(h.runtime.init().ok());
        ModelBuilder mb(h);
        const uint32_t x = mb.input({2, 3}, {0.5f, 1});
        const std::vector<int32_t> perm = {1, 0};
        mb.op(npu::fw::hal::kOpTranspose, {x, mb.constant(kInt32Tensor, {2}, 0, 0, perm.data(), 8)},
              {mb.output({3, 2}, {0.25f, 1})});
        expectRefused(h, mb, "TRANSPOSE", "does not requantize");
    }
    SECTION("TRANSPOSE with a repeated axis") {
        Harness h;
        REQUIRE(h.runtime.init().ok());
        ModelBuilder mb(h);
        const uint32_t x = mb.input({2, 3}, {0.5f, 1});
        const std::vector<int32_t> perm = {1, 1};
        mb.op(npu::fw::hal::kOpTranspose, {x, mb.constant(kInt32Tensor, {2}, 0, 0, perm.data(), 8)},
              {mb.output({3, 3}, {0.5f, 1})});
        expectRefused(h, mb, "TRANSPOSE", "not a permutation");
    }
    SECTION("STRIDED_SLICE walking a long innermost dimension backwards") {
        Harness h;
        REQUIRE(h.runtime.init().ok());
        ModelBuilder mb(h);
        const uint32_t x = mb.input({70000}, {0.5f, 1});
        const int32_t b = -1, e = 0, s = -1;
        mb.op(npu::fw::hal::kOpStridedSlice,
              {x, mb.constant(kInt32Tensor, {1}, 0, 0, &b, 4), mb.constant(kInt32Tensor, {1}, 0, 0, &e, 4),
               mb.constant(kInt32Tensor, {1}, 0, 0, &s, 4), mb.i32(0), mb.i32(1), mb.i32(0)},
              {mb.output({70000}, {0.5f, 1})});
        expectRefused(h, mb, "STRIDED_SLICE", "70000 DMA tiles (limit 65536)");
    }
    SECTION("SPACE_TO_DEPTH of a height that is not a multiple of the block") {
        Harness h;
        REQUIRE(h.runtime.init().ok());
        ModelBuilder mb(h);
        const uint32_t x = mb.input({1, 3, 4, 1}, {0.5f, 1});
        mb.op(npu::fw::hal::kOpSpaceToDepth, {x, mb.i32(2)}, {mb.output({1, 1, 2, 4}, {0.5f, 1})});
        expectRefused(h, mb, "SPACE_TO_DEPTH", "multiples of the block size 2");
    }
    SECTION("RESIZE_BILINEAR with align_corners and half_pixel_centers") {
        Harness h;
        REQUIRE(h.runtime.init().ok());
        ModelBuilder mb(h);
        const uint32_t x = mb.input({1, 2, 2, 1}, {0.5f, 1});
        mb.op(npu::fw::hal::kOpResizeBilinear,
              {x, mb.i32(3), mb.i32(3), mb.boolean(false), mb.boolean(true), mb.boolean(true)},
              {mb.output({1, 3, 3, 1}, {0.5f, 1})});
        expectRefused(h, mb, "RESIZE_BILINEAR", "align_corners and half_pixel_centers are both set");
    }
    SECTION("MEAN whose window does not fit the scratchpad") {
        Harness h(smallScratchpad());
        REQUIRE(h.runtime.init().ok());
        ModelBuilder mb(h);
        const uint32_t x = mb.input({1, 80, 80, 1}, {0.5f, 1});
        const std::vector<int32_t> axes = {1, 2};
        mb.op(npu::fw::hal::kOpMean, {x, mb.constant(kInt32Tensor, {2}, 0, 0, axes.data(), 8), mb.i32(1)},
              {mb.output({1, 1, 1, 1}, {0.5f, 1})});
        expectRefused(h, mb, "MEAN",
                      "6400 reduced elements per output do not fit half the 4096-byte scratchpad");
    }
}

TEST_CASE("loadBlob refuses a RESIZE, MEAN or VEC_OP PRELU command with a field out of range") {
    Harness h;
    REQUIRE(h.runtime.init().ok());
    ModelBuilder mb(h);
    const Quant q{0.1f, 3};
    const uint32_t x = mb.input({1, 4, 4, 3}, q);
    const uint32_t r = mb.temp({1, 6, 6, 3}, q), p = mb.temp({1, 6, 6, 3}, q);
    mb.op(npu::fw::hal::kOpResizeBilinear, {x, mb.i32(6), mb.i32(6)}, {r});
    const std::vector<uint8_t> alpha = {1, 2, 3};
    mb.op(npu::fw::hal::kOpPrelu, {r, mb.constant(kU8, {3}, 0.5f, 0, alpha.data(), 3)}, {p});
    const std::vector<int32_t> axes = {1, 2};
    mb.op(npu::fw::hal::kOpMean, {p, mb.constant(kInt32Tensor, {2}, 0, 0, axes.data(), 8), mb.i32(1)},
          {mb.output({1, 1, 1, 3}, q)});
    const BlobImage image(h, prepareClaimed(h, mb.build()));
    auto refused = [&](size_t command, uint32_t word, uint32_t value) {
        image.expectRefused(command, word, value);
    };
    uint32_t seen[3] = {};
    for (size_t c = 0; c < image.commands; ++c) {
        const uint32_t header = image.word(c, 0);
        const auto op = isa::Opcode(header & 0xFF);
        if (op == isa::Opcode::kResize) {
            ++seen[0];
            refused(c, isa::resize::kMode, 2);
            refused(c, isa::resize::kOutAddr, 0xFFFFFF00u);
            refused(c, isa::resize::kIfmRowStride, 0x7FFFFFFFu);
            refused(c, isa::resize::kIfmRows, 0);
            refused(c, isa::resize::kFullIn, 0);
            refused(c, 0, header | ((isa::resize::kFlagAlignCorners | isa::resize::kFlagHalfPixel) << 8));
        } else if (op == isa::Opcode::kMean) {
            ++seen[1];
            refused(c, isa::mean::kScaleIn, 0xBF800000u);  // -1.0f
            refused(c, isa::mean::kZpOut, 256);
            refused(c, isa::mean::kCount1, 0);
            refused(c, isa::mean::kIfmAddr, 0xFFFFFFF0u);
            refused(c, isa::mean::kStride1, 0xFFFFFFFFu);  // the input span leaves the scratchpad
            refused(c, isa::mean::kOutAddr, 0xFFFFFFF0u);
        } else if (op == isa::Opcode::kVecOp) {
            ++seen[2];
            refused(c, isa::vecop::kFunction, 7);
        }
    }
    CHECK(seen[0] > 0);
    CHECK(seen[1] > 0);
    CHECK(seen[2] > 0);
}

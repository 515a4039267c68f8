// RESIZE_BILINEAR, RESIZE_NEAREST_NEIGHBOR (TFLite reference semantics: align_corners,
// half_pixel_centers; output size given as INT32 sizes or float scales).
#include <cmath>

#include "common.h"

namespace npu::ref::ops {
namespace {

using hal::OperationType;

struct ResizeParams {
    uint32_t outH = 0, outW = 0;
    bool nchw = false, alignCorners = false, halfPixel = false;
};

bool supportsResize(const hal::Subgraph& sg, const hal::Operation& op) {
    return typeIn(operandType(sg, op, 0),
                  {OperandType::TENSOR_FLOAT32, OperandType::TENSOR_FLOAT16, OperandType::TENSOR_QUANT8_ASYMM,
                   OperandType::TENSOR_QUANT8_ASYMM_SIGNED});
}

Result<ResizeParams> resizeParams(OperationContext& ctx) {
    ResizeParams p;
    if (ctx.inputCount() < 3 || ctx.inputCount() > 6)
        return ctx.error("has " + std::to_string(ctx.inputCount()) + " inputs, expected 3 to 6");
    NPU_TRY(ctx.expectRank(0, 4));
    if (ctx.inputCount() > 3) p.nchw = NPU_TRY(boolInput(ctx, 3));
    if (ctx.inputCount() > 4) p.alignCorners = NPU_TRY(boolInput(ctx, 4));
    if (ctx.inputCount() > 5) p.halfPixel = NPU_TRY(boolInput(ctx, 5));
    if (p.alignCorners && p.halfPixel)
        return ctx.error("align_corners and half_pixel_centers cannot both be true");
    const Layout4 in = layoutOf(ctx.inputDims(0), p.nchw);
    const OperandType t = ctx.inputType(1);
    if (ctx.inputType(2) != t) return ctx.error("inputs 1 and 2 must have the same type");
    if (!ctx.hasValue(1) || !ctx.hasValue(2)) return ctx.deferred();
    if (t == OperandType::INT32) {
        const int32_t w = ctx.scalar<int32_t>(1), h = ctx.scalar<int32_t>(2);
        if (w <= 0 || h <= 0)
            return ctx.error("output size " + std::to_string(w) + "x" + std::to_string(h) +
                             " is not positive");
        p.outW = uint32_t(w);
        p.outH = uint32_t(h);
    } else if (t == OperandType::FLOAT32 || t == OperandType::FLOAT16) {
        const float sw = loadFloat(t, ctx.input(1).data(), 0), sh = loadFloat(t, ctx.input(2).data(), 0);
        if (!(sw > 0) || !(sh > 0)) return ctx.error("scales must be positive");
        const double w = std::floor(double(in.w) * sw), h = std::floor(double(in.h) * sh);
        if (w < 1 || h < 1 || w > 1e7 || h > 1e7) return ctx.error("scaled output size is out of range");
        p.outW = uint32_t(w);
        p.outH = uint32_t(h);
    } else {
        return ctx.error("input 1 must be INT32, FLOAT32 or FLOAT16");
    }
    return p;
}

Status prepareResize(OperationContext& ctx) {
    NPU_TRY(ctx.expectOutputCount(1));
    if (ctx.outputType(0) != ctx.inputType(0)) return ctx.error("output type differs from the input type");
    const ResizeParams p = NPU_TRY(resizeParams(ctx));
    const Layout4 in = layoutOf(ctx.inputDims(0), p.nchw);
    if (in.h == 0 || in.w == 0) return ctx.error("input has an empty spatial dimension");
    return ctx.setOutputShape(0, Layout4{in.n, p.outH, p.outW, in.c, p.nchw}.dims());
}

float resizeScale(uint32_t in, uint32_t out, bool alignCorners) {
    return alignCorners && out > 1 ? float(in - 1) / float(out - 1) : float(in) / float(out);
}

template <OperationType kType>
Status executeResize(OperationContext& ctx) {
    const ResizeParams p = *resizeParams(ctx);
    const RuntimeOperand& input = ctx.input(0);
    RuntimeOperand& output = ctx.output(0);
    const Layout4 in = layoutOf(input.dims, p.nchw), out = layoutOf(output.dims, p.nchw);
    const float scaleH = resizeScale(in.h, out.h, p.alignCorners),
                scaleW = resizeScale(in.w, out.w, p.alignCorners);
    const size_t elem = hal::elementSize(input.type);
    if (kType == OperationType::RESIZE_NEAREST_NEIGHBOR) {
        auto nearest = [&](uint32_t v, uint32_t inSize, float scale) {
            const float offset = p.halfPixel ? 0.5f : 0.0f;
            int32_t r = p.alignCorners ? int32_t(std::round((v + offset) * scale))
                                       : int32_t(std::floor((v + offset) * scale));
            r = std::min<int32_t>(r, int32_t(inSize) - 1);
            return uint32_t(std::max(r, 0));
        };
        for (uint32_t b = 0; b < out.n; ++b)
            for (uint32_t y = 0; y < out.h; ++y)
                for (uint32_t x = 0; x < out.w; ++x)
                    for (uint32_t c = 0; c < out.c; ++c) {
                        const size_t src = in.index(b, nearest(y, in.h, scaleH), nearest(x, in.w, scaleW), c);
                        std::memcpy(output.buffer.data() + out.index(b, y, x, c) * elem,
                                    input.data() + src * elem, elem);
                    }
        return {};
    }
    struct Interp {
        uint32_t lo, hi;
        float frac;
    };
    auto interp = [&](uint32_t v, uint32_t inSize, float scale) {
        const float s = p.halfPixel ? (v + 0.5f) * scale - 0.5f : v * scale;
        const int32_t lo = std::max(int32_t(std::floor(s)), 0);
        const int32_t hi = std::min(int32_t(std::ceil(s)), int32_t(inSize) - 1);
        return Interp{uint32_t(lo), uint32_t(hi), s - float(lo)};
    };
    const bool quant = !isFloatType(input.type);
    for (uint32_t b = 0; b < out.n; ++b)
        for (uint32_t y = 0; y < out.h; ++y) {
            const Interp iy = interp(y, in.h, scaleH);
            for (uint32_t x = 0; x < out.w; ++x) {
                const Interp ix = interp(x, in.w, scaleW);
                for (uint32_t c = 0; c < out.c; ++c) {
                    auto at = [&](uint32_t yy, uint32_t xx) {
                        const size_t k = in.index(b, yy, xx, c);
                        return quant ? float(loadQuant(input.type, input.data(), k))
                                     : loadFloat(input.type, input.data(), k);
                    };
                    const float v = at(iy.lo, ix.lo) * (1 - iy.frac) * (1 - ix.frac) +
                                    at(iy.hi, ix.lo) * iy.frac * (1 - ix.frac) +
                                    at(iy.lo, ix.hi) * (1 - iy.frac) * ix.frac +
                                    at(iy.hi, ix.hi) * iy.frac * ix.frac;
                    const size_t dst = out.index(b, y, x, c);
                    if (quant) {
                        const QuantRange r = quantTypeRange(output.type);
                        storeQuant(output.type, output.buffer.data(), dst,
                                   std::clamp(int32_t(std::round(v)), r.min, r.max));
                    } else {
                        storeFloat(output.type, output.buffer.data(), dst, v);
                    }
                }
            }
        }
    return {};
}

}  // namespace

std::vector<OperationRegistration> resizeOperations() {
    return {
        {OperationType::RESIZE_BILINEAR, supportsResize, prepareResize,
         executeResize<OperationType::RESIZE_BILINEAR>},
        {OperationType::RESIZE_NEAREST_NEIGHBOR, supportsResize, prepareResize,
         executeResize<OperationType::RESIZE_NEAREST_NEIGHBOR>},
    };
}

}  // namespace npu::ref::ops

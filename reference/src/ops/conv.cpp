// CONV_2D, DEPTHWISE_CONV_2D, GROUPED_CONV_2D, TRANSPOSE_CONV_2D (NHWC and NCHW; float32, float16,
// quant8 asymm / asymm signed with per-tensor or per-channel filters).
#include <cmath>

#include "common.h"

namespace npu::ref::ops {
namespace {

using hal::OperationType;

enum class ConvKind { kConv, kDepthwise, kGrouped, kTranspose };

// Everything preparation decides; stored nowhere (execution recomputes it cheaply from the
// scalars, which preparation has validated).
struct ConvParams {
    Padding padH, padW;
    int32_t strideW = 1, strideH = 1, dilationW = 1, dilationH = 1;
    int32_t groups = 1, multiplier = 1, activation = 0;
    bool nchw = false;
    int32_t outH = 0, outW = 0;  // transpose conv, implicit padding: the requested output size
};

bool supportsConv(const hal::Subgraph& sg, const hal::Operation& op) {
    const auto in = operandType(sg, op, 0), filter = operandType(sg, op, 1);
    if (typeIn(in, {OperandType::TENSOR_FLOAT32, OperandType::TENSOR_FLOAT16})) return filter == in;
    if (typeIn(in, {OperandType::TENSOR_QUANT8_ASYMM, OperandType::TENSOR_QUANT8_ASYMM_SIGNED})) {
        return filter == in || filter == OperandType::TENSOR_QUANT8_SYMM_PER_CHANNEL;
    }
    return false;
}

bool isExplicit(OperationContext& ctx, ConvKind kind) {
    const size_t n = ctx.inputCount();
    auto isBool = [&](size_t i) { return i < n && ctx.inputType(i) == OperandType::BOOL; };
    switch (kind) {
        case ConvKind::kConv:
            return n >= 11 || (n == 10 && !isBool(7));
        case ConvKind::kDepthwise:
            return n >= 12 || (n == 11 && !isBool(8));
        case ConvKind::kGrouped:
            return n >= 11;
        case ConvKind::kTranspose:
            return n >= 10;
    }
    return false;
}

Result<ConvParams> readParams(OperationContext& ctx, ConvKind kind, bool& explicitPadding, int32_t& scheme) {
    ConvParams p;
    explicitPadding = isExplicit(ctx, kind);
    size_t i = 3;
    auto int32At = [&](size_t k) { return scalarInput<int32_t>(ctx, k, OperandType::INT32); };
    if (kind == ConvKind::kTranspose && !explicitPadding) {
        // input 3 is the output shape tensor, read by the caller
        i = 4;
    }
    if (explicitPadding) {
        p.padW.before = NPU_TRY(int32At(i));
        p.padW.after = NPU_TRY(int32At(i + 1));
        p.padH.before = NPU_TRY(int32At(i + 2));
        p.padH.after = NPU_TRY(int32At(i + 3));
        i += 4;
        if (p.padW.before < 0 || p.padW.after < 0 || p.padH.before < 0 || p.padH.after < 0) {
            return ctx.error("negative explicit padding");
        }
    } else {
        scheme = NPU_TRY(int32At(i));
        if (scheme != 1 && scheme != 2)
            return ctx.error("input " + std::to_string(i) + ": padding scheme " + std::to_string(scheme) +
                             " is not SAME (1) or VALID (2)");
        i += 1;
    }
    p.strideW = NPU_TRY(int32At(i));
    p.strideH = NPU_TRY(int32At(i + 1));
    i += 2;
    if (kind == ConvKind::kDepthwise) p.multiplier = NPU_TRY(int32At(i++));
    if (kind == ConvKind::kGrouped) p.groups = NPU_TRY(int32At(i++));
    p.activation = NPU_TRY(activationOf(ctx, i++));
    if (i < ctx.inputCount()) p.nchw = NPU_TRY(boolInput(ctx, i++));
    if (kind == ConvKind::kConv || kind == ConvKind::kDepthwise) {
        if (i < ctx.inputCount()) {
            if (i + 1 >= ctx.inputCount())
                return ctx.error("dilation needs both a width and a height factor");
            p.dilationW = NPU_TRY(int32At(i));
            p.dilationH = NPU_TRY(int32At(i + 1));
            i += 2;
        }
    }
    if (i != ctx.inputCount())
        return ctx.error("has " + std::to_string(ctx.inputCount()) + " inputs, expected " +
                         std::to_string(i));
    if (p.strideW < 1 || p.strideH < 1) return ctx.error("strides must be >= 1");
    if (p.dilationW < 1 || p.dilationH < 1) return ctx.error("dilation factors must be >= 1");
    if (p.multiplier < 1) return ctx.error("depth multiplier must be >= 1");
    if (p.groups < 1) return ctx.error("number of groups must be >= 1");
    return p;
}

Result<ConvParams> convParams(OperationContext& ctx, ConvKind kind) {
    bool explicitPadding = false;
    int32_t scheme = 0;
    ConvParams p = NPU_TRY(readParams(ctx, kind, explicitPadding, scheme));
    if (!explicitPadding) {
        const Layout4 in = layoutOf(ctx.inputDims(0), p.nchw);
        const auto& f = ctx.inputDims(1);
        if (kind == ConvKind::kTranspose) {
            if (!ctx.hasValue(3)) return ctx.deferred();
            const int32_t* shape = ctx.inputData<int32_t>(3);
            p.outH = p.nchw ? shape[2] : shape[1];
            p.outW = p.nchw ? shape[3] : shape[2];
            // Padding as if the output were the input of the forward convolution.
            p.padH = implicitPadding(scheme, p.outH, f[1], 1, p.strideH);
            p.padW = implicitPadding(scheme, p.outW, f[2], 1, p.strideW);
        } else {
            p.padH = implicitPadding(scheme, in.h, f[1], p.dilationH, p.strideH);
            p.padW = implicitPadding(scheme, in.w, f[2], p.dilationW, p.strideW);
        }
    }
    return p;
}

Status checkQuantTypes(OperationContext& ctx, uint32_t outChannels, uint32_t channelDim) {
    const OperandType in = ctx.inputType(0);
    if (isFloatType(in)) {
        NPU_TRY(ctx.expectSameType(1, 0));
        NPU_TRY(ctx.expectSameType(2, 0));
        return {};
    }
    NPU_TRY(ctx.expectType(2, OperandType::TENSOR_INT32));
    if (ctx.inputType(1) == OperandType::TENSOR_QUANT8_SYMM_PER_CHANNEL) {
        const auto* cq = ctx.input(1).channelQuant;
        if (cq == nullptr || cq->channelDim != channelDim || cq->scales.size() != outChannels) {
            return ctx.error("per-channel filter needs " + std::to_string(outChannels) +
                             " scales on dimension " + std::to_string(channelDim));
        }
        for (float s : cq->scales) {
            if (!(s > 0)) return ctx.error("per-channel filter scales must be positive");
        }
    } else {
        NPU_TRY(ctx.expectSameType(1, 0));
        if (!(ctx.input(1).scale > 0)) return ctx.error("filter scale must be positive");
    }
    if (!(ctx.input(0).scale > 0) || !(ctx.output(0).scale > 0))
        return ctx.error("input and output scales must be positive");
    return {};
}

template <ConvKind kKind>
Status prepareConv(OperationContext& ctx) {
    NPU_TRY(ctx.expectOutputCount(1));
    if (ctx.inputCount() < 7)
        return ctx.error("has " + std::to_string(ctx.inputCount()) + " inputs, expected at least 7");
    NPU_TRY(ctx.expectRank(0, 4));
    NPU_TRY(ctx.expectRank(1, 4));
    NPU_TRY(ctx.expectRank(2, 1));
    if (ctx.outputType(0) != ctx.inputType(0)) return ctx.error("output type differs from the input type");
    const ConvParams p = NPU_TRY(convParams(ctx, kKind));
    const Layout4 in = layoutOf(ctx.inputDims(0), p.nchw);
    const auto& f = ctx.inputDims(1);
    const uint32_t outC = kKind == ConvKind::kDepthwise ? f[3] : f[0];
    NPU_TRY(checkQuantTypes(ctx, outC, kKind == ConvKind::kDepthwise ? 3 : 0));
    if (ctx.inputDims(2)[0] != outC) {
        return ctx.error("bias has " + std::to_string(ctx.inputDims(2)[0]) + " elements, expected " +
                         std::to_string(outC));
    }
    switch (kKind) {
        case ConvKind::kConv:
        case ConvKind::kTranspose:
            if (f[3] != in.c)
                return ctx.error("filter depth " + std::to_string(f[3]) + " differs from input depth " +
                                 std::to_string(in.c));
            break;
        case ConvKind::kDepthwise:
            if (f[0] != 1) return ctx.error("filter dimension 0 must be 1, got " + std::to_string(f[0]));
            if (uint64_t{in.c} * p.multiplier != f[3]) {
                return ctx.error("filter depth " + std::to_string(f[3]) + " is not input depth " +
                                 std::to_string(in.c) + " times depth multiplier " +
                                 std::to_string(p.multiplier));
            }
            break;
        case ConvKind::kGrouped:
            if (in.c % p.groups != 0 || outC % p.groups != 0 || f[3] * p.groups != in.c) {
                return ctx.error("input depth " + std::to_string(in.c) + ", output depth " +
                                 std::to_string(outC) + " and filter depth " + std::to_string(f[3]) +
                                 " do not fit " + std::to_string(p.groups) + " groups");
            }
            break;
    }
    int64_t outH, outW;
    if (kKind == ConvKind::kTranspose) {
        if (p.outH > 0 || p.outW > 0) {
            outH = p.outH;
            outW = p.outW;
        } else {
            outH = int64_t(in.h - 1) * p.strideH + f[1] - p.padH.before - p.padH.after;
            outW = int64_t(in.w - 1) * p.strideW + f[2] - p.padW.before - p.padW.after;
        }
    } else {
        outH = convOutputSize(in.h, f[1], p.dilationH, p.strideH, p.padH);
        outW = convOutputSize(in.w, f[2], p.dilationW, p.strideW, p.padW);
    }
    if (outH <= 0 || outW <= 0) {
        return ctx.error("output spatial size " + std::to_string(outH) + "x" + std::to_string(outW) +
                         " is not positive");
    }
    Layout4 out{in.n, static_cast<uint32_t>(outH), static_cast<uint32_t>(outW), outC, p.nchw};
    return ctx.setOutputShape(0, out.dims());
}

// Real multiplier of output channel oc for quantized convolutions.
QuantizedMultiplier channelMultiplier(OperationContext& ctx, uint32_t oc) {
    const RuntimeOperand& filter = ctx.input(1);
    const double fs = filter.channelQuant != nullptr ? filter.channelQuant->scales[oc] : filter.scale;
    return quantizeMultiplier(static_cast<double>(ctx.input(0).scale) * fs / ctx.output(0).scale);
}

// One convolution's sums: input and filter values with their zero points removed, accumulated
// in NHWC order as float or int64 (exact for int8 x int8 sums of this size).
struct ConvSums {
    const ConvParams& p;
    const RuntimeOperand& input;
    const RuntimeOperand& filter;
    Layout4 in, out;
    bool quant = false;
    int32_t inZp = 0, fZp = 0;
    std::vector<double> accF;
    std::vector<int64_t> accQ;

    ConvSums(const ConvParams& params, const RuntimeOperand& inputOperand,
             const RuntimeOperand& filterOperand, const RuntimeOperand& output)
        : p(params),
          input(inputOperand),
          filter(filterOperand),
          in(layoutOf(input.dims, p.nchw)),
          out(layoutOf(output.dims, p.nchw)),
          quant(!isFloatType(input.type)),
          inZp(input.zeroPoint),
          fZp(filter.channelQuant != nullptr ? 0 : filter.zeroPoint) {
        const size_t total = size_t(out.n) * out.h * out.w * out.c;
        accF.assign(quant ? 0 : total, 0.0);
        accQ.assign(quant ? total : 0, 0);
    }
    double inVal(uint32_t b, uint32_t y, uint32_t x, uint32_t c) const {
        const size_t k = in.index(b, y, x, c);
        return quant ? double(loadQuant(input.type, input.data(), k) - inZp)
                     : double(loadFloat(input.type, input.data(), k));
    }
    double filterVal(size_t k) const {
        return quant ? double(loadQuant(filter.type, filter.data(), k) - fZp)
                     : double(loadFloat(filter.type, filter.data(), k));
    }
    void add(size_t k, double v) {
        if (quant)
            accQ[k] += static_cast<int64_t>(v);
        else
            accF[k] += v;
    }

    // TRANSPOSE_CONV_2D: each input pixel scattered through the filter.
    void transposed() {
        const auto& f = filter.dims;
        const uint32_t fh = f[1], fw = f[2];
        for (uint32_t b = 0; b < in.n; ++b)
            for (uint32_t iy = 0; iy < in.h; ++iy)
                for (uint32_t ix = 0; ix < in.w; ++ix)
                    for (uint32_t oc = 0; oc < out.c; ++oc)
                        for (uint32_t ky = 0; ky < fh; ++ky) {
                            const int64_t oy = int64_t(iy) * p.strideH + ky - p.padH.before;
                            if (oy < 0 || oy >= out.h) continue;
                            for (uint32_t kx = 0; kx < fw; ++kx) {
                                const int64_t ox = int64_t(ix) * p.strideW + kx - p.padW.before;
                                if (ox < 0 || ox >= out.w) continue;
                                double sum = 0;
                                for (uint32_t ic = 0; ic < in.c; ++ic) {
                                    sum += inVal(b, iy, ix, ic) *
                                           filterVal(((size_t(oc) * fh + ky) * fw + kx) * f[3] + ic);
                                }
                                add(((size_t(b) * out.h + oy) * out.w + ox) * out.c + oc, sum);
                            }
                        }
    }

    // The window of output pixel (b, oy, ox) and channel oc (CONV_2D, GROUPED, DEPTHWISE).
    template <ConvKind kKind>
    double window(uint32_t b, uint32_t oy, uint32_t ox, uint32_t oc) const {
        const auto& f = filter.dims;
        const uint32_t fh = f[1], fw = f[2];
        const uint32_t outPerGroup = out.c / p.groups, inPerGroup = in.c / p.groups;
        double sum = 0;
        for (uint32_t ky = 0; ky < fh; ++ky) {
            const int64_t iy = int64_t(oy) * p.strideH - p.padH.before + int64_t(ky) * p.dilationH;
            if (iy < 0 || iy >= in.h) continue;
            for (uint32_t kx = 0; kx < fw; ++kx) {
                const int64_t ix = int64_t(ox) * p.strideW - p.padW.before + int64_t(kx) * p.dilationW;
                if (ix < 0 || ix >= in.w) continue;
                if (kKind == ConvKind::kDepthwise) {
                    sum +=
                        inVal(b, iy, ix, oc / p.multiplier) * filterVal((size_t(ky) * fw + kx) * out.c + oc);
                } else {
                    const uint32_t g = oc / outPerGroup;
                    for (uint32_t ic = 0; ic < inPerGroup; ++ic) {
                        sum += inVal(b, iy, ix, g * inPerGroup + ic) *
                               filterVal(((size_t(oc) * fh + ky) * fw + kx) * f[3] + ic);
                    }
                }
            }
        }
        return sum;
    }

    template <ConvKind kKind>
    void forward() {
        for (uint32_t b = 0; b < out.n; ++b)
            for (uint32_t oy = 0; oy < out.h; ++oy)
                for (uint32_t ox = 0; ox < out.w; ++ox)
                    for (uint32_t oc = 0; oc < out.c; ++oc)
                        add(((size_t(b) * out.h + oy) * out.w + ox) * out.c + oc,
                            window<kKind>(b, oy, ox, oc));
    }
};

// Bias, activation, requantization; written in the output's layout.
void writeConvOutput(OperationContext& ctx, const ConvSums& sums) {
    const RuntimeOperand& bias = ctx.input(2);
    RuntimeOperand& output = ctx.output(0);
    const Layout4& out = sums.out;
    const bool quant = sums.quant;
    std::vector<QuantizedMultiplier> mult;
    if (quant)
        for (uint32_t oc = 0; oc < out.c; ++oc) mult.push_back(channelMultiplier(ctx, oc));
    const QuantRange range =
        quant ? activationRange(sums.p.activation, output.type, output.scale, output.zeroPoint)
              : QuantRange{};
    for (uint32_t b = 0; b < out.n; ++b)
        for (uint32_t y = 0; y < out.h; ++y)
            for (uint32_t x = 0; x < out.w; ++x)
                for (uint32_t oc = 0; oc < out.c; ++oc) {
                    const size_t k = ((size_t(b) * out.h + y) * out.w + x) * out.c + oc;
                    const size_t dst = out.index(b, y, x, oc);
                    if (quant) {
                        const int64_t acc =
                            sums.accQ[k] + loadQuant(OperandType::TENSOR_INT32, bias.data(), oc);
                        const int32_t clampedAcc =
                            static_cast<int32_t>(std::clamp<int64_t>(acc, INT32_MIN, INT32_MAX));
                        const int32_t q =
                            multiplyByQuantizedMultiplier(clampedAcc, mult[oc]) + output.zeroPoint;
                        storeQuant(output.type, output.buffer.data(), dst,
                                   std::clamp(q, range.min, range.max));
                    } else {
                        const double v = sums.accF[k] + loadFloat(bias.type, bias.data(), oc);
                        storeFloat(output.type, output.buffer.data(), dst,
                                   applyActivation(static_cast<float>(v), sums.p.activation));
                    }
                }
}

template <ConvKind kKind>
Status executeConv(OperationContext& ctx) {
    const ConvParams p = *convParams(ctx, kKind);  // validated at preparation
    ConvSums sums(p, ctx.input(0), ctx.input(1), ctx.output(0));
    if constexpr (kKind == ConvKind::kTranspose) {
        sums.transposed();
    } else {
        sums.forward<kKind>();
    }
    writeConvOutput(ctx, sums);
    return {};
}

}  // namespace

std::vector<OperationRegistration> convOperations() {
    return {
        {OperationType::CONV_2D, supportsConv, prepareConv<ConvKind::kConv>, executeConv<ConvKind::kConv>},
        {OperationType::DEPTHWISE_CONV_2D, supportsConv, prepareConv<ConvKind::kDepthwise>,
         executeConv<ConvKind::kDepthwise>},
        {OperationType::GROUPED_CONV_2D, supportsConv, prepareConv<ConvKind::kGrouped>,
         executeConv<ConvKind::kGrouped>},
        {OperationType::TRANSPOSE_CONV_2D, supportsConv, prepareConv<ConvKind::kTranspose>,
         executeConv<ConvKind::kTranspose>},
    };
}

}  // namespace npu::ref::ops

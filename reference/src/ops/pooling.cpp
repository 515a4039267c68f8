// AVERAGE_POOL_2D, MAX_POOL_2D, L2_POOL_2D (NHWC and NCHW).
#include <cmath>

#include "common.h"

namespace npu::ref::ops {
namespace {

using hal::OperationType;

struct PoolParams {
    Padding padH, padW;
    int32_t strideW = 1, strideH = 1, filterW = 1, filterH = 1, activation = 0;
    bool nchw = false;
};

template <OperationType kType>
bool supportsPool(const hal::Subgraph& sg, const hal::Operation& op) {
    const auto t = operandType(sg, op, 0);
    if (kType == OperationType::L2_POOL_2D)
        return typeIn(t, {OperandType::TENSOR_FLOAT32, OperandType::TENSOR_FLOAT16});
    return typeIn(t, {OperandType::TENSOR_FLOAT32, OperandType::TENSOR_FLOAT16,
                      OperandType::TENSOR_QUANT8_ASYMM, OperandType::TENSOR_QUANT8_ASYMM_SIGNED});
}

Result<PoolParams> poolParams(OperationContext& ctx) {
    PoolParams p;
    auto int32At = [&](size_t k) { return scalarInput<int32_t>(ctx, k, OperandType::INT32); };
    const bool explicitPadding = ctx.inputCount() >= 10;
    size_t i = 1;
    int32_t scheme = 0;
    if (explicitPadding) {
        p.padW.before = NPU_TRY(int32At(1));
        p.padW.after = NPU_TRY(int32At(2));
        p.padH.before = NPU_TRY(int32At(3));
        p.padH.after = NPU_TRY(int32At(4));
        i = 5;
        if (p.padW.before < 0 || p.padW.after < 0 || p.padH.before < 0 || p.padH.after < 0)
            return ctx.error("negative padding");
    } else {
        scheme = NPU_TRY(int32At(1));
        if (scheme != 1 && scheme != 2)
            return ctx.error("padding scheme " + std::to_string(scheme) + " is not SAME (1) or VALID (2)");
        i = 2;
    }
    p.strideW = NPU_TRY(int32At(i));
    p.strideH = NPU_TRY(int32At(i + 1));
    p.filterW = NPU_TRY(int32At(i + 2));
    p.filterH = NPU_TRY(int32At(i + 3));
    p.activation = NPU_TRY(activationOf(ctx, i + 4));
    p.nchw = NPU_TRY(boolInput(ctx, i + 5));
    if (ctx.inputCount() > i + 6)
        return ctx.error("has " + std::to_string(ctx.inputCount()) + " inputs, expected at most " +
                         std::to_string(i + 6));
    if (p.strideW < 1 || p.strideH < 1 || p.filterW < 1 || p.filterH < 1)
        return ctx.error("strides and filter sizes must be >= 1");
    if (!explicitPadding) {
        const Layout4 in = layoutOf(ctx.inputDims(0), p.nchw);
        p.padH = implicitPadding(scheme, in.h, p.filterH, 1, p.strideH);
        p.padW = implicitPadding(scheme, in.w, p.filterW, 1, p.strideW);
    }
    return p;
}

Status preparePool(OperationContext& ctx) {
    NPU_TRY(ctx.expectOutputCount(1));
    if (ctx.inputCount() < 7 || ctx.inputCount() > 11)
        return ctx.error("has " + std::to_string(ctx.inputCount()) + " inputs, expected 7 to 11");
    NPU_TRY(ctx.expectRank(0, 4));
    if (ctx.outputType(0) != ctx.inputType(0)) return ctx.error("output type differs from the input type");
    const PoolParams p = NPU_TRY(poolParams(ctx));
    const Layout4 in = layoutOf(ctx.inputDims(0), p.nchw);
    const int64_t outH = convOutputSize(in.h, p.filterH, 1, p.strideH, p.padH);
    const int64_t outW = convOutputSize(in.w, p.filterW, 1, p.strideW, p.padW);
    if (outH <= 0 || outW <= 0) return ctx.error("output spatial size is not positive");
    if (!isFloatType(ctx.inputType(0)) &&
        (ctx.input(0).scale != ctx.output(0).scale || ctx.input(0).zeroPoint != ctx.output(0).zeroPoint)) {
        return ctx.error("quantized pooling needs the same scale and zero point on input and output");
    }
    return ctx.setOutputShape(0, Layout4{in.n, uint32_t(outH), uint32_t(outW), in.c, p.nchw}.dims());
}

template <OperationType kType>
Status executePool(OperationContext& ctx) {
    const PoolParams p = *poolParams(ctx);
    const RuntimeOperand& input = ctx.input(0);
    RuntimeOperand& output = ctx.output(0);
    const Layout4 in = layoutOf(input.dims, p.nchw), out = layoutOf(output.dims, p.nchw);
    const bool quant = !isFloatType(input.type);
    const QuantRange range =
        quant ? activationRange(p.activation, output.type, output.scale, output.zeroPoint) : QuantRange{};
    for (uint32_t b = 0; b < out.n; ++b)
        for (uint32_t oy = 0; oy < out.h; ++oy)
            for (uint32_t ox = 0; ox < out.w; ++ox)
                for (uint32_t c = 0; c < out.c; ++c) {
                    const int64_t y0 = int64_t(oy) * p.strideH - p.padH.before,
                                  x0 = int64_t(ox) * p.strideW - p.padW.before;
                    const int64_t yBegin = std::max<int64_t>(y0, 0),
                                  yEnd = std::min<int64_t>(y0 + p.filterH, in.h);
                    const int64_t xBegin = std::max<int64_t>(x0, 0),
                                  xEnd = std::min<int64_t>(x0 + p.filterW, in.w);
                    double sum = 0, maxv = -INFINITY;
                    int32_t qsum = 0, qmax = INT32_MIN, count = 0;
                    for (int64_t y = yBegin; y < yEnd; ++y)
                        for (int64_t x = xBegin; x < xEnd; ++x) {
                            const size_t k = in.index(b, uint32_t(y), uint32_t(x), c);
                            ++count;
                            if (quant) {
                                const int32_t v = loadQuant(input.type, input.data(), k);
                                qsum += v;
                                qmax = std::max(qmax, v);
                            } else {
                                const double v = loadFloat(input.type, input.data(), k);
                                sum += kType == OperationType::L2_POOL_2D ? v * v : v;
                                maxv = std::max(maxv, v);
                            }
                        }
                    const size_t dst = out.index(b, oy, ox, c);
                    if (quant) {
                        int32_t q = qmax;
                        if (kType == OperationType::AVERAGE_POOL_2D) {
                            // TFLite rounds the average half away from zero.
                            q = count == 0
                                    ? 0
                                    : (qsum > 0 ? (qsum + count / 2) / count : (qsum - count / 2) / count);
                        }
                        storeQuant(output.type, output.buffer.data(), dst,
                                   std::clamp(q, range.min, range.max));
                    } else {
                        double v = maxv;
                        if (kType == OperationType::AVERAGE_POOL_2D) v = count == 0 ? 0 : sum / count;
                        if (kType == OperationType::L2_POOL_2D) v = count == 0 ? 0 : std::sqrt(sum / count);
                        storeFloat(output.type, output.buffer.data(), dst,
                                   applyActivation(float(v), p.activation));
                    }
                }
    return {};
}

}  // namespace

std::vector<OperationRegistration> poolingOperations() {
    return {
        {OperationType::AVERAGE_POOL_2D, supportsPool<OperationType::AVERAGE_POOL_2D>, preparePool,
         executePool<OperationType::AVERAGE_POOL_2D>},
        {OperationType::MAX_POOL_2D, supportsPool<OperationType::MAX_POOL_2D>, preparePool,
         executePool<OperationType::MAX_POOL_2D>},
        {OperationType::L2_POOL_2D, supportsPool<OperationType::L2_POOL_2D>, preparePool,
         executePool<OperationType::L2_POOL_2D>},
    };
}

}  // namespace npu::ref::ops

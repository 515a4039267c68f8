// L2_NORMALIZATION, LOCAL_RESPONSE_NORMALIZATION along one axis (default the last);
// INSTANCE_NORMALIZATION over the spatial plane of each batch and channel (NHWC or NCHW).
#include <cmath>

#include "common.h"

namespace npu::ref::ops {
namespace {

using hal::OperationType;

bool supportsL2Norm(const hal::Subgraph& sg, const hal::Operation& op) {
    return typeIn(operandType(sg, op, 0),
                  {OperandType::TENSOR_FLOAT32, OperandType::TENSOR_FLOAT16, OperandType::TENSOR_QUANT8_ASYMM,
                   OperandType::TENSOR_QUANT8_ASYMM_SIGNED});
}
bool supportsLrn(const hal::Subgraph& sg, const hal::Operation& op) {
    return typeIn(operandType(sg, op, 0), {OperandType::TENSOR_FLOAT32, OperandType::TENSOR_FLOAT16});
}

Result<uint32_t> axisInput(OperationContext& ctx, size_t i) {
    const int32_t rank = int32_t(ctx.inputRank(0));
    int32_t axis = -1;
    if (i < ctx.inputCount()) axis = NPU_TRY(scalarInput<int32_t>(ctx, i, OperandType::INT32));
    if (axis < -rank || axis >= rank)
        return ctx.error("axis " + std::to_string(axis) + " out of range for rank " + std::to_string(rank));
    return uint32_t(axis < 0 ? axis + rank : axis);
}

// outer x len x inner view of the input around `axis`.
struct AxisView {
    size_t outer = 1, len = 1, inner = 1;
    size_t at(size_t o, size_t k, size_t i) const { return (o * len + k) * inner + i; }
};
AxisView axisView(const std::vector<uint32_t>& dims, uint32_t axis) {
    AxisView v;
    for (uint32_t d = 0; d < axis; ++d) v.outer *= dims[d];
    v.len = dims[axis];
    for (size_t d = axis + 1; d < dims.size(); ++d) v.inner *= dims[d];
    return v;
}

Status prepareL2Norm(OperationContext& ctx) {
    NPU_TRY(ctx.expectInputCount(1, 2));
    NPU_TRY(ctx.expectOutputCount(1));
    if (ctx.inputRank(0) < 1 || ctx.inputRank(0) > 4) return ctx.error("input 0 must have rank 1 to 4");
    if (ctx.outputType(0) != ctx.inputType(0)) return ctx.error("output type differs from the input type");
    NPU_TRY(axisInput(ctx, 1));
    return ctx.setOutputShape(0, ctx.inputDims(0));
}

Status executeL2Norm(OperationContext& ctx) {
    const uint32_t axis = *axisInput(ctx, 1);
    const RuntimeOperand& in = ctx.input(0);
    RuntimeOperand& out = ctx.output(0);
    const AxisView v = axisView(in.dims, axis);
    for (size_t o = 0; o < v.outer; ++o)
        for (size_t i = 0; i < v.inner; ++i) {
            double sum = 0;
            for (size_t k = 0; k < v.len; ++k) {
                const double x = loadReal(in, v.at(o, k, i));
                sum += x * x;
            }
            const double norm = std::max(std::sqrt(sum), 1e-6);
            for (size_t k = 0; k < v.len; ++k)
                storeReal(out, v.at(o, k, i), float(loadReal(in, v.at(o, k, i)) / norm));
        }
    return {};
}

struct LrnParams {
    int32_t radius = 0;
    float bias = 0, alpha = 0, beta = 0;
    uint32_t axis = 0;
};

Result<LrnParams> lrnParams(OperationContext& ctx) {
    LrnParams p;
    p.radius = NPU_TRY(scalarInput<int32_t>(ctx, 1, OperandType::INT32));
    p.bias = NPU_TRY(floatScalarInput(ctx, 2));
    p.alpha = NPU_TRY(floatScalarInput(ctx, 3));
    p.beta = NPU_TRY(floatScalarInput(ctx, 4));
    p.axis = NPU_TRY(axisInput(ctx, 5));
    if (p.radius < 0) return ctx.error("radius must not be negative");
    return p;
}

Status prepareLrn(OperationContext& ctx) {
    NPU_TRY(ctx.expectInputCount(5, 6));
    NPU_TRY(ctx.expectOutputCount(1));
    if (ctx.inputRank(0) < 1 || ctx.inputRank(0) > 4) return ctx.error("input 0 must have rank 1 to 4");
    if (ctx.outputType(0) != ctx.inputType(0)) return ctx.error("output type differs from the input type");
    NPU_TRY(lrnParams(ctx));
    return ctx.setOutputShape(0, ctx.inputDims(0));
}

Status executeLrn(OperationContext& ctx) {
    const LrnParams p = *lrnParams(ctx);
    const RuntimeOperand& in = ctx.input(0);
    RuntimeOperand& out = ctx.output(0);
    const AxisView v = axisView(in.dims, p.axis);
    for (size_t o = 0; o < v.outer; ++o)
        for (size_t i = 0; i < v.inner; ++i)
            for (size_t k = 0; k < v.len; ++k) {
                const int64_t lo = std::max<int64_t>(0, int64_t(k) - p.radius);
                const int64_t hi = std::min<int64_t>(int64_t(v.len) - 1, int64_t(k) + p.radius);
                double sum = 0;
                for (int64_t j = lo; j <= hi; ++j) {
                    const double x = loadReal(in, v.at(o, size_t(j), i));
                    sum += x * x;
                }
                const double x = loadReal(in, v.at(o, k, i));
                storeReal(out, v.at(o, k, i), float(x / std::pow(p.bias + p.alpha * sum, double(p.beta))));
            }
    return {};
}

bool supportsInstanceNorm(const hal::Subgraph& sg, const hal::Operation& op) {
    return typeIn(operandType(sg, op, 0), {OperandType::TENSOR_FLOAT32, OperandType::TENSOR_FLOAT16});
}

struct InstanceNormParams {
    float gamma = 0, beta = 0, epsilon = 0;
    bool nchw = false;
};

// Gamma, beta and epsilon are FLOAT16 scalars for a TENSOR_FLOAT16 input, FLOAT32 otherwise.
Result<InstanceNormParams> instanceNormParams(OperationContext& ctx) {
    InstanceNormParams p;
    p.gamma = NPU_TRY(floatScalarInput(ctx, 1));
    p.beta = NPU_TRY(floatScalarInput(ctx, 2));
    p.epsilon = NPU_TRY(floatScalarInput(ctx, 3));
    NPU_TRY(ctx.expectType(4, OperandType::BOOL));
    p.nchw = NPU_TRY(boolInput(ctx, 4));
    return p;
}

Status prepareInstanceNorm(OperationContext& ctx) {
    NPU_TRY(ctx.expectInputCount(5, 5));
    NPU_TRY(expectAllPresent(ctx));
    NPU_TRY(ctx.expectOutputCount(1));
    if (!isFloatType(ctx.inputType(0))) return ctx.error("input 0 must be TENSOR_FLOAT32 or TENSOR_FLOAT16");
    NPU_TRY(ctx.expectRank(0, 4));
    if (ctx.outputType(0) != ctx.inputType(0)) return ctx.error("output type differs from the input type");
    NPU_TRY(instanceNormParams(ctx));
    return ctx.setOutputShape(0, ctx.inputDims(0));
}

// Mean and variance accumulate in double; the division by the standard deviation is in float
// like the NNAPI reference's.
Status executeInstanceNorm(OperationContext& ctx) {
    const InstanceNormParams p = *instanceNormParams(ctx);
    const RuntimeOperand& in = ctx.input(0);
    RuntimeOperand& out = ctx.output(0);
    const Layout4 l = layoutOf(in.dims, p.nchw);
    const double plane = double(l.h) * l.w;
    for (uint32_t b = 0; b < l.n; ++b)
        for (uint32_t c = 0; c < l.c; ++c) {
            double mean = 0, variance = 0;
            for (uint32_t y = 0; y < l.h; ++y)
                for (uint32_t x = 0; x < l.w; ++x) mean += loadFloat(in.type, in.data(), l.index(b, y, x, c));
            mean /= plane;
            for (uint32_t y = 0; y < l.h; ++y)
                for (uint32_t x = 0; x < l.w; ++x) {
                    const double d = loadFloat(in.type, in.data(), l.index(b, y, x, c)) - mean;
                    variance += d * d;
                }
            variance /= plane;
            const float sigma = std::sqrt(float(variance) + p.epsilon);
            for (uint32_t y = 0; y < l.h; ++y)
                for (uint32_t x = 0; x < l.w; ++x) {
                    const size_t i = l.index(b, y, x, c);
                    const float v =
                        (loadFloat(in.type, in.data(), i) - float(mean)) * p.gamma / sigma + p.beta;
                    storeFloat(out.type, out.buffer.data(), i, v);
                }
        }
    return {};
}

}  // namespace

std::vector<OperationRegistration> normalizationOperations() {
    return {
        {OperationType::L2_NORMALIZATION, supportsL2Norm, prepareL2Norm, executeL2Norm},
        {OperationType::LOCAL_RESPONSE_NORMALIZATION, supportsLrn, prepareLrn, executeLrn},
        {OperationType::INSTANCE_NORMALIZATION, supportsInstanceNorm, prepareInstanceNorm,
         executeInstanceNorm},
    };
}

}  // namespace npu::ref::ops

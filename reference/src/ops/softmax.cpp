// SOFTMAX over one axis (default the last): exp(beta * (x - max)) / sum.
#include <cmath>

#include "common.h"

namespace npu::ref::ops {
namespace {

bool supportsSoftmax(const hal::Subgraph& sg, const hal::Operation& op) {
    return typeIn(operandType(sg, op, 0),
                  {OperandType::TENSOR_FLOAT32, OperandType::TENSOR_FLOAT16, OperandType::TENSOR_QUANT8_ASYMM,
                   OperandType::TENSOR_QUANT8_ASYMM_SIGNED});
}

Result<int32_t> softmaxAxis(OperationContext& ctx) {
    const int32_t rank = static_cast<int32_t>(ctx.inputRank(0));
    int32_t axis = -1;
    if (ctx.inputCount() > 2) axis = NPU_TRY(scalarInput<int32_t>(ctx, 2, OperandType::INT32));
    if (axis < -rank || axis >= rank)
        return ctx.error("axis " + std::to_string(axis) + " out of range for rank " + std::to_string(rank));
    return axis < 0 ? axis + rank : axis;
}

Result<float> softmaxBeta(OperationContext& ctx) {
    const OperandType t =
        ctx.inputType(0) == OperandType::TENSOR_FLOAT16 ? OperandType::FLOAT16 : OperandType::FLOAT32;
    NPU_TRY(ctx.expectType(1, t));
    if (!ctx.hasValue(1)) return ctx.deferred();
    return loadFloat(t, ctx.input(1).data(), 0);
}

Status prepareSoftmax(OperationContext& ctx) {
    NPU_TRY(ctx.expectInputCount(2, 3));
    NPU_TRY(ctx.expectOutputCount(1));
    if (ctx.inputRank(0) < 1 || ctx.inputRank(0) > 4) return ctx.error("input 0 must have rank 1 to 4");
    if (ctx.outputType(0) != ctx.inputType(0)) return ctx.error("output type differs from the input type");
    const float beta = NPU_TRY(softmaxBeta(ctx));
    if (!(beta > 0)) return ctx.error("beta must be positive");
    NPU_TRY(softmaxAxis(ctx));
    return ctx.setOutputShape(0, ctx.inputDims(0));
}

Status executeSoftmax(OperationContext& ctx) {
    const float beta = *softmaxBeta(ctx);
    const int32_t axis = *softmaxAxis(ctx);
    const RuntimeOperand& in = ctx.input(0);
    RuntimeOperand& out = ctx.output(0);
    size_t outer = 1, inner = 1;
    const size_t len = in.dims[axis];
    for (int32_t d = 0; d < axis; ++d) outer *= in.dims[d];
    for (size_t d = axis + 1; d < in.dims.size(); ++d) inner *= in.dims[d];
    std::vector<double> e(len);
    for (size_t o = 0; o < outer; ++o)
        for (size_t i = 0; i < inner; ++i) {
            auto at = [&](size_t k) { return (o * len + k) * inner + i; };
            double maxv = -INFINITY, sum = 0;
            for (size_t k = 0; k < len; ++k) maxv = std::max<double>(maxv, loadReal(in, at(k)));
            for (size_t k = 0; k < len; ++k) sum += (e[k] = std::exp((loadReal(in, at(k)) - maxv) * beta));
            for (size_t k = 0; k < len; ++k) storeReal(out, at(k), static_cast<float>(e[k] / sum));
        }
    return {};
}

}  // namespace

std::vector<OperationRegistration> softmaxOperations() {
    return {{hal::OperationType::SOFTMAX, supportsSoftmax, prepareSoftmax, executeSoftmax}};
}

}  // namespace npu::ref::ops

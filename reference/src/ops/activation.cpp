// RELU, RELU1, RELU6, LOGISTIC, TANH, HARD_SWISH: element-wise, any rank.
// Quantized inputs are dequantized, mapped and requantized (round half away from zero), which
// stays within the CTS tolerance of one quantum.
#include <cmath>

#include "common.h"

namespace npu::ref::ops {
namespace {

using hal::OperationType;

bool supportsUnary(const hal::Subgraph& sg, const hal::Operation& op) {
    return typeIn(operandType(sg, op, 0),
                  {OperandType::TENSOR_FLOAT32, OperandType::TENSOR_FLOAT16, OperandType::TENSOR_QUANT8_ASYMM,
                   OperandType::TENSOR_QUANT8_ASYMM_SIGNED});
}

Status prepareUnary(OperationContext& ctx) {
    NPU_TRY(ctx.expectInputCount(1, 1));
    NPU_TRY(ctx.expectOutputCount(1));
    if (ctx.outputType(0) != ctx.inputType(0)) return ctx.error("output type differs from the input type");
    if (isQuant8Type(ctx.inputType(0)) && (!(ctx.input(0).scale > 0) || !(ctx.output(0).scale > 0))) {
        return ctx.error("quantized operands need a positive scale");
    }
    return ctx.setOutputShape(0, ctx.inputDims(0));
}

template <OperationType kType>
float apply(float x) {
    switch (kType) {
        case OperationType::RELU:
            return std::max(x, 0.0f);
        case OperationType::RELU1:
            return std::clamp(x, -1.0f, 1.0f);
        case OperationType::RELU6:
            return std::clamp(x, 0.0f, 6.0f);
        case OperationType::LOGISTIC:
            return 1.0f / (1.0f + std::exp(-x));
        case OperationType::TANH:
            return std::tanh(x);
        default:
            return x * std::clamp(x + 3.0f, 0.0f, 6.0f) / 6.0f;  // HARD_SWISH
    }
}

template <OperationType kType>
Status executeUnary(OperationContext& ctx) {
    const RuntimeOperand& in = ctx.input(0);
    RuntimeOperand& out = ctx.output(0);
    const size_t n = elementCount(in.dims);
    for (size_t i = 0; i < n; ++i) storeReal(out, i, apply<kType>(loadReal(in, i)));
    return {};
}

}  // namespace

std::vector<OperationRegistration> activationOperations() {
    return {
        {OperationType::RELU, supportsUnary, prepareUnary, executeUnary<OperationType::RELU>},
        {OperationType::RELU1, supportsUnary, prepareUnary, executeUnary<OperationType::RELU1>},
        {OperationType::RELU6, supportsUnary, prepareUnary, executeUnary<OperationType::RELU6>},
        {OperationType::LOGISTIC, supportsUnary, prepareUnary, executeUnary<OperationType::LOGISTIC>},
        {OperationType::TANH, supportsUnary, prepareUnary, executeUnary<OperationType::TANH>},
        {OperationType::HARD_SWISH, supportsUnary, prepareUnary, executeUnary<OperationType::HARD_SWISH>},
    };
}

}  // namespace npu::ref::ops

// FULLY_CONNECTED: output[b, u] = act(sum_i input[b, i] * weights[u, i] + bias[u]).
#include "common.h"

namespace npu::ref::ops {
namespace {

bool supportsFullyConnected(const hal::Subgraph& sg, const hal::Operation& op) {
    const auto in = operandType(sg, op, 0);
    return typeIn(in, {OperandType::TENSOR_FLOAT32, OperandType::TENSOR_FLOAT16,
                       OperandType::TENSOR_QUANT8_ASYMM, OperandType::TENSOR_QUANT8_ASYMM_SIGNED}) &&
           operandType(sg, op, 1) == in;
}

Status prepareFullyConnected(OperationContext& ctx) {
    NPU_TRY(ctx.expectInputCount(4, 4));
    NPU_TRY(ctx.expectOutputCount(1));
    NPU_TRY(ctx.expectSameType(1, 0));
    const bool quant = !isFloatType(ctx.inputType(0));
    NPU_TRY(quant ? ctx.expectType(2, OperandType::TENSOR_INT32) : ctx.expectSameType(2, 0));
    NPU_TRY(activationOf(ctx, 3));
    if (ctx.outputType(0) != ctx.inputType(0)) return ctx.error("output type differs from the input type");
    NPU_TRY(ctx.expectRank(1, 2));
    NPU_TRY(ctx.expectRank(2, 1));
    if (ctx.inputRank(0) < 1 || ctx.inputRank(0) > 4) return ctx.error("input 0 must have rank 1 to 4");
    const uint32_t units = ctx.inputDims(1)[0], inputSize = ctx.inputDims(1)[1];
    if (ctx.inputDims(2)[0] != units) {
        return ctx.error("bias has " + std::to_string(ctx.inputDims(2)[0]) + " elements, weights have " +
                         std::to_string(units) + " units");
    }
    const size_t n = elementCount(ctx.inputDims(0));
    if (inputSize == 0 || n % inputSize != 0) {
        return ctx.error("input of " + std::to_string(n) +
                         " elements is not a multiple of the weights' input size " +
                         std::to_string(inputSize));
    }
    if (quant && (!(ctx.input(0).scale > 0) || !(ctx.input(1).scale > 0) || !(ctx.output(0).scale > 0))) {
        return ctx.error("quantized operands need a positive scale");
    }
    return ctx.setOutputShape(0, {static_cast<uint32_t>(n / inputSize), units});
}

Status executeFullyConnected(OperationContext& ctx) {
    const RuntimeOperand &input = ctx.input(0), &weights = ctx.input(1), &bias = ctx.input(2);
    RuntimeOperand& output = ctx.output(0);
    const int32_t act = ctx.scalar<int32_t>(3);
    const uint32_t batches = output.dims[0], units = output.dims[1], inputSize = weights.dims[1];
    if (isFloatType(input.type)) {
        for (uint32_t b = 0; b < batches; ++b)
            for (uint32_t u = 0; u < units; ++u) {
                double sum = loadFloat(bias.type, bias.data(), u);
                for (uint32_t i = 0; i < inputSize; ++i) {
                    sum += double(loadFloat(input.type, input.data(), size_t(b) * inputSize + i)) *
                           loadFloat(weights.type, weights.data(), size_t(u) * inputSize + i);
                }
                storeFloat(output.type, output.buffer.data(), size_t(b) * units + u,
                           applyActivation(float(sum), act));
            }
        return {};
    }
    const QuantizedMultiplier m =
        quantizeMultiplier(static_cast<double>(input.scale) * weights.scale / output.scale);
    const QuantRange range = activationRange(act, output.type, output.scale, output.zeroPoint);
    const int32_t* biasData = ctx.inputData<int32_t>(2);
    for (uint32_t b = 0; b < batches; ++b)
        for (uint32_t u = 0; u < units; ++u) {
            int32_t acc = biasData[u];
            for (uint32_t i = 0; i < inputSize; ++i) {
                acc +=
                    (loadQuant(input.type, input.data(), size_t(b) * inputSize + i) - input.zeroPoint) *
                    (loadQuant(weights.type, weights.data(), size_t(u) * inputSize + i) - weights.zeroPoint);
            }
            const int32_t q = multiplyByQuantizedMultiplier(acc, m) + output.zeroPoint;
            storeQuant(output.type, output.buffer.data(), size_t(b) * units + u,
                       std::clamp(q, range.min, range.max));
        }
    return {};
}

}  // namespace

std::vector<OperationRegistration> fullyConnectedOperations() {
    return {{hal::OperationType::FULLY_CONNECTED, supportsFullyConnected, prepareFullyConnected,
             executeFullyConnected}};
}

}  // namespace npu::ref::ops

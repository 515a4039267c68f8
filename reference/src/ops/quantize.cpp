// QUANTIZE (float -> quant8) and DEQUANTIZE (quant8, incl. per-channel symmetric -> float).
#include "common.h"

namespace npu::ref::ops {
namespace {

using hal::OperationType;

bool supportsQuantize(const hal::Subgraph& sg, const hal::Operation& op) {
    const bool out = !op.outputs.empty() && op.outputs[0] < sg.operands.size() &&
                     typeIn(sg.operands[op.outputs[0]].type,
                            {OperandType::TENSOR_QUANT8_ASYMM, OperandType::TENSOR_QUANT8_ASYMM_SIGNED});
    return out && typeIn(operandType(sg, op, 0), {OperandType::TENSOR_FLOAT32, OperandType::TENSOR_FLOAT16});
}

bool supportsDequantize(const hal::Subgraph& sg, const hal::Operation& op) {
    const bool out =
        !op.outputs.empty() && op.outputs[0] < sg.operands.size() &&
        typeIn(sg.operands[op.outputs[0]].type, {OperandType::TENSOR_FLOAT32, OperandType::TENSOR_FLOAT16});
    return out && typeIn(operandType(sg, op, 0),
                         {OperandType::TENSOR_QUANT8_ASYMM, OperandType::TENSOR_QUANT8_ASYMM_SIGNED,
                          OperandType::TENSOR_QUANT8_SYMM, OperandType::TENSOR_QUANT8_SYMM_PER_CHANNEL});
}

Status prepareConvert(OperationContext& ctx) {
    NPU_TRY(ctx.expectInputCount(1, 1));
    NPU_TRY(ctx.expectOutputCount(1));
    NPU_TRY(ctx.expectRankAtMost(0, 4));
    const RuntimeOperand& in = ctx.input(0);
    if (in.type == OperandType::TENSOR_QUANT8_SYMM_PER_CHANNEL &&
        (in.channelQuant == nullptr || in.channelQuant->channelDim >= in.dims.size() ||
         in.channelQuant->scales.size() != in.dims[in.channelQuant->channelDim])) {
        return ctx.error("per-channel input needs one scale per channel");
    }
    if (isQuant8Type(ctx.outputType(0)) && !(ctx.output(0).scale > 0))
        return ctx.error("output scale must be positive");
    return ctx.setOutputShape(0, ctx.inputDims(0));
}

Status executeQuantize(OperationContext& ctx) {
    const RuntimeOperand& in = ctx.input(0);
    RuntimeOperand& out = ctx.output(0);
    const size_t n = elementCount(in.dims);
    for (size_t i = 0; i < n; ++i) storeReal(out, i, loadFloat(in.type, in.data(), i));
    return {};
}

Status executeDequantize(OperationContext& ctx) {
    const RuntimeOperand& in = ctx.input(0);
    RuntimeOperand& out = ctx.output(0);
    const size_t n = elementCount(in.dims);
    if (in.type == OperandType::TENSOR_QUANT8_SYMM_PER_CHANNEL) {
        const uint32_t dim = in.channelQuant->channelDim;
        size_t inner = 1;
        for (size_t d = dim + 1; d < in.dims.size(); ++d) inner *= in.dims[d];
        for (size_t i = 0; i < n; ++i) {
            const float scale = in.channelQuant->scales[(i / inner) % in.dims[dim]];
            storeFloat(out.type, out.buffer.data(), i, scale * float(loadQuant(in.type, in.data(), i)));
        }
        return {};
    }
    for (size_t i = 0; i < n; ++i) storeFloat(out.type, out.buffer.data(), i, loadReal(in, i));
    return {};
}

}  // namespace

std::vector<OperationRegistration> quantizeOperations() {
    return {
        {OperationType::DEQUANTIZE, supportsDequantize, prepareConvert, executeDequantize},
        {OperationType::QUANTIZE, supportsQuantize, prepareConvert, executeQuantize},
    };
}

}  // namespace npu::ref::ops

#include "common.h"

namespace npu::ref::ops {

bool supportsDataTypes(const hal::Subgraph& sg, const hal::Operation& op) {
    return typeIn(operandType(sg, op, 0),
                  {OperandType::TENSOR_FLOAT32, OperandType::TENSOR_FLOAT16, OperandType::TENSOR_INT32,
                   OperandType::TENSOR_QUANT8_ASYMM, OperandType::TENSOR_QUANT8_ASYMM_SIGNED});
}

Status executeCopy(OperationContext& ctx) {
    std::memcpy(ctx.output(0).buffer.data(), ctx.input(0).data(), ctx.output(0).byteSize());
    return {};
}

Result<int32_t> activationOf(OperationContext& ctx, size_t i) {
    const int32_t act = NPU_TRY(scalarInput<int32_t>(ctx, i, OperandType::INT32));
    if (act < 0 || act > 3)
        return ctx.error("input " + std::to_string(i) + ": fused activation " + std::to_string(act) +
                         " is not NONE, RELU, RELU1 or RELU6");
    return act;
}

Result<bool> boolInput(OperationContext& ctx, size_t i) {
    if (i >= ctx.inputCount() || ctx.isOmitted(i)) return false;
    NPU_TRY(ctx.expectType(i, OperandType::BOOL));
    if (!ctx.hasValue(i)) return ctx.deferred();
    return ctx.scalar<uint8_t>(i) != 0;
}

Result<uint32_t> requiredAxis(OperationContext& ctx, size_t i) {
    const int32_t rank = static_cast<int32_t>(ctx.inputRank(0));
    const int32_t axis = NPU_TRY(scalarInput<int32_t>(ctx, i, OperandType::INT32));
    if (axis < -rank || axis >= rank) {
        return ctx.error("input " + std::to_string(i) + ": axis " + std::to_string(axis) +
                         " out of range for rank " + std::to_string(rank));
    }
    return static_cast<uint32_t>(axis < 0 ? axis + rank : axis);
}

Result<std::vector<uint32_t>> broadcastShapes(OperationContext& ctx, const std::vector<uint32_t>& a,
                                              const std::vector<uint32_t>& b) {
    const size_t rank = std::max(a.size(), b.size());
    std::vector<uint32_t> out(rank);
    for (size_t k = 0; k < rank; ++k) {
        const uint32_t da = k < a.size() ? a[a.size() - 1 - k] : 1;
        const uint32_t db = k < b.size() ? b[b.size() - 1 - k] : 1;
        if (da != db && da != 1 && db != 1) {
            return ctx.error("shapes " + dimsToString(a) + " and " + dimsToString(b) +
                             " cannot be broadcast");
        }
        out[rank - 1 - k] = da == 1 ? db : da;
    }
    return out;
}

}  // namespace npu::ref::ops

// TOPK_V2: the k largest values along the last dimension and their indices, largest first; equal
// values are ordered by descending index, as the NNAPI reference's sort of (value, index) pairs.
#include <algorithm>

#include "common.h"

namespace npu::ref::ops {
namespace {

bool supportsTopK(const hal::Subgraph& sg, const hal::Operation& op) {
    return supportsDataTypes(sg, op);
}

Status prepareTopK(OperationContext& ctx) {
    NPU_TRY(ctx.expectInputCount(2, 2));
    NPU_TRY(ctx.expectOutputCount(2));
    if (ctx.inputRank(0) < 1) return ctx.error("input 0 must have rank 1 or more");
    const int32_t k = NPU_TRY(scalarInput<int32_t>(ctx, 1, OperandType::INT32));
    const uint32_t n = ctx.inputDims(0).back();
    if (k < 1 || uint32_t(k) > n) {
        return ctx.error("input 1 (k) " + std::to_string(k) + " is outside 1.." + std::to_string(n) +
                         " (last dimension of input 0)");
    }
    if (ctx.outputType(0) != ctx.inputType(0)) return ctx.error("output 0 type differs from the input type");
    if (ctx.outputType(1) != OperandType::TENSOR_INT32)
        return ctx.error("output 1 (indices) must be TENSOR_INT32");
    if (isQuant8Type(ctx.inputType(0)) &&
        (ctx.output(0).scale != ctx.input(0).scale || ctx.output(0).zeroPoint != ctx.input(0).zeroPoint)) {
        return ctx.error("output 0 must have the quantization of input 0");
    }
    std::vector<uint32_t> dims = ctx.inputDims(0);
    dims.back() = uint32_t(k);
    NPU_TRY(ctx.setOutputShape(0, dims));
    return ctx.setOutputShape(1, dims);
}

Status executeTopK(OperationContext& ctx) {
    const RuntimeOperand& in = ctx.input(0);
    const OperandType type = in.type;
    const uint32_t n = in.dims.back(), k = uint32_t(ctx.scalar<int32_t>(1));
    const size_t rows = elementCount(in.dims) / n, bytes = hal::elementSize(type);
    auto value = [&](size_t i) -> double {
        return isFloatType(type) ? double(loadFloat(type, in.data(), i))
                                 : double(loadQuant(type, in.data(), i));
    };
    RuntimeOperand& values = ctx.output(0);
    int32_t* indices = ctx.outputData<int32_t>(1);
    std::vector<std::pair<double, int32_t>> row(n);
    for (size_t r = 0; r < rows; ++r) {
        for (uint32_t i = 0; i < n; ++i) row[i] = {value(r * n + i), int32_t(i)};
        std::partial_sort(row.begin(), row.begin() + k, row.end(),
                          [](const auto& a, const auto& b) { return a > b; });
        for (uint32_t j = 0; j < k; ++j) {
            std::memcpy(values.buffer.data() + (r * k + j) * bytes,
                        in.data() + (r * n + size_t(row[j].second)) * bytes, bytes);
            indices[r * k + j] = row[j].second;
        }
    }
    return {};
}

}  // namespace

std::vector<OperationRegistration> topkOperations() {
    return {{hal::OperationType::TOPK_V2, supportsTopK, prepareTopK, executeTopK}};
}

}  // namespace npu::ref::ops

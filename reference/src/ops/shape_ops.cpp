// RESHAPE, CONCATENATION: data movement without arithmetic (quantized tensors keep their bytes).
#include "common.h"

namespace npu::ref::ops {
namespace {

using hal::OperationType;

Status prepareReshape(OperationContext& ctx) {
    NPU_TRY(ctx.expectInputCount(2, 2));
    NPU_TRY(ctx.expectOutputCount(1));
    NPU_TRY(ctx.expectType(1, OperandType::TENSOR_INT32));
    NPU_TRY(ctx.expectRank(1, 1));
    if (ctx.outputType(0) != ctx.inputType(0)) return ctx.error("output type differs from the input type");
    if (!ctx.hasValue(1)) return ctx.deferred();
    const int32_t* shape = ctx.inputData<int32_t>(1);
    const size_t rank = ctx.inputDims(1)[0];
    const size_t total = elementCount(ctx.inputDims(0));
    std::vector<uint32_t> dims(rank);
    int64_t known = 1;
    int32_t unknownAt = -1;
    for (size_t i = 0; i < rank; ++i) {
        if (shape[i] == -1) {
            if (unknownAt >= 0) return ctx.error("the new shape has more than one -1");
            unknownAt = static_cast<int32_t>(i);
        } else if (shape[i] < 0) {
            return ctx.error("the new shape has a negative dimension " + std::to_string(shape[i]));
        } else {
            dims[i] = static_cast<uint32_t>(shape[i]);
            known *= shape[i];
        }
    }
    if (unknownAt >= 0) {
        if (known == 0 || total % known != 0) return ctx.error("cannot infer the -1 dimension");
        dims[unknownAt] = static_cast<uint32_t>(total / known);
        known *= dims[unknownAt];
    }
    if (static_cast<size_t>(known) != total) {
        return ctx.error("new shape " + dimsToString(dims) + " has " + std::to_string(known) +
                         " elements, the input " + std::to_string(total));
    }
    return ctx.setOutputShape(0, std::move(dims));
}

Result<uint32_t> concatAxis(OperationContext& ctx) {
    const size_t last = ctx.inputCount() - 1;
    const int32_t rank = static_cast<int32_t>(ctx.inputRank(0));
    int32_t axis = NPU_TRY(scalarInput<int32_t>(ctx, last, OperandType::INT32));
    if (axis < -rank || axis >= rank)
        return ctx.error("axis " + std::to_string(axis) + " out of range for rank " + std::to_string(rank));
    return static_cast<uint32_t>(axis < 0 ? axis + rank : axis);
}

Status prepareConcat(OperationContext& ctx) {
    if (ctx.inputCount() < 2) return ctx.error("needs at least one tensor and the axis");
    NPU_TRY(ctx.expectOutputCount(1));
    if (ctx.outputType(0) != ctx.inputType(0)) return ctx.error("output type differs from the input type");
    const uint32_t axis = NPU_TRY(concatAxis(ctx));
    std::vector<uint32_t> dims = ctx.inputDims(0);
    NPU_TRY(ctx.expectRankAtMost(0, 4));
    for (size_t i = 1; i + 1 < ctx.inputCount(); ++i) {
        NPU_TRY(ctx.expectSameType(i, 0));
        const auto& d = ctx.inputDims(i);
        if (d.size() != dims.size())
            return ctx.error("input " + std::to_string(i) + " has another rank than input 0");
        for (size_t k = 0; k < d.size(); ++k) {
            if (k != axis && d[k] != dims[k]) {
                return ctx.error("input " + std::to_string(i) + " shape " + dimsToString(d) +
                                 " differs from " + dimsToString(ctx.inputDims(0)) + " outside axis " +
                                 std::to_string(axis));
            }
        }
        dims[axis] += d[axis];
    }
    return ctx.setOutputShape(0, std::move(dims));
}

Status executeConcat(OperationContext& ctx) {
    const uint32_t axis = *concatAxis(ctx);
    RuntimeOperand& out = ctx.output(0);
    const size_t elem = hal::elementSize(out.type);
    size_t outer = 1;
    for (uint32_t d = 0; d < axis; ++d) outer *= out.dims[d];
    size_t innerOut = elem;
    for (size_t d = axis; d < out.dims.size(); ++d) innerOut *= out.dims[d];
    size_t offset = 0;
    const bool requantize = isQuant8Type(out.type);
    for (size_t i = 0; i + 1 < ctx.inputCount(); ++i) {
        const RuntimeOperand& in = ctx.input(i);
        size_t inner = elem;
        for (size_t d = axis; d < in.dims.size(); ++d) inner *= in.dims[d];
        const bool same = !requantize || (in.scale == out.scale && in.zeroPoint == out.zeroPoint);
        if (inner == 0) continue;  // a zero-sized input adds nothing and may have no buffer at all
        for (size_t o = 0; o < outer; ++o) {
            uint8_t* dst = out.buffer.data() + o * innerOut + offset;
            const uint8_t* src = in.data() + o * inner;
            if (same) {
                std::memcpy(dst, src, inner);
            } else {
                for (size_t k = 0; k < inner; ++k) {
                    const float real = in.scale * float(loadQuant(in.type, src, k) - in.zeroPoint);
                    storeQuant(out.type, dst, k, quantizeValue(real, out.scale, out.zeroPoint, out.type));
                }
            }
        }
        offset += inner;
    }
    return {};
}

}  // namespace

std::vector<OperationRegistration> shapeOperations() {
    return {
        {OperationType::RESHAPE, supportsDataTypes, prepareReshape, executeCopy},
        {OperationType::CONCATENATION, supportsDataTypes, prepareConcat, executeConcat},
    };
}

}  // namespace npu::ref::ops

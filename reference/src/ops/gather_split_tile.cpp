// Data movement that indexes, splits or repeats a tensor: GATHER, SPLIT, TILE; and the two
// shape-level operations FILL (a tensor of one value) and RANK (a tensor's rank as a scalar).
// Elements are moved as bytes: quantized outputs keep the input's scale and zero point, as the
// NNAPI definitions require (AOSP common/operations/Gather.cpp, Split.cpp, Tile.cpp, Fill.cpp,
// Rank.cpp).
#include <limits>

#include "common.h"

namespace npu::ref::ops {
namespace {

using hal::OperationType;

Status expectOutputLikeInput(OperationContext& ctx, size_t output) {
    if (ctx.outputType(output) != ctx.inputType(0)) {
        return ctx.error("output " + std::to_string(output) + " type " +
                         std::string(hal::toString(ctx.outputType(output))) +
                         " differs from the input type " + std::string(hal::toString(ctx.inputType(0))));
    }
    if (isQuant8Type(ctx.inputType(0)) && (ctx.output(output).scale != ctx.input(0).scale ||
                                           ctx.output(output).zeroPoint != ctx.input(0).zeroPoint)) {
        return ctx.error("output " + std::to_string(output) +
                         " must have the scale and zero point of input 0");
    }
    return {};
}

// outer x len x inner view of input 0 around `axis`, inner in bytes.
struct AxisView {
    size_t outer = 1, len = 1, innerBytes = 0;
};
AxisView viewAround(const RuntimeOperand& in, uint32_t axis) {
    AxisView v;
    for (uint32_t d = 0; d < axis; ++d) v.outer *= in.dims[d];
    v.len = in.dims[axis];
    v.innerBytes = hal::elementSize(in.type);
    for (size_t d = axis + 1; d < in.dims.size(); ++d) v.innerBytes *= in.dims[d];
    return v;
}

// GATHER (input, axis INT32, indices TENSOR_INT32): output dims = input[:axis] ++ indices ++ input[axis+1:].
Status prepareGather(OperationContext& ctx) {
    NPU_TRY(ctx.expectInputCount(3, 3));
    NPU_TRY(ctx.expectOutputCount(1));
    if (ctx.inputRank(0) < 1) return ctx.error("input 0 must have rank 1 or more");
    NPU_TRY(ctx.expectType(2, OperandType::TENSOR_INT32));
    NPU_TRY(expectOutputLikeInput(ctx, 0));
    const uint32_t axis = NPU_TRY(requiredAxis(ctx, 1));
    const auto& in = ctx.inputDims(0);
    std::vector<uint32_t> dims(in.begin(), in.begin() + axis);
    dims.insert(dims.end(), ctx.inputDims(2).begin(), ctx.inputDims(2).end());
    dims.insert(dims.end(), in.begin() + axis + 1, in.end());
    return ctx.setOutputShape(0, std::move(dims));
}

Status executeGather(OperationContext& ctx) {
    const uint32_t axis = *requiredAxis(ctx, 1);
    const RuntimeOperand& in = ctx.input(0);
    const AxisView v = viewAround(in, axis);
    const size_t count = elementCount(ctx.inputDims(2));
    const int32_t* indices = ctx.inputData<int32_t>(2);
    for (size_t k = 0; k < count; ++k) {
        if (indices[k] < 0 || static_cast<size_t>(indices[k]) >= v.len) {
            return ctx.error("input 2 (indices) element " + std::to_string(k) + " = " +
                             std::to_string(indices[k]) + " is outside 0.." + std::to_string(v.len) +
                             " (dimension " + std::to_string(axis) + " of input 0)");
        }
    }
    uint8_t* out = ctx.output(0).buffer.data();
    for (size_t o = 0; o < v.outer; ++o) {
        for (size_t k = 0; k < count; ++k) {
            std::memcpy(out + (o * count + k) * v.innerBytes,
                        in.data() + (o * v.len + size_t(indices[k])) * v.innerBytes, v.innerBytes);
        }
    }
    return {};
}

// SPLIT (input, axis INT32, num_splits INT32): num_splits equal outputs along the axis.
Status prepareSplit(OperationContext& ctx) {
    NPU_TRY(ctx.expectInputCount(3, 3));
    if (ctx.inputRank(0) < 1) return ctx.error("input 0 must have rank 1 or more");
    const uint32_t axis = NPU_TRY(requiredAxis(ctx, 1));
    const int32_t splits = NPU_TRY(scalarInput<int32_t>(ctx, 2, OperandType::INT32));
    if (splits < 1) return ctx.error("input 2: num_splits " + std::to_string(splits) + " must be positive");
    NPU_TRY(ctx.expectOutputCount(static_cast<size_t>(splits)));
    std::vector<uint32_t> dims = ctx.inputDims(0);
    if (dims[axis] % static_cast<uint32_t>(splits) != 0) {
        return ctx.error("dimension " + std::to_string(axis) + " of input 0 " + dimsToString(dims) +
                         " is not divisible by " + std::to_string(splits) + " splits");
    }
    dims[axis] /= static_cast<uint32_t>(splits);
    for (size_t i = 0; i < ctx.outputCount(); ++i) {
        NPU_TRY(expectOutputLikeInput(ctx, i));
        NPU_TRY(ctx.setOutputShape(i, dims));
    }
    return {};
}

Status executeSplit(OperationContext& ctx) {
    const uint32_t axis = *requiredAxis(ctx, 1);
    const RuntimeOperand& in = ctx.input(0);
    const AxisView v = viewAround(in, axis);
    const size_t splits = ctx.outputCount(), part = v.len / splits;
    for (size_t s = 0; s < splits; ++s) {
        uint8_t* out = ctx.output(s).buffer.data();
        for (size_t o = 0; o < v.outer; ++o) {
            std::memcpy(out + o * part * v.innerBytes, in.data() + (o * v.len + s * part) * v.innerBytes,
                        part * v.innerBytes);
        }
    }
    return {};
}

// TILE (input, multiples TENSOR_INT32 [rank]): dimension d repeated multiples[d] times.
Result<std::vector<uint32_t>> tileMultiples(OperationContext& ctx) {
    NPU_TRY(ctx.expectType(1, OperandType::TENSOR_INT32));
    NPU_TRY(ctx.expectRank(1, 1));
    const uint32_t rank = ctx.inputRank(0);
    if (ctx.inputDims(1)[0] != rank) {
        return ctx.error("input 1 (multiples) has " + std::to_string(ctx.inputDims(1)[0]) +
                         " elements, input 0 rank " + std::to_string(rank));
    }
    if (!ctx.hasValue(1)) return ctx.deferred();
    std::vector<uint32_t> multiples(rank);
    for (uint32_t d = 0; d < rank; ++d) {
        const int32_t m = ctx.inputData<int32_t>(1)[d];
        if (m < 1)
            return ctx.error("input 1 (multiples) element " + std::to_string(d) + " = " + std::to_string(m) +
                             " must be positive");
        multiples[d] = static_cast<uint32_t>(m);
    }
    return multiples;
}

Status prepareTile(OperationContext& ctx) {
    NPU_TRY(ctx.expectInputCount(2, 2));
    NPU_TRY(ctx.expectOutputCount(1));
    if (ctx.inputRank(0) < 1) return ctx.error("input 0 must have rank 1 or more");
    NPU_TRY(expectOutputLikeInput(ctx, 0));
    const auto multiples = NPU_TRY(tileMultiples(ctx));
    std::vector<uint32_t> dims = ctx.inputDims(0);
    for (size_t d = 0; d < dims.size(); ++d) {
        if (uint64_t(dims[d]) * multiples[d] > std::numeric_limits<uint32_t>::max()) {
            return ctx.error("output dimension " + std::to_string(d) + " overflows");
        }
        dims[d] *= multiples[d];
    }
    return ctx.setOutputShape(0, std::move(dims));
}

Status executeTile(OperationContext& ctx) {
    const RuntimeOperand& in = ctx.input(0);
    RuntimeOperand& out = ctx.output(0);
    const size_t rank = in.dims.size(), elem = hal::elementSize(in.type), total = elementCount(out.dims);
    std::vector<size_t> inStride(rank);
    size_t s = 1;
    for (size_t d = rank; d-- > 0;) {
        inStride[d] = s;
        s *= in.dims[d];
    }
    std::vector<uint32_t> idx(rank, 0);
    for (size_t n = 0; n < total; ++n) {
        size_t src = 0;
        for (size_t d = 0; d < rank; ++d) src += (idx[d] % in.dims[d]) * inStride[d];
        std::memcpy(out.buffer.data() + n * elem, in.data() + src * elem, elem);
        for (size_t d = rank; d-- > 0;) {
            if (++idx[d] < out.dims[d]) break;
            idx[d] = 0;
        }
    }
    return {};
}

// FILL (dims TENSOR_INT32 [rank], value): a tensor of that shape with every element = value; the
// value's scalar type follows the output type (FLOAT16, FLOAT32 or INT32).
bool supportsFill(const hal::Subgraph& sg, const hal::Operation& op) {
    if (op.outputs.empty() || op.outputs[0] >= sg.operands.size()) return false;
    return operandType(sg, op, 0) == OperandType::TENSOR_INT32 &&
           typeIn(sg.operands[op.outputs[0]].type,
                  {OperandType::TENSOR_FLOAT32, OperandType::TENSOR_FLOAT16, OperandType::TENSOR_INT32});
}

OperandType fillValueType(OperandType output) {
    switch (output) {
        case OperandType::TENSOR_FLOAT16:
            return OperandType::FLOAT16;
        case OperandType::TENSOR_INT32:
            return OperandType::INT32;
        default:
            return OperandType::FLOAT32;
    }
}

Status prepareFill(OperationContext& ctx) {
    NPU_TRY(ctx.expectInputCount(2, 2));
    NPU_TRY(ctx.expectOutputCount(1));
    NPU_TRY(ctx.expectType(0, OperandType::TENSOR_INT32));
    NPU_TRY(ctx.expectRank(0, 1));
    NPU_TRY(ctx.expectType(1, fillValueType(ctx.outputType(0))));
    if (!ctx.hasValue(0)) return ctx.deferred();
    std::vector<uint32_t> dims(ctx.inputDims(0)[0]);
    for (size_t d = 0; d < dims.size(); ++d) {
        const int32_t v = ctx.inputData<int32_t>(0)[d];
        if (v < 1)
            return ctx.error("input 0 (dims) element " + std::to_string(d) + " = " + std::to_string(v) +
                             " must be positive");
        dims[d] = static_cast<uint32_t>(v);
    }
    return ctx.setOutputShape(0, std::move(dims));
}

Status executeFill(OperationContext& ctx) {
    RuntimeOperand& out = ctx.output(0);
    const size_t elem = hal::elementSize(out.type), total = elementCount(out.dims);
    for (size_t n = 0; n < total; ++n) std::memcpy(out.buffer.data() + n * elem, ctx.input(1).data(), elem);
    return {};
}

// RANK (input) -> INT32 scalar: the number of dimensions of input 0.
bool supportsRank(const hal::Subgraph& sg, const hal::Operation& op) {
    return typeIn(
        operandType(sg, op, 0),
        {OperandType::TENSOR_FLOAT32, OperandType::TENSOR_FLOAT16, OperandType::TENSOR_INT32,
         OperandType::TENSOR_QUANT8_ASYMM, OperandType::TENSOR_QUANT8_ASYMM_SIGNED,
         OperandType::TENSOR_QUANT8_SYMM, OperandType::TENSOR_QUANT8_SYMM_PER_CHANNEL,
         OperandType::TENSOR_QUANT16_SYMM, OperandType::TENSOR_QUANT16_ASYMM, OperandType::TENSOR_BOOL8});
}

Status prepareRank(OperationContext& ctx) {
    NPU_TRY(ctx.expectInputCount(1, 1));
    NPU_TRY(ctx.expectOutputCount(1));
    if (ctx.outputType(0) != OperandType::INT32) return ctx.error("output 0 must be an INT32 scalar");
    return ctx.setOutputShape(0, {});
}

Status executeRank(OperationContext& ctx) {
    const int32_t rank = static_cast<int32_t>(ctx.inputRank(0));
    std::memcpy(ctx.output(0).buffer.data(), &rank, sizeof rank);
    return {};
}

}  // namespace

std::vector<OperationRegistration> gatherSplitTileOperations() {
    return {
        {OperationType::GATHER, supportsDataTypes, prepareGather, executeGather},
        {OperationType::SPLIT, supportsDataTypes, prepareSplit, executeSplit},
        {OperationType::TILE, supportsDataTypes, prepareTile, executeTile},
        {OperationType::FILL, supportsFill, prepareFill, executeFill},
        {OperationType::RANK, supportsRank, prepareRank, executeRank},
    };
}

}  // namespace npu::ref::ops

// PAD, PAD_V2, SLICE, STRIDED_SLICE, TRANSPOSE, SQUEEZE, EXPAND_DIMS: index arithmetic only.
#include "common.h"

namespace npu::ref::ops {
namespace {

using hal::OperationType;

bool supportsPad(const hal::Subgraph& sg, const hal::Operation& op) {
    return typeIn(operandType(sg, op, 0),
                  {OperandType::TENSOR_FLOAT32, OperandType::TENSOR_FLOAT16, OperandType::TENSOR_QUANT8_ASYMM,
                   OperandType::TENSOR_QUANT8_ASYMM_SIGNED});
}

Status expectSameData(OperationContext& ctx) {
    if (ctx.outputType(0) != ctx.inputType(0)) return ctx.error("output type differs from the input type");
    if (isQuant8Type(ctx.inputType(0)) &&
        (ctx.input(0).scale != ctx.output(0).scale || ctx.input(0).zeroPoint != ctx.output(0).zeroPoint)) {
        return ctx.error("output scale and zero point must equal the input's");
    }
    return {};
}

// A TENSOR_INT32 [n] input whose values preparation needs.
Result<std::vector<int32_t>> int32Vector(OperationContext& ctx, size_t i, size_t n) {
    NPU_TRY(ctx.expectType(i, OperandType::TENSOR_INT32));
    if (elementCount(ctx.inputDims(i)) != n) {
        return ctx.error("input " + std::to_string(i) + " must have " + std::to_string(n) +
                         " elements, has shape " + dimsToString(ctx.inputDims(i)));
    }
    if (!ctx.hasValue(i)) return ctx.deferred();
    const int32_t* p = ctx.inputData<int32_t>(i);
    return std::vector<int32_t>(p, p + n);
}

std::vector<size_t> stridesOf(const std::vector<uint32_t>& dims) {
    std::vector<size_t> s(dims.size(), 1);
    for (size_t k = dims.size(); k-- > 1;) s[k - 1] = s[k] * dims[k];
    return s;
}

// Calls f(outIndex, inIndex) where in = sum_k (begin[k] + out_k * step[k]) * inStride[k].
template <typename F>
void forEachGather(const std::vector<uint32_t>& outDims, const std::vector<int64_t>& begin,
                   const std::vector<int64_t>& step, const std::vector<size_t>& inStride, F&& f) {
    const size_t rank = outDims.size(), total = elementCount(outDims);
    std::vector<uint32_t> idx(rank, 0);
    for (size_t n = 0; n < total; ++n) {
        int64_t in = 0;
        for (size_t k = 0; k < rank; ++k) in += (begin[k] + int64_t(idx[k]) * step[k]) * int64_t(inStride[k]);
        f(n, size_t(in));
        for (size_t k = rank; k-- > 0;) {
            if (++idx[k] < outDims[k]) break;
            idx[k] = 0;
        }
    }
}

// ---- PAD / PAD_V2
Status preparePad(OperationContext& ctx) {
    const bool v2 = ctx.inputCount() == 3;
    NPU_TRY(ctx.expectInputCount(2, 3));
    NPU_TRY(ctx.expectOutputCount(1));
    NPU_TRY(ctx.expectRankAtMost(0, 4));
    NPU_TRY(expectSameData(ctx));
    const size_t rank = ctx.inputRank(0);
    const auto pads = NPU_TRY(int32Vector(ctx, 1, rank * 2));
    if (v2) {
        const OperandType t = ctx.inputType(0);
        NPU_TRY(ctx.expectType(2, t == OperandType::TENSOR_FLOAT32   ? OperandType::FLOAT32
                                  : t == OperandType::TENSOR_FLOAT16 ? OperandType::FLOAT16
                                                                     : OperandType::INT32));
        if (!ctx.hasValue(2)) return ctx.deferred();
    }
    std::vector<uint32_t> dims = ctx.inputDims(0);
    for (size_t k = 0; k < rank; ++k) {
        if (pads[2 * k] < 0 || pads[2 * k + 1] < 0) return ctx.error("paddings must not be negative");
        dims[k] += uint32_t(pads[2 * k] + pads[2 * k + 1]);
    }
    return ctx.setOutputShape(0, std::move(dims));
}

Status executePad(OperationContext& ctx) {
    const RuntimeOperand& in = ctx.input(0);
    RuntimeOperand& out = ctx.output(0);
    const size_t rank = in.dims.size(), elem = hal::elementSize(in.type);
    const int32_t* pads = ctx.inputData<int32_t>(1);
    // Fill with the pad value, then copy the input block.
    std::vector<uint8_t> value(elem, 0);
    if (ctx.inputCount() == 3) {
        std::memcpy(value.data(), ctx.input(2).data(), isQuant8Type(in.type) ? 0 : elem);
        if (isQuant8Type(in.type))
            value[0] = uint8_t(
                std::clamp(ctx.scalar<int32_t>(2), quantTypeRange(in.type).min, quantTypeRange(in.type).max));
    } else if (isQuant8Type(in.type)) {
        value[0] = uint8_t(in.zeroPoint);
    }
    const size_t total = elementCount(out.dims);
    for (size_t n = 0; n < total; ++n) std::memcpy(out.buffer.data() + n * elem, value.data(), elem);
    const auto outStride = stridesOf(out.dims);
    std::vector<int64_t> begin(rank, 0), step(rank, 1);
    size_t offset = 0;
    for (size_t k = 0; k < rank; ++k) offset += size_t(pads[2 * k]) * outStride[k];
    forEachGather(in.dims, begin, step, outStride, [&](size_t inIndex, size_t outIndex) {
        std::memcpy(out.buffer.data() + (outIndex + offset) * elem, in.data() + inIndex * elem, elem);
    });
    return {};
}

// ---- SLICE
Status prepareSlice(OperationContext& ctx) {
    NPU_TRY(ctx.expectInputCount(3, 3));
    NPU_TRY(ctx.expectOutputCount(1));
    NPU_TRY(ctx.expectRankAtMost(0, 4));
    NPU_TRY(expectSameData(ctx));
    const size_t rank = ctx.inputRank(0);
    const auto begin = NPU_TRY(int32Vector(ctx, 1, rank));
    const auto size = NPU_TRY(int32Vector(ctx, 2, rank));
    std::vector<uint32_t> dims(rank);
    for (size_t k = 0; k < rank; ++k) {
        const int64_t d = ctx.inputDims(0)[k];
        const int64_t s = size[k] == -1 ? d - begin[k] : size[k];
        if (begin[k] < 0 || s < 0 || begin[k] + s > d) {
            return ctx.error("slice begin " + std::to_string(begin[k]) + " size " + std::to_string(size[k]) +
                             " out of range for dimension " + std::to_string(k) + " of size " +
                             std::to_string(d));
        }
        dims[k] = uint32_t(s);
    }
    return ctx.setOutputShape(0, std::move(dims));
}

Status executeSlice(OperationContext& ctx) {
    const RuntimeOperand& in = ctx.input(0);
    RuntimeOperand& out = ctx.output(0);
    const size_t rank = in.dims.size(), elem = hal::elementSize(in.type);
    const int32_t* b = ctx.inputData<int32_t>(1);
    std::vector<int64_t> begin(b, b + rank), step(rank, 1);
    forEachGather(out.dims, begin, step, stridesOf(in.dims), [&](size_t o, size_t i) {
        std::memcpy(out.buffer.data() + o * elem, in.data() + i * elem, elem);
    });
    return {};
}

// ---- STRIDED_SLICE (TFLite semantics of begin/end masks, negative indices, shrink axes)
struct StridedPlan {
    std::vector<int64_t> begin, step;
    std::vector<uint32_t> fullDims, outDims;
};

Result<StridedPlan> stridedPlan(OperationContext& ctx) {
    const size_t rank = ctx.inputRank(0);
    const auto begin = NPU_TRY(int32Vector(ctx, 1, rank));
    const auto end = NPU_TRY(int32Vector(ctx, 2, rank));
    const auto strides = NPU_TRY(int32Vector(ctx, 3, rank));
    const int32_t beginMask = NPU_TRY(scalarInput<int32_t>(ctx, 4, OperandType::INT32));
    const int32_t endMask = NPU_TRY(scalarInput<int32_t>(ctx, 5, OperandType::INT32));
    const int32_t shrinkMask = NPU_TRY(scalarInput<int32_t>(ctx, 6, OperandType::INT32));
    StridedPlan plan;
    for (size_t k = 0; k < rank; ++k) {
        const int64_t d = ctx.inputDims(0)[k], s = strides[k];
        if (s == 0) return ctx.error("stride of dimension " + std::to_string(k) + " is 0");
        const bool shrink = (shrinkMask >> k) & 1;
        // NNAPI rejects a shrunk axis with a negative stride (CTS strided_slice_invalid_neg_stride).
        if (shrink && s < 0)
            return ctx.error("shrunk dimension " + std::to_string(k) + " has a negative stride");
        auto clampIndex = [&](int64_t v) {
            return s > 0 ? std::clamp<int64_t>(v, 0, d) : std::clamp<int64_t>(v, -1, d - 1);
        };
        int64_t b = begin[k], e = end[k];
        if (b < 0) b += d;
        b = ((beginMask >> k) & 1) ? (s > 0 ? 0 : d - 1) : clampIndex(b);
        if (e < 0) e += d;
        e = ((endMask >> k) & 1) ? (s > 0 ? d : -1) : clampIndex(e);
        const int64_t n = s > 0 ? std::max<int64_t>(0, (e - b + s - 1) / s)
                                : std::max<int64_t>(0, (b - e + (-s) - 1) / (-s));
        if (shrink && n != 1)
            return ctx.error("shrunk dimension " + std::to_string(k) + " must select one element");
        plan.begin.push_back(b);
        plan.step.push_back(shrink ? 1 : s);
        plan.fullDims.push_back(uint32_t(n));
        if (!shrink) plan.outDims.push_back(uint32_t(n));
    }
    // NNAPI gives a fully shrunk result the shape [1], not a rank-0 tensor.
    if (plan.outDims.empty()) plan.outDims.push_back(1);
    return plan;
}

Status prepareStridedSlice(OperationContext& ctx) {
    NPU_TRY(ctx.expectInputCount(7, 7));
    NPU_TRY(ctx.expectOutputCount(1));
    NPU_TRY(ctx.expectRankAtMost(0, 4));
    NPU_TRY(expectSameData(ctx));
    StridedPlan plan = NPU_TRY(stridedPlan(ctx));
    return ctx.setOutputShape(0, std::move(plan.outDims));
}

Status executeStridedSlice(OperationContext& ctx) {
    const StridedPlan plan = *stridedPlan(ctx);
    const RuntimeOperand& in = ctx.input(0);
    RuntimeOperand& out = ctx.output(0);
    const size_t elem = hal::elementSize(in.type);
    forEachGather(plan.fullDims, plan.begin, plan.step, stridesOf(in.dims), [&](size_t o, size_t i) {
        std::memcpy(out.buffer.data() + o * elem, in.data() + i * elem, elem);
    });
    return {};
}

// ---- TRANSPOSE
Result<std::vector<int32_t>> permutation(OperationContext& ctx) {
    const size_t rank = ctx.inputRank(0);
    std::vector<int32_t> perm(rank);
    if (ctx.inputCount() < 2 || ctx.isOmitted(1)) {
        for (size_t k = 0; k < rank; ++k) perm[k] = int32_t(rank - 1 - k);
    } else {
        perm = NPU_TRY(int32Vector(ctx, 1, rank));
    }
    std::vector<bool> seen(rank, false);
    for (int32_t p : perm) {
        if (p < 0 || size_t(p) >= rank || seen[p])
            return ctx.error("permutation is not a permutation of 0.." + std::to_string(rank - 1));
        seen[p] = true;
    }
    return perm;
}

Status prepareTranspose(OperationContext& ctx) {
    NPU_TRY(ctx.expectInputCount(1, 2));
    NPU_TRY(ctx.expectOutputCount(1));
    NPU_TRY(ctx.expectRankAtMost(0, 4));
    NPU_TRY(expectSameData(ctx));
    const auto perm = NPU_TRY(permutation(ctx));
    std::vector<uint32_t> dims;
    for (int32_t p : perm) dims.push_back(ctx.inputDims(0)[p]);
    return ctx.setOutputShape(0, std::move(dims));
}

Status executeTranspose(OperationContext& ctx) {
    const auto perm = *permutation(ctx);
    const RuntimeOperand& in = ctx.input(0);
    RuntimeOperand& out = ctx.output(0);
    const auto inStride = stridesOf(in.dims);
    std::vector<size_t> stride;
    for (int32_t p : perm) stride.push_back(inStride[p]);
    const size_t elem = hal::elementSize(in.type);
    forEachGather(
        out.dims, std::vector<int64_t>(perm.size(), 0), std::vector<int64_t>(perm.size(), 1), stride,
        [&](size_t o, size_t i) { std::memcpy(out.buffer.data() + o * elem, in.data() + i * elem, elem); });
    return {};
}

// ---- SQUEEZE / EXPAND_DIMS: a new shape over the same bytes.
Status prepareSqueeze(OperationContext& ctx) {
    NPU_TRY(ctx.expectInputCount(1, 2));
    NPU_TRY(ctx.expectOutputCount(1));
    NPU_TRY(ctx.expectRankAtMost(0, 4));
    NPU_TRY(expectSameData(ctx));
    const auto& in = ctx.inputDims(0);
    const int32_t rank = int32_t(in.size());
    std::vector<bool> drop(in.size(), false);
    if (ctx.inputCount() < 2 || ctx.isOmitted(1)) {
        for (size_t k = 0; k < in.size(); ++k) drop[k] = in[k] == 1;
    } else {
        NPU_TRY(ctx.expectType(1, OperandType::TENSOR_INT32));
        if (!ctx.hasValue(1)) return ctx.deferred();
        const size_t n = elementCount(ctx.inputDims(1));
        for (size_t j = 0; j < n; ++j) {
            int32_t a = ctx.inputData<int32_t>(1)[j];
            if (a < -rank || a >= rank)
                return ctx.error("squeeze axis " + std::to_string(a) + " out of range");
            if (a < 0) a += rank;
            if (in[a] != 1)
                return ctx.error("squeezed dimension " + std::to_string(a) + " has size " +
                                 std::to_string(in[a]));
            drop[a] = true;
        }
    }
    std::vector<uint32_t> dims;
    for (size_t k = 0; k < in.size(); ++k) {
        if (!drop[k]) dims.push_back(in[k]);
    }
    if (dims.empty()) dims.push_back(1);  // NNAPI: squeezing every dimension gives [1]
    return ctx.setOutputShape(0, std::move(dims));
}

Status prepareExpandDims(OperationContext& ctx) {
    NPU_TRY(ctx.expectInputCount(2, 2));
    NPU_TRY(ctx.expectOutputCount(1));
    NPU_TRY(expectSameData(ctx));
    const int32_t rank = int32_t(ctx.inputRank(0));
    int32_t axis = NPU_TRY(scalarInput<int32_t>(ctx, 1, OperandType::INT32));
    if (axis < -(rank + 1) || axis > rank) return ctx.error("axis " + std::to_string(axis) + " out of range");
    if (axis < 0) axis += rank + 1;
    std::vector<uint32_t> dims = ctx.inputDims(0);
    dims.insert(dims.begin() + axis, 1);
    return ctx.setOutputShape(0, std::move(dims));
}

}  // namespace

std::vector<OperationRegistration> slicingOperations() {
    return {
        {OperationType::PAD, supportsPad, preparePad, executePad},
        {OperationType::PAD_V2, supportsPad, preparePad, executePad},
        {OperationType::SLICE, supportsDataTypes, prepareSlice, executeSlice},
        {OperationType::STRIDED_SLICE, supportsDataTypes, prepareStridedSlice, executeStridedSlice},
        {OperationType::TRANSPOSE, supportsDataTypes, prepareTranspose, executeTranspose},
        {OperationType::SQUEEZE, supportsDataTypes, prepareSqueeze, executeCopy},
        {OperationType::EXPAND_DIMS, supportsDataTypes, prepareExpandDims, executeCopy},
    };
}

}  // namespace npu::ref::ops

// Reductions: MEAN, REDUCE_SUM / PROD / MIN / MAX / ANY / ALL over a set of axes; ARGMAX /
// ARGMIN and LOG_SOFTMAX along one axis.
//
// NNAPI rules (NeuralNetworks.h, AOSP common/operations/Reduce.cpp, ArgMinMax.cpp, LogSoftmax.cpp):
// axes are TENSOR_INT32 values in [-rank, rank), negative counting from the end, repeats allowed.
// Without keep_dims the reduced axes are removed, and reducing every axis gives shape [1].
// Float16 and relaxed models compute in float32/double and round once when stored.
#include <cmath>
#include <limits>

#include "common.h"

namespace npu::ref::ops {
namespace {

using hal::OperationType;

constexpr std::initializer_list<OperandType> kFloatTypes = {OperandType::TENSOR_FLOAT32,
                                                            OperandType::TENSOR_FLOAT16};
constexpr std::initializer_list<OperandType> kFloatQuantTypes = {
    OperandType::TENSOR_FLOAT32, OperandType::TENSOR_FLOAT16, OperandType::TENSOR_QUANT8_ASYMM,
    OperandType::TENSOR_QUANT8_ASYMM_SIGNED};

// Which axes of input 0 the axes operand (input `i`) selects.
Result<std::vector<bool>> reducedAxes(OperationContext& ctx, size_t i) {
    NPU_TRY(ctx.expectType(i, OperandType::TENSOR_INT32));
    NPU_TRY(ctx.expectRank(i, 1));
    if (!ctx.hasValue(i)) return ctx.deferred();
    const int32_t rank = static_cast<int32_t>(ctx.inputRank(0));
    std::vector<bool> mask(static_cast<size_t>(rank), false);
    const int32_t* axes = ctx.inputData<int32_t>(i);
    for (uint32_t k = 0; k < ctx.inputDims(i)[0]; ++k) {
        const int32_t axis = axes[k];
        if (axis < -rank || axis >= rank) {
            return ctx.error("input " + std::to_string(i) + " element " + std::to_string(k) + ": axis " +
                             std::to_string(axis) + " out of range for rank " + std::to_string(rank));
        }
        mask[static_cast<size_t>(axis < 0 ? axis + rank : axis)] = true;
    }
    return mask;
}

std::vector<uint32_t> reducedShape(const std::vector<uint32_t>& dims, const std::vector<bool>& mask,
                                   bool keepDims) {
    std::vector<uint32_t> out;
    for (size_t d = 0; d < dims.size(); ++d) {
        if (!mask[d]) {
            out.push_back(dims[d]);
        } else if (keepDims) {
            out.push_back(1);
        }
    }
    if (out.empty()) out.push_back(1);
    return out;
}

// For every input element, the index of the output element it reduces into.
std::vector<size_t> outputIndexOf(const std::vector<uint32_t>& dims, const std::vector<bool>& mask) {
    const size_t rank = dims.size(), total = elementCount(dims);
    std::vector<size_t> stride(rank, 0);  // output stride of each input axis (0 when reduced)
    size_t s = 1;
    for (size_t d = rank; d-- > 0;) {
        if (!mask[d]) {
            stride[d] = s;
            s *= dims[d];
        }
    }
    std::vector<size_t> map(total);
    std::vector<uint32_t> idx(rank, 0);
    size_t o = 0;
    for (size_t n = 0; n < total; ++n) {
        map[n] = o;
        for (size_t d = rank; d-- > 0;) {
            ++idx[d];
            o += stride[d];
            if (idx[d] < dims[d]) break;
            o -= stride[d] * idx[d];
            idx[d] = 0;
        }
    }
    return map;
}

struct ReduceParams {
    std::vector<bool> mask;
    bool keepDims = false;
};

// MEAN: (tensor, axes, keep_dims INT32); REDUCE_*: (tensor, axes, keep_dims BOOL).
Result<ReduceParams> reduceParams(OperationContext& ctx, bool keepDimsIsBool) {
    ReduceParams p;
    p.mask = NPU_TRY(reducedAxes(ctx, 1));
    if (keepDimsIsBool) {
        NPU_TRY(ctx.expectType(2, OperandType::BOOL));
        if (!ctx.hasValue(2)) return ctx.deferred();
        p.keepDims = ctx.scalar<uint8_t>(2) != 0;
    } else {
        p.keepDims = NPU_TRY(scalarInput<int32_t>(ctx, 2, OperandType::INT32)) > 0;
    }
    return p;
}

template <OperationType kType>
bool supportsReduce(const hal::Subgraph& sg, const hal::Operation& op) {
    const auto t = operandType(sg, op, 0);
    switch (kType) {
        case OperationType::REDUCE_SUM:
        case OperationType::REDUCE_PROD:
            return typeIn(t, kFloatTypes);
        case OperationType::REDUCE_ANY:
        case OperationType::REDUCE_ALL:
            return t == OperandType::TENSOR_BOOL8;
        default:
            return typeIn(t, kFloatQuantTypes);  // MEAN, REDUCE_MIN, REDUCE_MAX
    }
}

template <OperationType kType>
Status prepareReduce(OperationContext& ctx) {
    NPU_TRY(ctx.expectInputCount(3, 3));
    NPU_TRY(ctx.expectOutputCount(1));
    if (ctx.inputRank(0) < 1 || ctx.inputRank(0) > 4) return ctx.error("input 0 must have rank 1 to 4");
    if (ctx.outputType(0) != ctx.inputType(0)) return ctx.error("output type differs from the input type");
    const ReduceParams p = NPU_TRY(reduceParams(ctx, kType != OperationType::MEAN));
    return ctx.setOutputShape(0, reducedShape(ctx.inputDims(0), p.mask, p.keepDims));
}

template <OperationType kType>
Status executeReduce(OperationContext& ctx) {
    const ReduceParams p = *reduceParams(ctx, kType != OperationType::MEAN);
    const RuntimeOperand& in = ctx.input(0);
    RuntimeOperand& out = ctx.output(0);
    const std::vector<size_t> map = outputIndexOf(in.dims, p.mask);
    const size_t outCount = elementCount(out.dims);
    if constexpr (kType == OperationType::REDUCE_ANY || kType == OperationType::REDUCE_ALL) {
        constexpr bool kAny = kType == OperationType::REDUCE_ANY;
        uint8_t* o = out.buffer.data();
        std::fill(o, o + outCount, kAny ? 0 : 1);
        for (size_t n = 0; n < map.size(); ++n) {
            const bool v = in.data()[n] != 0;
            o[map[n]] = kAny ? (o[map[n]] || v) : (o[map[n]] && v);
        }
        return {};
    } else {
        std::vector<double> acc(outCount);
        std::vector<size_t> count(outCount, 0);
        for (size_t n = 0; n < map.size(); ++n) {
            const double v = loadReal(in, n);
            double& a = acc[map[n]];
            if (count[map[n]]++ == 0) {
                a = v;
            } else if constexpr (kType == OperationType::REDUCE_PROD) {
                a *= v;
            } else if constexpr (kType == OperationType::REDUCE_MIN) {
                a = std::min(a, v);
            } else if constexpr (kType == OperationType::REDUCE_MAX) {
                a = std::max(a, v);
            } else {
                a += v;  // SUM, MEAN
            }
        }
        for (size_t k = 0; k < outCount; ++k) {
            double v = acc[k];
            if (kType == OperationType::MEAN && count[k] > 0) v /= static_cast<double>(count[k]);
            storeReal(out, k, static_cast<float>(v));
        }
        return {};
    }
}

// ARGMAX / ARGMIN: (tensor, axis INT32) -> TENSOR_INT32 without that axis ([1] for a rank-1 input);
// the first index wins ties.
bool supportsArg(const hal::Subgraph& sg, const hal::Operation& op) {
    return typeIn(operandType(sg, op, 0),
                  {OperandType::TENSOR_FLOAT32, OperandType::TENSOR_FLOAT16, OperandType::TENSOR_INT32,
                   OperandType::TENSOR_QUANT8_ASYMM, OperandType::TENSOR_QUANT8_ASYMM_SIGNED});
}

Status prepareArg(OperationContext& ctx) {
    NPU_TRY(ctx.expectInputCount(2, 2));
    NPU_TRY(ctx.expectOutputCount(1));
    if (ctx.inputRank(0) < 1) return ctx.error("input 0 must have rank 1 or more");
    if (ctx.outputType(0) != OperandType::TENSOR_INT32) return ctx.error("output 0 must be TENSOR_INT32");
    const uint32_t axis = NPU_TRY(requiredAxis(ctx, 1));
    std::vector<uint32_t> dims = ctx.inputDims(0);
    dims.erase(dims.begin() + axis);
    if (dims.empty()) dims.push_back(1);  // a rank-1 input gives shape [1] (argmax_b155660285)
    return ctx.setOutputShape(0, std::move(dims));
}

template <bool kMax>
Status executeArg(OperationContext& ctx) {
    const uint32_t axis = *requiredAxis(ctx, 1);
    const RuntimeOperand& in = ctx.input(0);
    size_t outer = 1, inner = 1;
    const size_t len = in.dims[axis];
    for (uint32_t d = 0; d < axis; ++d) outer *= in.dims[d];
    for (size_t d = axis + 1; d < in.dims.size(); ++d) inner *= in.dims[d];
    // Quantized values compare as their integers (the scale is positive); int32 exactly as integers.
    auto value = [&](size_t n) -> double {
        if (isFloatType(in.type)) return loadFloat(in.type, in.data(), n);
        if (in.type == OperandType::TENSOR_INT32) return reinterpret_cast<const int32_t*>(in.data())[n];
        return loadQuant(in.type, in.data(), n);
    };
    int32_t* out = ctx.outputData<int32_t>(0);
    for (size_t o = 0; o < outer; ++o) {
        for (size_t i = 0; i < inner; ++i) {
            size_t best = 0;
            double bestValue = value(o * len * inner + i);
            for (size_t k = 1; k < len; ++k) {
                const double v = value((o * len + k) * inner + i);
                if (kMax ? v > bestValue : v < bestValue) {
                    best = k;
                    bestValue = v;
                }
            }
            out[o * inner + i] = static_cast<int32_t>(best);
        }
    }
    return {};
}

// LOG_SOFTMAX: (tensor, beta FLOAT32|FLOAT16 as the tensor, axis INT32):
// beta * (x - max) - log(sum(exp(beta * (x - max)))).
bool supportsLogSoftmax(const hal::Subgraph& sg, const hal::Operation& op) {
    return typeIn(operandType(sg, op, 0), kFloatTypes);
}

Result<float> logSoftmaxBeta(OperationContext& ctx) {
    const OperandType t =
        ctx.inputType(0) == OperandType::TENSOR_FLOAT16 ? OperandType::FLOAT16 : OperandType::FLOAT32;
    NPU_TRY(ctx.expectType(1, t));
    if (!ctx.hasValue(1)) return ctx.deferred();
    return loadFloat(t, ctx.input(1).data(), 0);
}

Status prepareLogSoftmax(OperationContext& ctx) {
    NPU_TRY(ctx.expectInputCount(3, 3));
    NPU_TRY(ctx.expectOutputCount(1));
    if (ctx.inputRank(0) < 1) return ctx.error("input 0 must have rank 1 or more");
    if (ctx.outputType(0) != ctx.inputType(0)) return ctx.error("output type differs from the input type");
    const float beta = NPU_TRY(logSoftmaxBeta(ctx));
    if (!(beta > 0)) return ctx.error("input 1: beta " + std::to_string(beta) + " must be positive");
    NPU_TRY(requiredAxis(ctx, 2));
    return ctx.setOutputShape(0, ctx.inputDims(0));
}

Status executeLogSoftmax(OperationContext& ctx) {
    const double beta = *logSoftmaxBeta(ctx);
    const uint32_t axis = *requiredAxis(ctx, 2);
    const RuntimeOperand& in = ctx.input(0);
    RuntimeOperand& out = ctx.output(0);
    size_t outer = 1, inner = 1;
    const size_t len = in.dims[axis];
    for (uint32_t d = 0; d < axis; ++d) outer *= in.dims[d];
    for (size_t d = axis + 1; d < in.dims.size(); ++d) inner *= in.dims[d];
    for (size_t o = 0; o < outer; ++o) {
        for (size_t i = 0; i < inner; ++i) {
            auto at = [&](size_t k) { return (o * len + k) * inner + i; };
            double maxv = -std::numeric_limits<double>::infinity(), sum = 0;
            for (size_t k = 0; k < len; ++k)
                maxv = std::max<double>(maxv, loadFloat(in.type, in.data(), at(k)));
            for (size_t k = 0; k < len; ++k)
                sum += std::exp((loadFloat(in.type, in.data(), at(k)) - maxv) * beta);
            const double logSum = std::log(sum);
            for (size_t k = 0; k < len; ++k) {
                storeFloat(out.type, out.buffer.data(), at(k),
                           static_cast<float>((loadFloat(in.type, in.data(), at(k)) - maxv) * beta - logSum));
            }
        }
    }
    return {};
}

}  // namespace

std::vector<OperationRegistration> reductionOperations() {
    return {
        {OperationType::MEAN, supportsReduce<OperationType::MEAN>, prepareReduce<OperationType::MEAN>,
         executeReduce<OperationType::MEAN>},
        {OperationType::REDUCE_SUM, supportsReduce<OperationType::REDUCE_SUM>,
         prepareReduce<OperationType::REDUCE_SUM>, executeReduce<OperationType::REDUCE_SUM>},
        {OperationType::REDUCE_PROD, supportsReduce<OperationType::REDUCE_PROD>,
         prepareReduce<OperationType::REDUCE_PROD>, executeReduce<OperationType::REDUCE_PROD>},
        {OperationType::REDUCE_MIN, supportsReduce<OperationType::REDUCE_MIN>,
         prepareReduce<OperationType::REDUCE_MIN>, executeReduce<OperationType::REDUCE_MIN>},
        {OperationType::REDUCE_MAX, supportsReduce<OperationType::REDUCE_MAX>,
         prepareReduce<OperationType::REDUCE_MAX>, executeReduce<OperationType::REDUCE_MAX>},
        {OperationType::REDUCE_ANY, supportsReduce<OperationType::REDUCE_ANY>,
         prepareReduce<OperationType::REDUCE_ANY>, executeReduce<OperationType::REDUCE_ANY>},
        {OperationType::REDUCE_ALL, supportsReduce<OperationType::REDUCE_ALL>,
         prepareReduce<OperationType::REDUCE_ALL>, executeReduce<OperationType::REDUCE_ALL>},
        {OperationType::ARGMAX, supportsArg, prepareArg, executeArg<true>},
        {OperationType::ARGMIN, supportsArg, prepareArg, executeArg<false>},
        {OperationType::LOG_SOFTMAX, supportsLogSoftmax, prepareLogSoftmax, executeLogSoftmax},
    };
}

}  // namespace npu::ref::ops

// SOFTMAX over one axis (default the last): exp(beta * (x - max)) / sum. Float types in double;
// quant8 with the integer algorithm of the NNAPI CPU reference and TFLite (softmaxQuant8Impl /
// reference_ops::Softmax): the input difference to the row maximum rescaled to Q5.26 by a
// quantized multiplier, gemmlowp's exp_on_negative_values, the sum in Q12.19, its reciprocal by
// one_over_one_plus_x_for_x_in_0_1, output scale 1/256. gemmlowp's own fixed-point header is
// used, so the arithmetic is the canonical one bit for bit.
#include <gemmlowp/fixedpoint/fixedpoint.h>

#include <cmath>

#include "../quant_utils.h"
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

// The integer algorithm's parameters (TFLite's PreprocessSoftmaxScaling and CalculateInputRadius
// with kScaledDiffIntegerBits = 5).
constexpr int kScaledDiffIntegerBits = 5;
constexpr int kAccumulationIntegerBits = 12;
struct SoftmaxQuantParams {
    int32_t multiplier = 0;
    int leftShift = 0;
    int32_t diffMin = 0;
};

Result<SoftmaxQuantParams> softmaxQuantParams(OperationContext& ctx, float beta) {
    const double real = std::min(static_cast<double>(beta) * ctx.input(0).scale *
                                     static_cast<double>(int64_t{1} << (31 - kScaledDiffIntegerBits)),
                                 static_cast<double>((int64_t{1} << 31) - 1));
    if (!(real > 1.0))  // QuantizeMultiplierGreaterThanOne
        return ctx.error("beta * input scale * 2^26 = " + std::to_string(real) +
                         " must be greater than 1 for the quantized algorithm");
    const QuantizedMultiplier q = quantizeMultiplier(real);
    SoftmaxQuantParams p;
    p.multiplier = q.multiplier;
    p.leftShift = q.shift;
    const double radius = double((1 << kScaledDiffIntegerBits) - 1) *
                          double(int64_t{1} << (31 - kScaledDiffIntegerBits)) / std::ldexp(1.0, p.leftShift);
    p.diffMin = -static_cast<int32_t>(std::floor(radius));
    return p;
}

Status checkSoftmaxOutputQuant(OperationContext& ctx) {
    const bool isSigned = ctx.inputType(0) == OperandType::TENSOR_QUANT8_ASYMM_SIGNED;
    const RuntimeOperand& out = ctx.output(0);
    if (out.scale != 1.0f / 256 || out.zeroPoint != (isSigned ? -128 : 0))
        return ctx.error("quantized output must have scale 1/256 and zero point " +
                         std::string(isSigned ? "-128" : "0"));
    return {};
}

// One row of `len` elements `stride` apart (the softmax axis), in and out.
template <typename T>
void softmaxQuantRow(const T* in, T* out, size_t len, size_t stride, const SoftmaxQuantParams& p) {
    using FixedPointScaledDiff = gemmlowp::FixedPoint<int32_t, kScaledDiffIntegerBits>;
    using FixedPointAccum = gemmlowp::FixedPoint<int32_t, kAccumulationIntegerBits>;
    using FixedPoint0 = gemmlowp::FixedPoint<int32_t, 0>;
    T maxValue = std::numeric_limits<T>::min();
    for (size_t k = 0; k < len; ++k) maxValue = std::max(maxValue, in[k * stride]);
    // MultiplyByQuantizedMultiplierGreaterThanOne; the shift wraps (kept differences never do).
    auto scaledDiff = [&](int32_t diff) {
        const int32_t shifted = static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint64_t>(
            static_cast<int64_t>(diff) * static_cast<int64_t>(uint64_t{1} << p.leftShift))));
        return FixedPointScaledDiff::FromRaw(saturatingRoundingDoublingHighMul(shifted, p.multiplier));
    };
    FixedPointAccum sumOfExps = FixedPointAccum::Zero();
    for (size_t k = 0; k < len; ++k) {
        const int32_t diff = static_cast<int32_t>(in[k * stride]) - maxValue;
        if (diff >= p.diffMin)
            sumOfExps = sumOfExps + gemmlowp::Rescale<kAccumulationIntegerBits>(
                                        gemmlowp::exp_on_negative_values(scaledDiff(diff)));
    }
    const uint32_t fixedSum = static_cast<uint32_t>(sumOfExps.raw());
    const int headroomPlusOne = __builtin_clz(fixedSum);  // the maximum alone adds 2^19: never 0
    const int numBitsOverUnit = kAccumulationIntegerBits - headroomPlusOne;
    const int32_t shiftedSumMinusOne =
        static_cast<int32_t>((fixedSum << headroomPlusOne) - (static_cast<uint32_t>(1) << 31));
    const FixedPoint0 shiftedScale =
        gemmlowp::one_over_one_plus_x_for_x_in_0_1(FixedPoint0::FromRaw(shiftedSumMinusOne));
    for (size_t k = 0; k < len; ++k) {
        const int32_t diff = static_cast<int32_t>(in[k * stride]) - maxValue;
        T value = std::numeric_limits<T>::min();
        if (diff >= p.diffMin) {
            const FixedPoint0 expIn0 = gemmlowp::exp_on_negative_values(scaledDiff(diff));
            int32_t unsat =
                gemmlowp::RoundingDivideByPOT((shiftedScale * expIn0).raw(), numBitsOverUnit + 31 - 8);
            if (std::is_same_v<T, int8_t>) unsat -= 128;
            value = static_cast<T>(
                std::clamp<int32_t>(unsat, std::numeric_limits<T>::min(), std::numeric_limits<T>::max()));
        }
        out[k * stride] = value;
    }
}

template <typename T>
void softmaxQuant(const RuntimeOperand& in, RuntimeOperand& out, size_t outer, size_t len, size_t inner,
                  const SoftmaxQuantParams& p) {
    const T* src = reinterpret_cast<const T*>(in.data());
    T* dst = reinterpret_cast<T*>(out.buffer.data());
    for (size_t o = 0; o < outer; ++o)
        for (size_t i = 0; i < inner; ++i)
            softmaxQuantRow(src + o * len * inner + i, dst + o * len * inner + i, len, inner, p);
}

Status prepareSoftmax(OperationContext& ctx) {
    NPU_TRY(ctx.expectInputCount(2, 3));
    NPU_TRY(ctx.expectOutputCount(1));
    if (ctx.inputRank(0) < 1 || ctx.inputRank(0) > 4) return ctx.error("input 0 must have rank 1 to 4");
    if (ctx.outputType(0) != ctx.inputType(0)) return ctx.error("output type differs from the input type");
    const float beta = NPU_TRY(softmaxBeta(ctx));
    if (!(beta > 0)) return ctx.error("beta must be positive");
    NPU_TRY(softmaxAxis(ctx));
    if (!isFloatType(ctx.inputType(0))) {
        NPU_TRY(checkSoftmaxOutputQuant(ctx));
        NPU_TRY(softmaxQuantParams(ctx, beta));
    }
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
    if (!isFloatType(in.type)) {
        const SoftmaxQuantParams p = *softmaxQuantParams(ctx, beta);  // validated at preparation
        if (in.type == OperandType::TENSOR_QUANT8_ASYMM_SIGNED)
            softmaxQuant<int8_t>(in, out, outer, len, inner, p);
        else
            softmaxQuant<uint8_t>(in, out, outer, len, inner, p);
        return {};
    }
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

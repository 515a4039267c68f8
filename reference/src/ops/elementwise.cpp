// ADD, SUB, MUL, DIV, MAXIMUM, MINIMUM with numpy broadcasting.
// Quantized ADD/SUB follow TFLite's left_shift = 20 path; MUL requantizes the product.
#include <cmath>

#include "common.h"

namespace npu::ref::ops {
namespace {

using hal::OperationType;

bool supportsArith(const hal::Subgraph& sg, const hal::Operation& op) {
    const auto t = operandType(sg, op, 0);
    const bool baseTypes =
        typeIn(t, {OperandType::TENSOR_FLOAT32, OperandType::TENSOR_FLOAT16, OperandType::TENSOR_QUANT8_ASYMM,
                   OperandType::TENSOR_QUANT8_ASYMM_SIGNED});
    // DIV has no quantized variant; TENSOR_INT32 (floor division) since HAL 1.3.
    if (op.type == OperationType::DIV) {
        return typeIn(t,
                      {OperandType::TENSOR_FLOAT32, OperandType::TENSOR_FLOAT16, OperandType::TENSOR_INT32});
    }
    return baseTypes || t == OperandType::TENSOR_INT32;
}

Status prepareArith(OperationContext& ctx) {
    NPU_TRY(ctx.expectInputCount(3, 3));
    NPU_TRY(expectAllPresent(ctx));
    NPU_TRY(ctx.expectOutputCount(1));
    NPU_TRY(ctx.expectSameType(1, 0));
    const int32_t act = NPU_TRY(activationOf(ctx, 2));
    if (ctx.inputType(0) == OperandType::TENSOR_INT32 && act != 0) {
        return ctx.error("TENSOR_INT32 requires fused activation NONE, got " + std::to_string(act));
    }
    if (ctx.outputType(0) != ctx.inputType(0)) return ctx.error("output type differs from the input type");
    NPU_TRY(ctx.expectRankAtMost(0, 4));
    NPU_TRY(ctx.expectRankAtMost(1, 4));
    if (isQuant8Type(ctx.inputType(0)) &&
        (ctx.input(0).scale <= 0 || ctx.input(1).scale <= 0 || ctx.output(0).scale <= 0)) {
        return ctx.error("quantized operands need a positive scale");
    }
    auto shape = NPU_TRY(broadcastShapes(ctx, ctx.inputDims(0), ctx.inputDims(1)));
    return ctx.setOutputShape(0, std::move(shape));
}

template <typename F>
void floatLoop(OperationContext& ctx, int32_t act, F op) {
    const RuntimeOperand &a = ctx.input(0), &b = ctx.input(1);
    RuntimeOperand& out = ctx.output(0);
    forEachBroadcast(out.dims, a.dims, b.dims, [&](size_t o, size_t ia, size_t ib) {
        const float x = loadFloat(a.type, a.data(), ia), y = loadFloat(b.type, b.data(), ib);
        storeFloat(out.type, out.buffer.data(), o, applyActivation(op(x, y), act));
    });
}

template <typename F>
void int32Loop(OperationContext& ctx, F op) {
    const RuntimeOperand &a = ctx.input(0), &b = ctx.input(1);
    RuntimeOperand& out = ctx.output(0);
    const int32_t* x = ctx.inputData<int32_t>(0);
    const int32_t* y = ctx.inputData<int32_t>(1);
    int32_t* z = ctx.outputData<int32_t>(0);
    forEachBroadcast(out.dims, a.dims, b.dims,
                     [&](size_t o, size_t ia, size_t ib) { z[o] = op(x[ia], y[ib]); });
}

// Integer DIV rounds toward negative infinity; a zero divisor gives 0 (as the NNAPI reference
// defines it) and INT32_MIN / -1 wraps instead of overflowing.
int32_t floorDivide(int32_t x, int32_t y) {
    if (y == 0) return 0;
    int64_t q = int64_t(x) / y;
    if (int64_t(x) % y != 0 && ((x < 0) != (y < 0))) --q;
    return int32_t(uint32_t(uint64_t(q)));
}

// TFLite quantized add/sub: both inputs rescaled to a common 2*max(scale) grid at 2^20.
Status executeQuantAddSub(OperationContext& ctx, int32_t act, bool subtract) {
    const RuntimeOperand &a = ctx.input(0), &b = ctx.input(1);
    RuntimeOperand& out = ctx.output(0);
    constexpr int kLeftShift = 20;
    const double twiceMax = 2.0 * std::max(a.scale, b.scale);
    const QuantizedMultiplier m1 = quantizeMultiplier(a.scale / twiceMax);
    QuantizedMultiplier m2 = quantizeMultiplier(b.scale / twiceMax);
    const QuantizedMultiplier mo =
        quantizeMultiplier(twiceMax / ((1 << kLeftShift) * static_cast<double>(out.scale)));
    if (subtract) m2.multiplier = -m2.multiplier;
    const QuantRange range = activationRange(act, out.type, out.scale, out.zeroPoint);
    forEachBroadcast(out.dims, a.dims, b.dims, [&](size_t o, size_t ia, size_t ib) {
        const int32_t x = (loadQuant(a.type, a.data(), ia) - a.zeroPoint) * (1 << kLeftShift);
        const int32_t y = (loadQuant(b.type, b.data(), ib) - b.zeroPoint) * (1 << kLeftShift);
        const int32_t sum = multiplyByQuantizedMultiplier(x, m1) + multiplyByQuantizedMultiplier(y, m2);
        const int32_t q = multiplyByQuantizedMultiplier(sum, mo) + out.zeroPoint;
        storeQuant(out.type, out.buffer.data(), o, std::clamp(q, range.min, range.max));
    });
    return {};
}

Status executeQuantMul(OperationContext& ctx, int32_t act) {
    const RuntimeOperand &a = ctx.input(0), &b = ctx.input(1);
    RuntimeOperand& out = ctx.output(0);
    const QuantizedMultiplier m = quantizeMultiplier(static_cast<double>(a.scale) * b.scale / out.scale);
    const QuantRange range = activationRange(act, out.type, out.scale, out.zeroPoint);
    forEachBroadcast(out.dims, a.dims, b.dims, [&](size_t o, size_t ia, size_t ib) {
        const int32_t x = loadQuant(a.type, a.data(), ia) - a.zeroPoint;
        const int32_t y = loadQuant(b.type, b.data(), ib) - b.zeroPoint;
        const int32_t q = multiplyByQuantizedMultiplier(x * y, m) + out.zeroPoint;
        storeQuant(out.type, out.buffer.data(), o, std::clamp(q, range.min, range.max));
    });
    return {};
}

template <OperationType kType>
Status executeArith(OperationContext& ctx) {
    const int32_t act = ctx.scalar<int32_t>(2);
    const OperandType t = ctx.inputType(0);
    if (isFloatType(t)) {
        switch (kType) {
            case OperationType::ADD:
                floatLoop(ctx, act, [](float x, float y) { return x + y; });
                break;
            case OperationType::SUB:
                floatLoop(ctx, act, [](float x, float y) { return x - y; });
                break;
            case OperationType::MUL:
                floatLoop(ctx, act, [](float x, float y) { return x * y; });
                break;
            default:
                floatLoop(ctx, act, [](float x, float y) { return x / y; });
                break;
        }
        return {};
    }
    if (t == OperandType::TENSOR_INT32) {
        switch (kType) {
            case OperationType::ADD:
                int32Loop(ctx, [](int32_t x, int32_t y) { return int32_t(uint32_t(x) + uint32_t(y)); });
                break;
            case OperationType::SUB:
                int32Loop(ctx, [](int32_t x, int32_t y) { return int32_t(uint32_t(x) - uint32_t(y)); });
                break;
            case OperationType::MUL:
                int32Loop(ctx, [](int32_t x, int32_t y) { return int32_t(uint32_t(x) * uint32_t(y)); });
                break;
            default:
                int32Loop(ctx, floorDivide);
                break;
        }
        return {};
    }
    if (kType == OperationType::MUL) return executeQuantMul(ctx, act);
    return executeQuantAddSub(ctx, act, kType == OperationType::SUB);
}

// MAXIMUM / MINIMUM: no activation; quantized inputs may have different scales.
bool supportsMinMax(const hal::Subgraph& sg, const hal::Operation& op) {
    return supportsDataTypes(sg, op);
}

Status prepareMinMax(OperationContext& ctx) {
    NPU_TRY(ctx.expectInputCount(2, 2));
    NPU_TRY(expectAllPresent(ctx));
    NPU_TRY(ctx.expectOutputCount(1));
    NPU_TRY(ctx.expectSameType(1, 0));
    if (ctx.outputType(0) != ctx.inputType(0)) return ctx.error("output type differs from the input type");
    auto shape = NPU_TRY(broadcastShapes(ctx, ctx.inputDims(0), ctx.inputDims(1)));
    return ctx.setOutputShape(0, std::move(shape));
}

template <bool kMax>
Status executeMinMax(OperationContext& ctx) {
    const RuntimeOperand &a = ctx.input(0), &b = ctx.input(1);
    RuntimeOperand& out = ctx.output(0);
    forEachBroadcast(out.dims, a.dims, b.dims, [&](size_t o, size_t ia, size_t ib) {
        if (a.type == OperandType::TENSOR_INT32) {
            const int32_t x = loadQuant(a.type, a.data(), ia), y = loadQuant(b.type, b.data(), ib);
            storeQuant(out.type, out.buffer.data(), o, kMax ? std::max(x, y) : std::min(x, y));
            return;
        }
        const float x = loadReal(a, ia), y = loadReal(b, ib);
        storeReal(out, o, kMax ? std::max(x, y) : std::min(x, y));
    });
    return {};
}

}  // namespace

std::vector<OperationRegistration> elementwiseOperations() {
    return {
        {OperationType::ADD, supportsArith, prepareArith, executeArith<OperationType::ADD>},
        {OperationType::SUB, supportsArith, prepareArith, executeArith<OperationType::SUB>},
        {OperationType::MUL, supportsArith, prepareArith, executeArith<OperationType::MUL>},
        {OperationType::DIV, supportsArith, prepareArith, executeArith<OperationType::DIV>},
        {OperationType::MAXIMUM, supportsMinMax, prepareMinMax, executeMinMax<true>},
        {OperationType::MINIMUM, supportsMinMax, prepareMinMax, executeMinMax<false>},
    };
}

}  // namespace npu::ref::ops

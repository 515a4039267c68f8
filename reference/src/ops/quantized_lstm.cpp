// QUANTIZED_16BIT_LSTM (HAL 1.2) and QUANTIZED_LSTM (HAL 1.3), with the integer arithmetic of the
// NNAPI reference (QuantizedLSTM.cpp over gemmlowp's 16-bit fixed point; QLSTM.cpp over TFLite's
// integer LSTM kernels), so that results match it bit for bit.
#include <cmath>
#include <limits>
#include <optional>

#include "common.h"

namespace npu::ref::ops {
namespace {

// ---- 16-bit fixed point (gemmlowp semantics) --------------------------------------------------
// A value with I integer bits is raw * 2^(I - 15). The integer bits of each value are tracked in
// the comments; only Rescale and the constants depend on them.

int16_t wrap16(int32_t v) {
    return static_cast<int16_t>(static_cast<uint16_t>(v));
}
int16_t saturate16(int32_t v) {
    return static_cast<int16_t>(std::clamp<int32_t>(v, -32768, 32767));
}

// F<I1> * F<I2> -> F<I1 + I2>.
int16_t mul16(int16_t a, int16_t b) {
    if (a == b && a == std::numeric_limits<int16_t>::min()) return std::numeric_limits<int16_t>::max();
    const int32_t ab = int32_t{a} * int32_t{b};
    const int32_t nudge = ab >= 0 ? (1 << 14) : (1 - (1 << 14));
    return static_cast<int16_t>((ab + nudge) / (1 << 15));
}

int16_t roundingDivideByPOT16(int16_t x, int exponent) {
    const int32_t mask = (1 << exponent) - 1;
    const int32_t remainder = x & mask;
    const int32_t threshold = (mask >> 1) + (x < 0 ? 1 : 0);
    return static_cast<int16_t>((x >> exponent) + (remainder > threshold ? 1 : 0));
}

// x * 2^exponent, saturating for exponent > 0 and rounding for exponent < 0.
int16_t mulByPOT16(int16_t x, int exponent) {
    if (exponent < 0) return roundingDivideByPOT16(x, -exponent);
    if (exponent == 0) return x;
    const int32_t threshold = (1 << (15 - exponent)) - 1;
    if (x > threshold) return std::numeric_limits<int16_t>::max();
    if (x < -threshold) return std::numeric_limits<int16_t>::min();
    return wrap16(int32_t{x} * (1 << exponent));
}

// F<from> -> F<to>.
int16_t rescale16(int16_t x, int from, int to) {
    return mulByPOT16(x, from - to);
}

// gemmlowp writes its constants as 32-bit raw values and rounds them to 16 bits.
constexpr int16_t constant16(int32_t raw32) {
    const int32_t mask = (1 << 16) - 1;
    const int32_t remainder = raw32 & mask;
    const int32_t threshold = (mask >> 1) + (raw32 < 0 ? 1 : 0);
    return static_cast<int16_t>((raw32 >> 16) + (remainder > threshold ? 1 : 0));
}

int16_t roundingHalfSum16(int16_t a, int16_t b) {
    const int32_t sum = int32_t{a} + int32_t{b};
    const int32_t sign = sum >= 0 ? 1 : -1;
    return static_cast<int16_t>((sum + sign) / 2);
}

constexpr int16_t kOneF0 = std::numeric_limits<int16_t>::max();  // F0 cannot hold 1 exactly

// exp(a) for a in [-1/4, 0), F0 -> F0.
int16_t expOnQuarterInterval(int16_t a) {
    const int16_t constantTerm = constant16(1895147668);  // exp(-1/8)
    const int16_t oneThird = constant16(715827883);
    const int16_t x = wrap16(a + (1 << 12));  // a + 1/8
    const int16_t x2 = mul16(x, x), x3 = mul16(x2, x), x4 = mul16(x2, x2);
    const int16_t x4Over4 = mulByPOT16(x4, -2);
    const int16_t poly = mulByPOT16(wrap16(mul16(wrap16(x4Over4 + x3), oneThird) + x2), -1);
    return saturate16(int32_t{constantTerm} + mul16(constantTerm, wrap16(x + poly)));
}

// exp(a) for a <= 0 with `integerBits` integer bits -> F0.
int16_t expOnNegative(int16_t a, int integerBits) {
    const int fractionalBits = 15 - integerBits;
    const int16_t oneQuarter = static_cast<int16_t>(1 << (fractionalBits - 2));
    const int16_t mask = static_cast<int16_t>(oneQuarter - 1);
    const int16_t modMinusQuarter = wrap16((a & mask) - oneQuarter);
    int16_t result = expOnQuarterInterval(rescale16(modMinusQuarter, integerBits, 0));
    const int16_t remainder = wrap16(modMinusQuarter - a);
    // exp(-2^k) for k = -2..4, as gemmlowp's barrel shifter.
    constexpr int32_t kMultipliers[] = {1672461947, 1302514674, 790015084, 290630308, 39332535, 720401, 242};
    for (int k = -2; k <= 4; ++k) {
        if (integerBits > k && (remainder & (1 << (fractionalBits + k))) != 0) {
            result = mul16(result, constant16(kMultipliers[k + 2]));
        }
    }
    // Below -32 the result is 0 (only reachable with more than 5 integer bits).
    if (integerBits > 5 && a < constant16(-(1 << (36 - integerBits)))) result = 0;
    return a == 0 ? kOneF0 : result;
}

// 1 / (1 + a) for a in [0, 1], F0 -> F0 (Newton-Raphson in F2).
int16_t newtonReciprocal(int16_t halfDenominator) {
    const int16_t c48Over17 = constant16(1515870810), cNeg32Over17 = constant16(-1010580540);
    const int16_t oneF2 = 1 << 13;
    int16_t x = wrap16(c48Over17 + mul16(halfDenominator, cNeg32Over17));  // F2
    for (int i = 0; i < 3; ++i) {
        const int16_t oneMinus = wrap16(oneF2 - mul16(halfDenominator, x));  // F2
        x = wrap16(x + rescale16(mul16(x, oneMinus), 4, 2));
    }
    return x;  // 1 / (1 + a), F2... times 2 (halfDenominator is (1 + a) / 2)
}

int16_t logistic16(int16_t a, int integerBits) {
    if (a == 0) return 1 << 14;
    const int16_t absA = a > 0 ? a : wrap16(-a);
    const int16_t e = expOnNegative(wrap16(-absA), integerBits);
    const int16_t x = newtonReciprocal(roundingHalfSum16(e, kOneF0));
    const int16_t positive = rescale16(x, 1, 0);  // x / 2 read as F1, then to F0
    return a > 0 ? positive : wrap16(kOneF0 - positive);
}

int16_t tanh16(int16_t a, int integerBits) {
    if (a == 0) return 0;
    const int16_t negAbs = a < 0 ? a : wrap16(-a);
    const int16_t e = expOnNegative(negAbs, integerBits + 1);  // exp(-2|a|): same raw, one more integer bit
    const int16_t x = newtonReciprocal(roundingHalfSum16(e, kOneF0));
    const int16_t t = rescale16(wrap16(x - (1 << 13)), 2, 0);  // (1 - e) / (1 + e)
    return a < 0 ? wrap16(-t) : t;
}

// ---- QUANTIZED_16BIT_LSTM ---------------------------------------------------------------------
// Inputs: 0 input [batches, inputSize] (quant8 asymm, 1/128, 128); 1-4 input-to-{input, forget,
// cell, output} weights [outputSize, inputSize]; 5-8 recurrent-to-{...} weights [outputSize,
// outputSize] (quant8 asymm, one scale and zero point); 9-12 {input, forget, cell, output} gate
// bias [outputSize] (int32, scale weights/128, zero point 0); 13 prevCellState [batches,
// outputSize] (quant16 symm, 1/2048, 0); 14 prevOutput [batches, outputSize] (quant8 asymm, 1/128,
// 128). Outputs: 0 cellStateOut (like 13), 1 output (like 14).

constexpr size_t kQ16Input = 0, kQ16FirstWeights = 1, kQ16FirstBias = 9, kQ16PrevCell = 13,
                 kQ16PrevOutput = 14;

bool supportsQuantized16BitLstm(const hal::Subgraph& sg, const hal::Operation& op) {
    if (op.inputs.size() != 15 || op.outputs.size() != 2) return false;
    for (size_t i = 0; i < kQ16FirstBias; ++i) {
        if (operandType(sg, op, i) != OperandType::TENSOR_QUANT8_ASYMM) return false;
    }
    for (size_t i = kQ16FirstBias; i < kQ16PrevCell; ++i) {
        if (operandType(sg, op, i) != OperandType::TENSOR_INT32) return false;
    }
    return operandType(sg, op, kQ16PrevCell) == OperandType::TENSOR_QUANT16_SYMM &&
           operandType(sg, op, kQ16PrevOutput) == OperandType::TENSOR_QUANT8_ASYMM;
}

Status expectQuant(OperationContext& ctx, size_t i, float scale, int32_t zeroPoint) {
    const RuntimeOperand& op = ctx.input(i);
    if (op.scale != scale || op.zeroPoint != zeroPoint) {
        return ctx.error("input " + std::to_string(i) + " has scale " + std::to_string(op.scale) +
                         " and zero point " + std::to_string(op.zeroPoint) + ", expected " +
                         std::to_string(scale) + " and " + std::to_string(zeroPoint));
    }
    return {};
}

Status expectDims(OperationContext& ctx, size_t i, const std::vector<uint32_t>& dims) {
    if (ctx.inputDims(i) != dims) {
        return ctx.error("input " + std::to_string(i) + " has shape " + dimsToString(ctx.inputDims(i)) +
                         ", expected " + dimsToString(dims));
    }
    return {};
}

Status prepareQuantized16BitLstm(OperationContext& ctx) {
    NPU_TRY(ctx.expectInputCount(15, 15));
    NPU_TRY(ctx.expectOutputCount(2));
    for (size_t i = 0; i < 15; ++i) NPU_TRY(ctx.expectValue(i));
    NPU_TRY(ctx.expectRank(kQ16Input, 2));
    NPU_TRY(ctx.expectRank(kQ16PrevOutput, 2));
    NPU_TRY(expectQuant(ctx, kQ16Input, 1.0f / 128, 128));
    NPU_TRY(expectQuant(ctx, kQ16PrevOutput, 1.0f / 128, 128));
    const uint32_t batches = ctx.inputDims(kQ16Input)[0], inputSize = ctx.inputDims(kQ16Input)[1];
    const uint32_t outputSize = ctx.inputDims(kQ16PrevOutput)[1];
    NPU_TRY(expectDims(ctx, kQ16PrevOutput, {batches, outputSize}));
    const float weightsScale = ctx.input(kQ16FirstWeights).scale;
    const int32_t weightsZeroPoint = ctx.input(kQ16FirstWeights).zeroPoint;
    if (weightsScale <= 0) return ctx.error("input 1 (weights) must have a positive scale");
    for (size_t i = kQ16FirstWeights; i < kQ16FirstBias; ++i) {
        NPU_TRY(expectDims(ctx, i, {outputSize, i < kQ16FirstWeights + 4 ? inputSize : outputSize}));
        NPU_TRY(expectQuant(ctx, i, weightsScale, weightsZeroPoint));
    }
    for (size_t i = kQ16FirstBias; i < kQ16PrevCell; ++i) {
        NPU_TRY(expectDims(ctx, i, {outputSize}));
        NPU_TRY(expectQuant(ctx, i, weightsScale / 128, 0));
    }
    NPU_TRY(expectDims(ctx, kQ16PrevCell, {batches, outputSize}));
    // The cell state has 4 integer bits: scale 2^(4 - 15).
    NPU_TRY(expectQuant(ctx, kQ16PrevCell, 1.0f / 2048, 0));
    NPU_TRY(ctx.setOutputShape(0, {batches, outputSize}));
    return ctx.setOutputShape(1, {batches, outputSize});
}

Status executeQuantized16BitLstm(OperationContext& ctx) {
    const uint32_t batches = ctx.inputDims(kQ16Input)[0], inputSize = ctx.inputDims(kQ16Input)[1];
    const uint32_t outputSize = ctx.inputDims(kQ16PrevOutput)[1];
    const uint32_t depth = inputSize + outputSize;
    // The reference concatenates [input, prevOutput] per batch and the weights of each gate as
    // [recurrent | input] columns (gates in the order input, cell, forget, output), then runs one
    // fully connected layer over them. The column orders differ when inputSize != outputSize; the
    // CTS expectations follow the reference, so this does the same.
    constexpr size_t kGateOrder[4] = {0, 2, 1, 3};  // input, cell, forget, output -> operand offset
    std::vector<uint8_t> weights(size_t{4} * outputSize * depth);
    std::vector<int32_t> bias(size_t{4} * outputSize);
    for (size_t g = 0; g < 4; ++g) {
        const uint8_t* inputWeights = ctx.inputData<uint8_t>(kQ16FirstWeights + kGateOrder[g]);
        const uint8_t* recurrentWeights = ctx.inputData<uint8_t>(kQ16FirstWeights + 4 + kGateOrder[g]);
        const int32_t* gateBias = ctx.inputData<int32_t>(kQ16FirstBias + kGateOrder[g]);
        for (uint32_t r = 0; r < outputSize; ++r) {
            uint8_t* row = weights.data() + (g * outputSize + r) * depth;
            for (uint32_t c = 0; c < outputSize; ++c) row[c] = recurrentWeights[r * outputSize + c];
            for (uint32_t c = 0; c < inputSize; ++c) row[outputSize + c] = inputWeights[r * inputSize + c];
            bias[g * outputSize + r] = gateBias[r];
        }
    }
    const int32_t weightsZeroPoint = ctx.input(kQ16FirstWeights).zeroPoint;
    // Accumulator scale (input 1/128 * weights) to the gates' F3 scale 2^-12.
    const QuantizedMultiplier accumulatorScale =
        quantizeMultiplier(4096.0 * static_cast<double>(ctx.input(kQ16FirstBias).scale));
    const uint8_t* input = ctx.inputData<uint8_t>(kQ16Input);
    const uint8_t* prevOutput = ctx.inputData<uint8_t>(kQ16PrevOutput);
    const int16_t* prevCell = ctx.inputData<int16_t>(kQ16PrevCell);
    int16_t* cellOut = ctx.outputData<int16_t>(0);
    uint8_t* output = ctx.outputData<uint8_t>(1);

    std::vector<uint8_t> concat(depth);
    std::vector<int16_t> gates(size_t{4} * outputSize);
    for (uint32_t b = 0; b < batches; ++b) {
        std::copy_n(input + size_t{b} * inputSize, inputSize, concat.begin());
        std::copy_n(prevOutput + size_t{b} * outputSize, outputSize, concat.begin() + inputSize);
        for (size_t o = 0; o < gates.size(); ++o) {
            int32_t acc = bias[o];
            for (uint32_t d = 0; d < depth; ++d) {
                acc += (int32_t{concat[d]} - 128) * (int32_t{weights[o * depth + d]} - weightsZeroPoint);
            }
            gates[o] = saturate16(multiplyByQuantizedMultiplier(acc, accumulatorScale));
        }
        for (uint32_t c = 0; c < outputSize; ++c) {
            const int16_t inputGate = logistic16(gates[c], 3);
            const int16_t modulation = tanh16(gates[outputSize + c], 3);
            const int16_t forgetGate = logistic16(gates[2 * outputSize + c], 3);
            const int16_t outputGate = logistic16(gates[3 * outputSize + c], 3);
            const size_t at = size_t{b} * outputSize + c;
            const int16_t inputTimesModulation = mul16(inputGate, modulation);  // F0
            const int16_t keep = mul16(forgetGate, prevCell[at]);               // F0 * F4 = F4
            const int16_t state = saturate16(int32_t{rescale16(inputTimesModulation, 0, 4)} + keep);
            const int16_t activation = mul16(outputGate, tanh16(rescale16(state, 4, 3), 3));  // F0
            cellOut[at] = state;
            output[at] = static_cast<uint8_t>(
                128 + std::clamp<int16_t>(roundingDivideByPOT16(activation, 8), -128, 127));
        }
    }
    return {};
}

// ---- QUANTIZED_LSTM ---------------------------------------------------------------------------
// One time step of an LSTM in integers (TFLite's 8x8_16 kernel, as the NNAPI reference runs it):
// int8 activations and weights, int16 gates with 3 integer bits (after layer normalization when
// given), int16 cell state with a power-of-two scale, optional CIFG, peephole, projection and
// clipping. Operands: 0 input [batches, inputSize]; 1-4 input-to-{input, forget, cell, output}
// weights [numUnits, inputSize]; 5-8 recurrent-to-{...} weights [numUnits, outputSize]; 9-11
// cell-to-{input, forget, output} weights [numUnits]; 12-15 gate biases [numUnits]; 16 projection
// weights [outputSize, numUnits]; 17 projection bias [outputSize]; 18 output state in [batches,
// outputSize]; 19 cell state in [batches, numUnits]; 20-23 layer norm weights [numUnits]; 24 cell
// clip; 25 projection clip; 26-29 intermediate scales of the gates; 30 hidden state zero point;
// 31 hidden state scale. Outputs: output state out, cell state out, output.

constexpr size_t kQInput = 0, kQInputWeights = 1 /* + gate */, kQRecurrentWeights = 5 /* + gate */,
                 kQCellToInput = 9, kQCellToForget = 10, kQCellToOutput = 11, kQBias = 12 /* + gate */,
                 kQProjectionWeights = 16, kQProjectionBias = 17, kQPrevOutput = 18, kQPrevCell = 19,
                 kQLayerNorm = 20 /* + gate */, kQCellClip = 24, kQProjectionClip = 25,
                 kQIntermediateScale = 26 /* + gate */, kQHiddenZeroPoint = 30, kQHiddenScale = 31;
constexpr size_t kGateInput = 0, kGateForget = 1, kGateCell = 2, kGateOutput = 3;

bool supportsQuantizedLstm(const hal::Subgraph& sg, const hal::Operation& op) {
    if (op.inputs.size() != 32 || op.outputs.size() != 3) return false;
    auto is = [&](size_t i, OperandType t) { return operandType(sg, op, i) == t; };
    bool ok = is(kQInput, OperandType::TENSOR_QUANT8_ASYMM_SIGNED) &&
              is(kQProjectionWeights, OperandType::TENSOR_QUANT8_SYMM) &&
              is(kQProjectionBias, OperandType::TENSOR_INT32) &&
              is(kQPrevOutput, OperandType::TENSOR_QUANT8_ASYMM_SIGNED) &&
              is(kQPrevCell, OperandType::TENSOR_QUANT16_SYMM) && is(kQHiddenZeroPoint, OperandType::INT32) &&
              is(kQHiddenScale, OperandType::FLOAT32);
    for (size_t i = kQInputWeights; i < kQCellToInput; ++i) ok = ok && is(i, OperandType::TENSOR_QUANT8_SYMM);
    for (size_t i = kQCellToInput; i < kQBias; ++i) ok = ok && is(i, OperandType::TENSOR_QUANT16_SYMM);
    for (size_t i = kQBias; i < kQProjectionWeights; ++i) ok = ok && is(i, OperandType::TENSOR_INT32);
    for (size_t i = kQLayerNorm; i < kQCellClip; ++i) ok = ok && is(i, OperandType::TENSOR_QUANT16_SYMM);
    for (size_t i = kQCellClip; i < kQHiddenZeroPoint; ++i) ok = ok && is(i, OperandType::FLOAT32);
    return ok;
}

// log2 of a power-of-two scale (within 1e-3 as the reference's CheckedLog2), or nullopt.
std::optional<int> exactLog2(float x) {
    if (!(x > 0)) return std::nullopt;
    const float l = std::log(x) * (1.0f / std::log(2.0f));
    const float rounded = std::round(l);
    if (std::abs(l - rounded) >= 1e-3f) return std::nullopt;
    return static_cast<int>(rounded);
}

Status expectVector(OperationContext& ctx, size_t i, uint32_t n) {
    return expectDims(ctx, i, {n});
}

// QUANTIZED_LSTM's peephole and layer-norm weights: each group all present or all omitted (the
// input gate's omitted with CIFG), [numUnits] each.
Status checkQLstmPeepholeAndLayerNorm(OperationContext& ctx, uint32_t numUnits, bool cifg) {
    const bool peephole = !ctx.isOmitted(kQCellToOutput);
    for (size_t i = kQCellToInput; i <= kQCellToOutput; ++i) {
        const bool wanted = peephole && !(i == kQCellToInput && cifg);
        if (ctx.isOmitted(i) == wanted) {
            return ctx.error(
                std::string("the peephole weights (inputs 9-11) must be all present or all omitted") +
                " (input 9 omitted with CIFG); input " + std::to_string(i) + " is not");
        }
        if (wanted) NPU_TRY(expectVector(ctx, i, numUnits));
    }
    const bool layerNorm = !ctx.isOmitted(kQLayerNorm + kGateOutput);
    for (size_t g = 0; g < 4; ++g) {
        const bool wanted = layerNorm && !(g == kGateInput && cifg);
        if (ctx.isOmitted(kQLayerNorm + g) == wanted) {
            return ctx.error(
                "the layer norm weights (inputs 20-23) must be all present or all omitted (input 20 "
                "omitted with CIFG); input " +
                std::to_string(kQLayerNorm + g) + " is not");
        }
        if (wanted) NPU_TRY(expectVector(ctx, kQLayerNorm + g, numUnits));
    }
    return {};
}

// The projection weights [outputSize, numUnits] and bias, or, without them, outputSize == numUnits.
Status checkQLstmProjection(OperationContext& ctx, uint32_t numUnits, uint32_t outputSize) {
    const bool projection = !ctx.isOmitted(kQProjectionWeights);
    if (projection) {
        NPU_TRY(expectDims(ctx, kQProjectionWeights, {outputSize, numUnits}));
    } else if (outputSize != numUnits) {
        return ctx.error("without projection weights the output size " + std::to_string(outputSize) +
                         " must equal the number of units " + std::to_string(numUnits));
    }
    if (!ctx.isOmitted(kQProjectionBias)) {
        if (!projection) return ctx.error("input 17 (projection bias) is given without projection weights");
        NPU_TRY(expectVector(ctx, kQProjectionBias, outputSize));
    }
    return {};
}

Status prepareQuantizedLstm(OperationContext& ctx) {
    NPU_TRY(ctx.expectInputCount(32, 32));
    NPU_TRY(ctx.expectOutputCount(3));
    for (size_t i : {kQInput,
                     kQInputWeights + kGateForget,
                     kQInputWeights + kGateCell,
                     kQInputWeights + kGateOutput,
                     kQRecurrentWeights + kGateForget,
                     kQRecurrentWeights + kGateCell,
                     kQRecurrentWeights + kGateOutput,
                     kQBias + kGateForget,
                     kQBias + kGateCell,
                     kQBias + kGateOutput,
                     kQPrevOutput,
                     kQPrevCell,
                     kQCellClip,
                     kQProjectionClip,
                     kQIntermediateScale + 0,
                     kQIntermediateScale + 1,
                     kQIntermediateScale + 2,
                     kQIntermediateScale + 3,
                     kQHiddenZeroPoint,
                     kQHiddenScale}) {
        NPU_TRY(ctx.expectValue(i));
    }
    NPU_TRY(ctx.expectRank(kQInput, 2));
    NPU_TRY(ctx.expectRank(kQInputWeights + kGateOutput, 2));
    NPU_TRY(ctx.expectRank(kQRecurrentWeights + kGateOutput, 2));
    const uint32_t batches = ctx.inputDims(kQInput)[0], inputSize = ctx.inputDims(kQInput)[1];
    const uint32_t numUnits = ctx.inputDims(kQInputWeights + kGateOutput)[0];
    const uint32_t outputSize = ctx.inputDims(kQRecurrentWeights + kGateOutput)[1];
    const bool cifg = ctx.isOmitted(kQInputWeights + kGateInput);
    if (cifg != ctx.isOmitted(kQRecurrentWeights + kGateInput) ||
        cifg != ctx.isOmitted(kQBias + kGateInput)) {
        return ctx.error("inputs 1, 5 and 12 (the input gate) must be all present or all omitted (CIFG)");
    }
    for (size_t g = cifg ? 1 : 0; g < 4; ++g) {
        NPU_TRY(expectDims(ctx, kQInputWeights + g, {numUnits, inputSize}));
        NPU_TRY(expectDims(ctx, kQRecurrentWeights + g, {numUnits, outputSize}));
        NPU_TRY(expectVector(ctx, kQBias + g, numUnits));
    }
    NPU_TRY(checkQLstmPeepholeAndLayerNorm(ctx, numUnits, cifg));
    NPU_TRY(checkQLstmProjection(ctx, numUnits, outputSize));
    NPU_TRY(expectDims(ctx, kQPrevOutput, {batches, outputSize}));
    NPU_TRY(expectDims(ctx, kQPrevCell, {batches, numUnits}));
    // The cell state is int16 with a power-of-two scale; tanh of it is defined for 0 to 6
    // integer bits (scale 2^-15 to 2^-9).
    const auto cellShift = exactLog2(ctx.input(kQPrevCell).scale);
    if (!cellShift || *cellShift < -15 || *cellShift > -9) {
        return ctx.error("input 19 (cell state) has scale " + std::to_string(ctx.input(kQPrevCell).scale) +
                         ", expected a power of two from 2^-15 to 2^-9");
    }
    NPU_TRY(ctx.setOutputShape(0, {batches, outputSize}));
    NPU_TRY(ctx.setOutputShape(1, {batches, numUnits}));
    return ctx.setOutputShape(2, {batches, outputSize});
}

// out[b][r] = saturate(out[b][r] + rescale(bias[r] + sum_c in[b][c] * w[r][c]) + zeroPoint).
template <typename T>
void matrixBatchVectorAccumulate(const int8_t* in, const std::vector<int32_t>& bias, const int8_t* w,
                                 QuantizedMultiplier scale, uint32_t batches, uint32_t cols, uint32_t rows,
                                 int32_t zeroPoint, T* out) {
    for (uint32_t b = 0; b < batches; ++b) {
        for (uint32_t r = 0; r < rows; ++r) {
            int32_t acc = bias[r];
            for (uint32_t c = 0; c < cols; ++c) acc += int32_t{in[b * cols + c]} * int32_t{w[r * cols + c]};
            acc = multiplyByQuantizedMultiplier(acc, scale) + zeroPoint + out[b * rows + r];
            out[b * rows + r] = static_cast<T>(
                std::clamp<int32_t>(acc, std::numeric_limits<T>::min(), std::numeric_limits<T>::max()));
        }
    }
}

// bias - zeroPoint * (sum of each weight row): folds the input zero point into the bias.
std::vector<int32_t> effectiveBias(const int8_t* w, uint32_t rows, uint32_t cols, int32_t zeroPoint,
                                   const int32_t* bias) {
    std::vector<int32_t> out(rows);
    for (uint32_t r = 0; r < rows; ++r) {
        int32_t sum = 0;
        for (uint32_t c = 0; c < cols; ++c) sum += w[r * cols + c];
        out[r] = (bias != nullptr ? bias[r] : 0) - zeroPoint * sum;
    }
    return out;
}

// 1 / sqrt(input) as a multiplier and a left shift (TFLite's GetInvSqrtQuantizedMultiplierExp with
// reverse_shift -1): Newton-Raphson in 32-bit fixed point with 3 integer bits.
QuantizedMultiplier inverseSqrt(int32_t input) {
    if (input <= 1) return {std::numeric_limits<int32_t>::max(), 0};
    int shift = 11;
    while (input >= (1 << 29)) {
        input /= 4;
        ++shift;
    }
    const int maxLeftShiftBits = __builtin_clz(static_cast<uint32_t>(input)) - 1;
    const int leftShiftPairs = maxLeftShiftBits / 2 - 1;
    shift -= leftShiftPairs;
    input <<= 2 * leftShiftPairs;
    const int32_t fixedInput = input >> 1;                                      // F3
    const int32_t halfInput = saturatingRoundingMultiplyByPot(fixedInput, -1);  // F3
    const int32_t halfThree = (1 << 28) + (1 << 27);                            // 1.5 in F3
    int32_t x = 1 << 28;                                                        // 1 in F3
    for (int i = 0; i < 5; ++i) {
        const int32_t x3 = saturatingRoundingMultiplyByPot(
            saturatingRoundingDoublingHighMul(saturatingRoundingDoublingHighMul(x, x), x), 6);
        const int32_t diff =
            static_cast<int32_t>(static_cast<int64_t>(saturatingRoundingDoublingHighMul(halfThree, x)) -
                                 saturatingRoundingDoublingHighMul(halfInput, x3));
        x = saturatingRoundingMultiplyByPot(diff, 3);  // F6 -> F3
    }
    x = saturatingRoundingDoublingHighMul(x, 1518500250);  // * sqrt(2) / 2
    if (shift < 0) {
        x = static_cast<int32_t>(static_cast<uint32_t>(x) << -shift);
        shift = 0;
    }
    return {x, -shift};
}

void layerNorm(int16_t* gate, const int16_t* weights, const int32_t* bias, QuantizedMultiplier scale,
               int32_t varianceLimit, uint32_t batches, uint32_t n) {
    constexpr int64_t kOverflowGuard = 1 << 20;
    for (uint32_t b = 0; b < batches; ++b) {
        int16_t* row = gate + size_t{b} * n;
        int64_t sum = 0, sumSq = 0;
        for (uint32_t j = 0; j < n; ++j) {
            sum += row[j];
            sumSq += int64_t{row[j]} * row[j];
        }
        const int32_t mean = static_cast<int32_t>(sum * 1024 / n);
        const int64_t variance = sumSq * (kOverflowGuard / n) - int64_t{mean} * mean;
        int32_t variance2 = static_cast<int32_t>(variance / kOverflowGuard);
        if (variance2 < 1) variance2 = varianceLimit;
        const QuantizedMultiplier inverseStddev = inverseSqrt(variance2);
        const QuantizedMultiplier outScale{scale.multiplier, scale.shift + 12};
        for (uint32_t j = 0; j < n; ++j) {
            const int32_t rescaled = multiplyByQuantizedMultiplier(1024 * row[j] - mean, inverseStddev);
            const int64_t weighted = int64_t{rescaled} * weights[j] + bias[j];
            const int32_t rounded =
                static_cast<int32_t>((weighted > 0 ? weighted + 512 : weighted - 512) / 1024);
            row[j] = saturate16(multiplyByQuantizedMultiplier(rounded, outScale));
        }
    }
}

// result += rescale(weights * state), per unit, saturating.
void peepholeAccumulate(const int16_t* weights, const int16_t* state, uint32_t batches, uint32_t n,
                        QuantizedMultiplier scale, int16_t* result) {
    for (uint32_t b = 0; b < batches; ++b) {
        for (uint32_t v = 0; v < n; ++v) {
            const size_t at = size_t{b} * n + v;
            const int32_t product = multiplyByQuantizedMultiplier(int32_t{weights[v]} * state[at], scale);
            result[at] = saturate16(product + result[at]);
        }
    }
}

// QUANTIZED_LSTM's sizes and options, read from the operands.
struct QLstm {
    uint32_t batches = 0, inputSize = 0, numUnits = 0, outputSize = 0;
    size_t cells = 0;
    bool cifg = false, peephole = false, layerNorm = false, projection = false;
    int cellShift = 0;  // the cell state's scale is 2^cellShift

    explicit QLstm(OperationContext& ctx)
        : batches(ctx.inputDims(kQInput)[0]),
          inputSize(ctx.inputDims(kQInput)[1]),
          numUnits(ctx.inputDims(kQInputWeights + kGateOutput)[0]),
          outputSize(ctx.inputDims(kQRecurrentWeights + kGateOutput)[1]),
          cells(size_t{batches} * numUnits),
          cifg(ctx.isOmitted(kQInputWeights + kGateInput)),
          peephole(!ctx.isOmitted(kQCellToOutput)),
          layerNorm(!ctx.isOmitted(kQLayerNorm + kGateOutput)),
          projection(!ctx.isOmitted(kQProjectionWeights)),
          cellShift(*exactLog2(ctx.input(kQPrevCell).scale)) {}
};

// The scales may be model inputs, known only now; they divide, so they must be positive.
Status checkRuntimeScales(OperationContext& ctx, bool cifg) {
    for (size_t i = cifg ? kQIntermediateScale + 1 : kQIntermediateScale; i <= kQHiddenScale; ++i) {
        if (i == kQHiddenZeroPoint) continue;
        const float v = ctx.scalar<float>(i);
        if (!(v > 0) || !std::isfinite(v)) {
            return ctx.error("input " + std::to_string(i) + " (a scale) is " + std::to_string(v) +
                             ", expected a positive finite value");
        }
    }
    return {};
}

// One gate before its activation: input and recurrent products at the gate's intermediate
// scale, the peephole term, then layer normalization (which adds the bias) to 3 integer bits.
// Without layer normalization the bias joins the products (the intermediate scale is then the
// activation's 2^-12).
std::vector<int16_t> gatePreActivation(OperationContext& ctx, const QLstm& q, size_t g,
                                       const int16_t* peepholeState) {
    const RuntimeOperand& input = ctx.input(kQInput);
    const RuntimeOperand& prevOutput = ctx.input(kQPrevOutput);
    std::vector<int16_t> gate(q.cells, 0);
    const float intermediate = ctx.scalar<float>(kQIntermediateScale + g);
    const int32_t* bias = ctx.inputData<int32_t>(kQBias + g);
    const int8_t* wIn = ctx.inputData<int8_t>(kQInputWeights + g);
    const int8_t* wRec = ctx.inputData<int8_t>(kQRecurrentWeights + g);
    const float inScale = ctx.input(kQInputWeights + g).scale * input.scale / intermediate;
    const float recScale = ctx.input(kQRecurrentWeights + g).scale * prevOutput.scale / intermediate;
    matrixBatchVectorAccumulate(
        ctx.inputData<int8_t>(kQInput),
        effectiveBias(wIn, q.numUnits, q.inputSize, input.zeroPoint, q.layerNorm ? nullptr : bias), wIn,
        quantizeMultiplier(inScale), q.batches, q.inputSize, q.numUnits, 0, gate.data());
    matrixBatchVectorAccumulate(ctx.inputData<int8_t>(kQPrevOutput),
                                effectiveBias(wRec, q.numUnits, q.outputSize, prevOutput.zeroPoint, nullptr),
                                wRec, quantizeMultiplier(recScale), q.batches, q.outputSize, q.numUnits, 0,
                                gate.data());
    const size_t peepholeInput = g == kGateInput    ? kQCellToInput
                                 : g == kGateForget ? kQCellToForget
                                                    : kQCellToOutput;
    if (q.peephole && g != kGateCell) {
        const float scale =
            static_cast<float>(std::pow(2.0, q.cellShift) * ctx.input(peepholeInput).scale / intermediate);
        peepholeAccumulate(ctx.inputData<int16_t>(peepholeInput), peepholeState, q.batches, q.numUnits,
                           quantizeMultiplier(scale), gate.data());
    }
    if (q.layerNorm) {
        const RuntimeOperand& weights = ctx.input(kQLayerNorm + g);
        const int32_t varianceLimit = std::min(1, static_cast<int32_t>(10000 * weights.scale));
        layerNorm(gate.data(), ctx.inputData<int16_t>(kQLayerNorm + g), bias,
                  quantizeMultiplier(weights.scale), varianceLimit, q.batches, q.numUnits);
    }
    return gate;
}

// cell = clip(forget * prevCell + inputGate * cellGate), into output 1.
void updateCell(OperationContext& ctx, const QLstm& q, const std::vector<int16_t>& forget,
                const std::vector<int16_t>& inputGate, const std::vector<int16_t>& cellGate, int16_t* cell) {
    const int16_t* prevCell = ctx.inputData<int16_t>(kQPrevCell);
    const float cellClip = ctx.scalar<float>(kQCellClip);
    int16_t quantizedCellClip = 0;
    if (cellClip > 0) {
        quantizedCellClip = static_cast<int16_t>(static_cast<int32_t>(
            std::min(std::max(cellClip / ctx.input(kQPrevCell).scale, -32768.0f), 32767.0f)));
    }
    for (size_t i = 0; i < q.cells; ++i) {
        const int32_t kept = roundingDivideByPOT(int32_t{forget[i]} * prevCell[i], 15);
        const int32_t added = roundingDivideByPOT(int32_t{inputGate[i]} * cellGate[i], 30 + q.cellShift);
        int16_t c = saturate16(int32_t{static_cast<int16_t>(kept)} + static_cast<int16_t>(added));
        if (quantizedCellClip > 0)
            c = std::clamp<int16_t>(c, static_cast<int16_t>(-quantizedCellClip), quantizedCellClip);
        cell[i] = c;
    }
}

// hidden = outputGate * tanh(cell), both with 15 fractional bits, to the hidden state's scale.
std::vector<int8_t> hiddenState(OperationContext& ctx, const QLstm& q, const std::vector<int16_t>& outputGate,
                                const int16_t* cell) {
    const int32_t hiddenZeroPoint = ctx.scalar<int32_t>(kQHiddenZeroPoint);
    const float hiddenScale = ctx.scalar<float>(kQHiddenScale);
    const QuantizedMultiplier hiddenMultiplier =
        quantizeMultiplier(static_cast<float>(std::pow(2.0, -15) / hiddenScale * std::pow(2.0, -15)));
    std::vector<int8_t> hidden(q.cells);
    for (size_t i = 0; i < q.cells; ++i) {
        const int16_t t = tanh16(cell[i], 15 + q.cellShift);
        const int32_t v =
            multiplyByQuantizedMultiplier(int32_t{outputGate[i]} * t, hiddenMultiplier) + hiddenZeroPoint;
        hidden[i] = static_cast<int8_t>(std::clamp(v, -128, 127));
    }
    return hidden;
}

// The output state (output 2): the projection of the hidden state, clipped, or the hidden state.
void outputState(OperationContext& ctx, const QLstm& q, const std::vector<int8_t>& hidden, int8_t* out) {
    if (!q.projection) {
        std::copy(hidden.begin(), hidden.end(), out);
        return;
    }
    const RuntimeOperand& prevOutput = ctx.input(kQPrevOutput);
    const RuntimeOperand& weights = ctx.input(kQProjectionWeights);
    const int8_t* w = ctx.inputData<int8_t>(kQProjectionWeights);
    const int32_t* bias =
        ctx.isOmitted(kQProjectionBias) ? nullptr : ctx.inputData<int32_t>(kQProjectionBias);
    const float hiddenScale = ctx.scalar<float>(kQHiddenScale);
    const int32_t hiddenZeroPoint = ctx.scalar<int32_t>(kQHiddenZeroPoint);
    std::fill_n(out, size_t{q.batches} * q.outputSize, int8_t{0});
    matrixBatchVectorAccumulate(hidden.data(),
                                effectiveBias(w, q.outputSize, q.numUnits, hiddenZeroPoint, bias), w,
                                quantizeMultiplier(weights.scale * hiddenScale / prevOutput.scale), q.batches,
                                q.numUnits, q.outputSize, prevOutput.zeroPoint, out);
    const float projectionClip = ctx.scalar<float>(kQProjectionClip);
    if (projectionClip > 0) {
        // The clip is in the output's units (the NNAPI definition; TFLite quantizes it with the
        // output scale).
        const int8_t clip = static_cast<int8_t>(
            static_cast<int32_t>(std::min(std::max(projectionClip / prevOutput.scale, -128.0f), 127.0f)));
        for (size_t i = 0; i < size_t{q.batches} * q.outputSize; ++i) {
            out[i] = std::clamp<int8_t>(out[i], static_cast<int8_t>(-clip), clip);
        }
    }
}

Status executeQuantizedLstm(OperationContext& ctx) {
    const QLstm q(ctx);
    NPU_TRY(checkRuntimeScales(ctx, q.cifg));
    const int16_t* prevCell = ctx.inputData<int16_t>(kQPrevCell);

    std::vector<int16_t> forget = gatePreActivation(ctx, q, kGateForget, prevCell);
    for (auto& v : forget) v = logistic16(v, 3);
    std::vector<int16_t> cellGate = gatePreActivation(ctx, q, kGateCell, nullptr);
    for (auto& v : cellGate) v = tanh16(v, 3);
    std::vector<int16_t> inputGate(q.cells);
    if (q.cifg) {
        for (size_t i = 0; i < q.cells; ++i) inputGate[i] = wrap16(kOneF0 - forget[i]);
    } else {
        inputGate = gatePreActivation(ctx, q, kGateInput, prevCell);
        for (auto& v : inputGate) v = logistic16(v, 3);
    }

    int16_t* cell = ctx.outputData<int16_t>(1);
    updateCell(ctx, q, forget, inputGate, cellGate, cell);
    std::vector<int16_t> outputGate =
        gatePreActivation(ctx, q, kGateOutput, cell);  // peephole on the new state
    for (auto& v : outputGate) v = logistic16(v, 3);

    int8_t* out = ctx.outputData<int8_t>(2);
    outputState(ctx, q, hiddenState(ctx, q, outputGate, cell), out);
    std::copy_n(out, size_t{q.batches} * q.outputSize, ctx.outputData<int8_t>(0));
    return {};
}

}  // namespace

std::vector<OperationRegistration> quantizedLstmOperations() {
    return {
        {hal::OperationType::QUANTIZED_16BIT_LSTM, supportsQuantized16BitLstm, prepareQuantized16BitLstm,
         executeQuantized16BitLstm},
        {hal::OperationType::QUANTIZED_LSTM, supportsQuantizedLstm, prepareQuantizedLstm,
         executeQuantizedLstm},
    };
}

}  // namespace npu::ref::ops

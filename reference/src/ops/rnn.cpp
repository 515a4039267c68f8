// RNN, UNIDIRECTIONAL_SEQUENCE_RNN, BIDIRECTIONAL_SEQUENCE_RNN and SVDF for float32 and float16
// (float16 computes in float32 and rounds once when it stores).
#include <cmath>

#include "common.h"
#include "recurrent_activation.h"

namespace npu::ref::ops {
namespace {

using hal::OperationType;

bool supportsFloat(const hal::Subgraph& sg, const hal::Operation& op) {
    const auto t = operandType(sg, op, 0);
    if (!typeIn(t, {OperandType::TENSOR_FLOAT32, OperandType::TENSOR_FLOAT16})) return false;
    for (uint32_t out : op.outputs) {
        if (out >= sg.operands.size() || sg.operands[out].type != t) return false;
    }
    return true;
}

std::vector<float> loadAll(const OperationContext& ctx, size_t i) {
    if (ctx.isOmitted(i)) return {};
    const RuntimeOperand& op = ctx.input(i);
    std::vector<float> v(elementCount(op.dims));
    for (size_t k = 0; k < v.size(); ++k) v[k] = loadFloat(op.type, op.data(), k);
    return v;
}

void storeAll(RuntimeOperand& out, const float* v, size_t n) {
    for (size_t k = 0; k < n; ++k) storeFloat(out.type, out.buffer.data(), k, v[k]);
}

Result<int32_t> rnnActivation(OperationContext& ctx, size_t i) {
    const int32_t a = NPU_TRY(scalarInput<int32_t>(ctx, i, OperandType::INT32));
    if (a < 0 || a > 6 || a == 5) {
        return ctx.error("input " + std::to_string(i) + ": activation " + std::to_string(a) +
                         " is not NONE, RELU, RELU1, RELU6, TANH or SIGMOID");
    }
    return a;
}

// A layout flag given as BOOL or INT32 (UNIDIRECTIONAL_SEQUENCE_RNN's time_major is INT32).
Result<bool> flagInput(OperationContext& ctx, size_t i) {
    if (ctx.inputType(i) == OperandType::INT32)
        return NPU_TRY(scalarInput<int32_t>(ctx, i, OperandType::INT32)) != 0;
    return boolInput(ctx, i);
}
bool flagValue(const OperationContext& ctx, size_t i) {
    return ctx.inputType(i) == OperandType::INT32 ? ctx.scalar<int32_t>(i) != 0 : ctx.scalar<uint8_t>(i) != 0;
}

Status expectTensor(OperationContext& ctx, size_t i, const char* what, std::vector<uint32_t> dims) {
    const std::string n = "input " + std::to_string(i) + " (" + what + ")";
    if (ctx.isOmitted(i)) return ctx.error(n + " is required");
    if (ctx.inputType(i) != ctx.inputType(0)) {
        return ctx.error(n + " has type " + std::string(hal::toString(ctx.inputType(i))) + ", expected " +
                         std::string(hal::toString(ctx.inputType(0))));
    }
    if (ctx.inputDims(i) != dims) {
        return ctx.error(n + " has shape " + dimsToString(ctx.inputDims(i)) + ", expected " +
                         dimsToString(dims));
    }
    return {};
}

Status expectOutputsOfInputType(OperationContext& ctx) {
    for (size_t o = 0; o < ctx.outputCount(); ++o) {
        if (ctx.outputType(o) != ctx.inputType(0)) {
            return ctx.error("output " + std::to_string(o) + " type differs from the input type");
        }
    }
    return {};
}

// An optional model input is only known to be present or omitted when a request arrives.
Status deferIfPresenceUnknown(OperationContext& ctx, std::initializer_list<size_t> optional) {
    if (ctx.mode() != OperationContext::Mode::kPrepare) return {};
    for (size_t i : optional) {
        if (i < ctx.inputCount() && ctx.input(i).lifetime == hal::OperandLifeTime::SUBGRAPH_INPUT)
            return ctx.deferred();
    }
    return {};
}

// One RNN cell: weights [units, inputSize], recurrent [units, units], bias [units], optional aux
// weights [units, auxSize].
struct RnnCell {
    uint32_t units = 0, inputSize = 0, auxSize = 0;
    std::vector<float> weights, recurrent, bias, auxWeights;
    int32_t activation = 0;
};

// out = act(bias + W x + Waux aux + R h), summed in that order into the output as the NNAPI
// reference does; the new hidden state is the output.
void rnnStep(const RnnCell& c, uint32_t nBatch, const float* x, const float* aux, const float* hIn,
             float* hOut) {
    for (uint32_t b = 0; b < nBatch; ++b) {
        const float* xb = x + size_t(b) * c.inputSize;
        const float* hb = hIn + size_t(b) * c.units;
        float* ob = hOut + size_t(b) * c.units;
        for (uint32_t o = 0; o < c.units; ++o) {
            float acc = c.bias[o];
            for (uint32_t i = 0; i < c.inputSize; ++i) acc += xb[i] * c.weights[size_t(o) * c.inputSize + i];
            if (aux != nullptr) {
                const float* ab = aux + size_t(b) * c.auxSize;
                for (uint32_t i = 0; i < c.auxSize; ++i)
                    acc += ab[i] * c.auxWeights[size_t(o) * c.auxSize + i];
            }
            for (uint32_t h = 0; h < c.units; ++h) acc += hb[h] * c.recurrent[size_t(o) * c.units + h];
            ob[o] = recurrentActivation(acc, c.activation);
        }
    }
}

struct Sequence {
    uint32_t maxTime = 1, nBatch = 1;
    bool timeMajor = true;
    size_t row(uint32_t t, uint32_t b) const {
        return timeMajor ? size_t(t) * nBatch + b : size_t(b) * maxTime + t;
    }
};

void rnnSequence(const RnnCell& c, const Sequence& seq, bool forward, const std::vector<float>& input,
                 const std::vector<float>* aux, std::vector<float>& hidden, std::vector<float>& out,
                 uint32_t outStride, uint32_t outOffset) {
    const uint32_t nB = seq.nBatch;
    std::vector<float> x(size_t(nB) * c.inputSize), a(aux ? size_t(nB) * c.auxSize : 0), h(hidden.size());
    for (uint32_t step = 0; step < seq.maxTime; ++step) {
        const uint32_t t = forward ? step : seq.maxTime - 1 - step;
        for (uint32_t b = 0; b < nB; ++b) {
            std::copy_n(input.begin() + seq.row(t, b) * c.inputSize, c.inputSize,
                        x.begin() + size_t(b) * c.inputSize);
            if (aux)
                std::copy_n(aux->begin() + seq.row(t, b) * c.auxSize, c.auxSize,
                            a.begin() + size_t(b) * c.auxSize);
        }
        rnnStep(c, nB, x.data(), aux ? a.data() : nullptr, hidden.data(), h.data());
        hidden = h;
        for (uint32_t b = 0; b < nB; ++b) {
            std::copy_n(h.begin() + size_t(b) * c.units, c.units,
                        out.begin() + seq.row(t, b) * outStride + outOffset);
        }
    }
}

// Checks weights/recurrent/bias/hidden of one cell; returns the number of units.
Result<uint32_t> validateRnnCell(OperationContext& ctx, size_t weights, size_t recurrent, size_t bias,
                                 size_t hidden, uint32_t inputSize, uint32_t nBatch) {
    NPU_TRY(ctx.expectRank(weights, 2));
    const uint32_t units = ctx.inputDims(weights)[0];
    NPU_TRY(expectTensor(ctx, weights, "weights", {units, inputSize}));
    NPU_TRY(expectTensor(ctx, recurrent, "recurrent_weights", {units, units}));
    NPU_TRY(expectTensor(ctx, bias, "bias", {units}));
    NPU_TRY(expectTensor(ctx, hidden, "hidden_state", {nBatch, units}));
    return units;
}

RnnCell loadRnnCell(const OperationContext& ctx, size_t weights, size_t recurrent, size_t bias,
                    size_t auxWeights, int32_t activation) {
    RnnCell c;
    c.units = ctx.inputDims(weights)[0];
    c.inputSize = ctx.inputDims(weights)[1];
    c.weights = loadAll(ctx, weights);
    c.recurrent = loadAll(ctx, recurrent);
    c.bias = loadAll(ctx, bias);
    if (auxWeights < ctx.inputCount() && !ctx.isOmitted(auxWeights)) {
        c.auxWeights = loadAll(ctx, auxWeights);
        c.auxSize = ctx.inputDims(auxWeights)[1];
    }
    c.activation = activation;
    return c;
}

// ---- RNN ----------------------------------------------------------------------------------------

Status prepareRnn(OperationContext& ctx) {
    NPU_TRY(ctx.expectInputCount(6, 6));
    NPU_TRY(ctx.expectOutputCount(2));
    NPU_TRY(expectOutputsOfInputType(ctx));
    NPU_TRY(ctx.expectRank(0, 2));
    const uint32_t nBatch = ctx.inputDims(0)[0], inputSize = ctx.inputDims(0)[1];
    const uint32_t units = NPU_TRY(validateRnnCell(ctx, 1, 2, 3, 4, inputSize, nBatch));
    NPU_TRY(rnnActivation(ctx, 5));
    NPU_TRY(ctx.setOutputShape(0, {nBatch, units}));
    return ctx.setOutputShape(1, {nBatch, units});
}

Status executeRnn(OperationContext& ctx) {
    const RnnCell c = loadRnnCell(ctx, 1, 2, 3, ctx.inputCount(), ctx.scalar<int32_t>(5));
    const uint32_t nBatch = ctx.inputDims(0)[0];
    const std::vector<float> x = loadAll(ctx, 0), h = loadAll(ctx, 4);
    std::vector<float> out(size_t(nBatch) * c.units);
    rnnStep(c, nBatch, x.data(), nullptr, h.data(), out.data());
    storeAll(ctx.output(0), out.data(), out.size());
    storeAll(ctx.output(1), out.data(), out.size());
    return {};
}

// ---- UNIDIRECTIONAL_SEQUENCE_RNN ---------------------------------------------------------------

Status prepareUnidirectionalRnn(OperationContext& ctx) {
    NPU_TRY(ctx.expectInputCount(7, 7));
    if (ctx.outputCount() != 1 && ctx.outputCount() != 2) {
        return ctx.error("has " + std::to_string(ctx.outputCount()) + " outputs, expected 1 or 2");
    }
    NPU_TRY(expectOutputsOfInputType(ctx));
    NPU_TRY(ctx.expectRank(0, 3));
    const bool timeMajor = NPU_TRY(flagInput(ctx, 6));
    const auto& in = ctx.inputDims(0);
    const uint32_t nBatch = timeMajor ? in[1] : in[0];
    const uint32_t units = NPU_TRY(validateRnnCell(ctx, 1, 2, 3, 4, in[2], nBatch));
    NPU_TRY(rnnActivation(ctx, 5));
    NPU_TRY(ctx.setOutputShape(0, {in[0], in[1], units}));
    if (ctx.outputCount() == 2) NPU_TRY(ctx.setOutputShape(1, {nBatch, units}));
    return {};
}

Status executeUnidirectionalRnn(OperationContext& ctx) {
    const RnnCell c = loadRnnCell(ctx, 1, 2, 3, ctx.inputCount(), ctx.scalar<int32_t>(5));
    const bool timeMajor = flagValue(ctx, 6);
    const auto& in = ctx.inputDims(0);
    const Sequence seq{timeMajor ? in[0] : in[1], timeMajor ? in[1] : in[0], timeMajor};
    std::vector<float> hidden = loadAll(ctx, 4), out(elementCount(ctx.output(0).dims));
    rnnSequence(c, seq, true, loadAll(ctx, 0), nullptr, hidden, out, c.units, 0);
    storeAll(ctx.output(0), out.data(), out.size());
    if (ctx.outputCount() == 2) storeAll(ctx.output(1), hidden.data(), hidden.size());
    return {};
}

// ---- BIDIRECTIONAL_SEQUENCE_RNN ----------------------------------------------------------------

constexpr size_t kAuxInput = 9, kFwAuxWeights = 10, kBwAuxWeights = 11, kActivation = 12, kTimeMajor = 13,
                 kMerge = 14;

// No auxiliary input; the auxiliary input as the backward cell's input (parallel linking); or the
// auxiliary input through auxiliary weights in both cells (cross linking).
enum class Linking { kNone, kParallel, kCross };

Linking linkingOf(const OperationContext& ctx) {
    if (ctx.isOmitted(kAuxInput)) return Linking::kNone;
    return ctx.isOmitted(kFwAuxWeights) ? Linking::kParallel : Linking::kCross;
}

Status prepareBidirectionalRnn(OperationContext& ctx) {
    NPU_TRY(ctx.expectInputCount(15, 15));
    NPU_TRY(expectOutputsOfInputType(ctx));
    NPU_TRY(deferIfPresenceUnknown(ctx, {kAuxInput, kFwAuxWeights, kBwAuxWeights}));
    NPU_TRY(ctx.expectRank(0, 3));
    const bool timeMajor = NPU_TRY(flagInput(ctx, kTimeMajor));
    const bool merge = NPU_TRY(flagInput(ctx, kMerge));
    const size_t base = merge ? 1 : 2;
    if (ctx.outputCount() != base && ctx.outputCount() != base + 2) {
        return ctx.error("has " + std::to_string(ctx.outputCount()) + " outputs, expected " +
                         std::to_string(base) + " or " + std::to_string(base + 2) +
                         (merge ? " (merged outputs)" : ""));
    }
    const auto& in = ctx.inputDims(0);
    const uint32_t nBatch = timeMajor ? in[1] : in[0];
    const bool fwAux = !ctx.isOmitted(kFwAuxWeights), bwAux = !ctx.isOmitted(kBwAuxWeights);
    if (fwAux != bwAux)
        return ctx.error("inputs 10 and 11 (auxiliary weights) must be both present or both omitted");
    const Linking linking = linkingOf(ctx);
    if (fwAux && linking == Linking::kNone)
        return ctx.error("auxiliary weights given without input 9 (aux_input)");
    uint32_t auxSize = 0;
    if (linking != Linking::kNone) {
        NPU_TRY(ctx.expectSameType(kAuxInput, 0));
        NPU_TRY(ctx.expectRank(kAuxInput, 3));
        const auto& aux = ctx.inputDims(kAuxInput);
        if (aux[0] != in[0] || aux[1] != in[1]) {
            return ctx.error("input 9 (aux_input) has shape " + dimsToString(aux) +
                             ", its first two dimensions must match input 0 " + dimsToString(in));
        }
        auxSize = aux[2];
    }
    const uint32_t fwUnits = NPU_TRY(validateRnnCell(ctx, 1, 2, 3, 4, in[2], nBatch));
    const uint32_t bwUnits =
        NPU_TRY(validateRnnCell(ctx, 5, 6, 7, 8, linking == Linking::kParallel ? auxSize : in[2], nBatch));
    if (linking == Linking::kCross) {
        NPU_TRY(expectTensor(ctx, kFwAuxWeights, "fw_aux_weights", {fwUnits, auxSize}));
        NPU_TRY(expectTensor(ctx, kBwAuxWeights, "bw_aux_weights", {bwUnits, auxSize}));
    }
    NPU_TRY(rnnActivation(ctx, kActivation));
    NPU_TRY(ctx.setOutputShape(0, {in[0], in[1], merge ? fwUnits + bwUnits : fwUnits}));
    if (!merge) NPU_TRY(ctx.setOutputShape(1, {in[0], in[1], bwUnits}));
    if (ctx.outputCount() > base) {
        NPU_TRY(ctx.setOutputShape(base, {nBatch, fwUnits}));
        NPU_TRY(ctx.setOutputShape(base + 1, {nBatch, bwUnits}));
    }
    return {};
}

Status executeBidirectionalRnn(OperationContext& ctx) {
    const bool timeMajor = flagValue(ctx, kTimeMajor), merge = flagValue(ctx, kMerge);
    const Linking linking = linkingOf(ctx);
    const int32_t activation = ctx.scalar<int32_t>(kActivation);
    const size_t noAux = ctx.inputCount();
    const RnnCell fw =
        loadRnnCell(ctx, 1, 2, 3, linking == Linking::kCross ? kFwAuxWeights : noAux, activation);
    const RnnCell bw =
        loadRnnCell(ctx, 5, 6, 7, linking == Linking::kCross ? kBwAuxWeights : noAux, activation);
    const auto& in = ctx.inputDims(0);
    const Sequence seq{timeMajor ? in[0] : in[1], timeMajor ? in[1] : in[0], timeMajor};
    const std::vector<float> input = loadAll(ctx, 0), aux = loadAll(ctx, kAuxInput);
    const std::vector<float>* crossAux = linking == Linking::kCross ? &aux : nullptr;
    std::vector<float> fwH = loadAll(ctx, 4), bwH = loadAll(ctx, 8);
    const size_t rows = size_t(in[0]) * in[1];
    const uint32_t stride0 = merge ? fw.units + bw.units : fw.units;
    std::vector<float> out0(rows * stride0), out1(merge ? 0 : rows * bw.units);
    rnnSequence(fw, seq, true, input, crossAux, fwH, out0, stride0, 0);
    rnnSequence(bw, seq, false, linking == Linking::kParallel ? aux : input, crossAux, bwH,
                merge ? out0 : out1, merge ? stride0 : bw.units, merge ? fw.units : 0);
    storeAll(ctx.output(0), out0.data(), out0.size());
    size_t o = 1;
    if (!merge) storeAll(ctx.output(o++), out1.data(), out1.size());
    if (ctx.outputCount() > o) {
        storeAll(ctx.output(o), fwH.data(), fwH.size());
        storeAll(ctx.output(o + 1), bwH.data(), bwH.size());
    }
    return {};
}

// ---- SVDF ---------------------------------------------------------------------------------------
// state [batch, numFilters * memorySize]: each filter keeps its last memorySize activations, the
// newest at the end.

Status prepareSvdf(OperationContext& ctx) {
    NPU_TRY(ctx.expectInputCount(7, 7));
    NPU_TRY(ctx.expectOutputCount(2));
    NPU_TRY(expectOutputsOfInputType(ctx));
    NPU_TRY(deferIfPresenceUnknown(ctx, {3}));
    NPU_TRY(ctx.expectRank(0, 2));
    NPU_TRY(ctx.expectRank(1, 2));
    NPU_TRY(ctx.expectRank(2, 2));
    const uint32_t nBatch = ctx.inputDims(0)[0], inputSize = ctx.inputDims(0)[1];
    const uint32_t numFilters = ctx.inputDims(1)[0], memorySize = ctx.inputDims(2)[1];
    const int32_t rank = NPU_TRY(scalarInput<int32_t>(ctx, 5, OperandType::INT32));
    if (rank <= 0 || numFilters % uint32_t(rank) != 0) {
        return ctx.error("input 5 (rank) " + std::to_string(rank) + " must be positive and divide the " +
                         std::to_string(numFilters) + " filters of input 1");
    }
    const uint32_t units = numFilters / uint32_t(rank);
    NPU_TRY(expectTensor(ctx, 1, "weights_feature", {numFilters, inputSize}));
    NPU_TRY(expectTensor(ctx, 2, "weights_time", {numFilters, memorySize}));
    if (!ctx.isOmitted(3)) NPU_TRY(expectTensor(ctx, 3, "bias", {units}));
    NPU_TRY(expectTensor(ctx, 4, "state_in", {nBatch, memorySize * numFilters}));
    NPU_TRY(rnnActivation(ctx, 6));
    NPU_TRY(ctx.setOutputShape(0, {nBatch, memorySize * numFilters}));
    return ctx.setOutputShape(1, {nBatch, units});
}

Status executeSvdf(OperationContext& ctx) {
    const uint32_t nBatch = ctx.inputDims(0)[0], inputSize = ctx.inputDims(0)[1];
    const uint32_t numFilters = ctx.inputDims(1)[0], memorySize = ctx.inputDims(2)[1];
    const uint32_t rank = uint32_t(ctx.scalar<int32_t>(5)), units = numFilters / rank;
    const int32_t activation = ctx.scalar<int32_t>(6);
    const std::vector<float> input = loadAll(ctx, 0), feature = loadAll(ctx, 1), time = loadAll(ctx, 2),
                             bias = loadAll(ctx, 3);
    std::vector<float> state = loadAll(ctx, 4), output(size_t(nBatch) * units);
    for (uint32_t b = 0; b < nBatch; ++b) {
        float* stateB = state.data() + size_t(b) * numFilters * memorySize;
        // The newest activation of each filter: feature weights times this input.
        for (uint32_t f = 0; f < numFilters; ++f) {
            float dot = 0;
            for (uint32_t i = 0; i < inputSize; ++i)
                dot += feature[size_t(f) * inputSize + i] * input[size_t(b) * inputSize + i];
            stateB[size_t(f) * memorySize + memorySize - 1] = dot;
        }
        for (uint32_t u = 0; u < units; ++u) {
            float acc = bias.empty() ? 0.0f : bias[u];
            for (uint32_t r = 0; r < rank; ++r) {
                const uint32_t f = u * rank + r;
                float dot = 0;
                for (uint32_t m = 0; m < memorySize; ++m)
                    dot += time[size_t(f) * memorySize + m] * stateB[size_t(f) * memorySize + m];
                acc += dot;
            }
            output[size_t(b) * units + u] = recurrentActivation(acc, activation);
        }
        // Shift every filter's memory left by one; the freed newest slot starts at zero.
        for (uint32_t f = 0; f < numFilters; ++f) {
            float* s = stateB + size_t(f) * memorySize;
            std::copy(s + 1, s + memorySize, s);
            s[memorySize - 1] = 0.0f;
        }
    }
    storeAll(ctx.output(0), state.data(), state.size());
    storeAll(ctx.output(1), output.data(), output.size());
    return {};
}

}  // namespace

std::vector<OperationRegistration> rnnOperations() {
    return {
        {OperationType::RNN, supportsFloat, prepareRnn, executeRnn},
        {OperationType::UNIDIRECTIONAL_SEQUENCE_RNN, supportsFloat, prepareUnidirectionalRnn,
         executeUnidirectionalRnn},
        {OperationType::BIDIRECTIONAL_SEQUENCE_RNN, supportsFloat, prepareBidirectionalRnn,
         executeBidirectionalRnn},
        {OperationType::SVDF, supportsFloat, prepareSvdf, executeSvdf},
    };
}

}  // namespace npu::ref::ops

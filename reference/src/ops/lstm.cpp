// LSTM, UNIDIRECTIONAL_SEQUENCE_LSTM, BIDIRECTIONAL_SEQUENCE_LSTM for float32 and float16 (a float16
// model computes in float32 and rounds once when it stores, as the NNAPI reference does).
// Optional parts of a cell: CIFG (no input gate), peephole, projection (+bias), layer normalization,
// auxiliary input (bidirectional only).
#include <cmath>

#include "common.h"
#include "recurrent_activation.h"

namespace npu::ref::ops {
namespace {

using hal::OperationType;

constexpr int kNone = -1;
enum Gate { kInputGate = 0, kForgetGate = 1, kCellGate = 2, kOutputGate = 3 };

// Operand indices (inside the operation) of one cell's tensors.
struct CellInputs {
    int inputToGate[4];
    int recurrentToGate[4];
    int peephole[3];  // cell_to_input, cell_to_forget, cell_to_output
    int bias[4];
    int projectionWeights, projectionBias;
    int outputStateIn, cellStateIn;
    int auxToGate[4];  // kNone when the operation has no auxiliary input
    int layerNorm[4];  // kNone when the operation has no layer normalization inputs
};

// Sizes and optional parts of a cell, as the present operands say.
struct CellShape {
    uint32_t nInput = 0, nCell = 0, nOutput = 0, nAux = 0;
    bool cifg = false, peephole = false, projection = false, projectionBias = false, layerNorm = false,
         auxWeights = false;
};

struct CellParams {
    int32_t activation = 4;
    float cellClip = 0, projClip = 0;
};

bool present(const OperationContext& ctx, int i) {
    return i != kNone && !ctx.isOmitted(size_t(i));
}

std::string name(int i, const char* what) {
    return "input " + std::to_string(i) + " (" + what + ")";
}

CellShape describeCell(const OperationContext& ctx, const CellInputs& c, size_t inputIndex, size_t auxIndex) {
    CellShape s;
    const auto& in = ctx.inputDims(inputIndex);
    s.nInput = in.empty() ? 0 : in.back();
    const auto& ito = ctx.inputDims(size_t(c.inputToGate[kOutputGate]));
    const auto& rto = ctx.inputDims(size_t(c.recurrentToGate[kOutputGate]));
    s.nCell = ito.empty() ? 0 : ito[0];
    s.nOutput = rto.size() < 2 ? 0 : rto[1];
    s.cifg = !present(ctx, c.inputToGate[kInputGate]);
    s.peephole = present(ctx, c.peephole[2]);
    s.projection = present(ctx, c.projectionWeights);
    s.projectionBias = present(ctx, c.projectionBias);
    s.layerNorm = present(ctx, c.layerNorm[kForgetGate]);
    s.auxWeights = present(ctx, c.auxToGate[kForgetGate]);
    if (s.auxWeights && present(ctx, int(auxIndex))) s.nAux = ctx.inputDims(auxIndex).back();
    return s;
}

// Type and shape checks of a cell's tensors, naming the input and its role.
struct CellChecker {
    OperationContext& ctx;
    OperandType type;

    Status tensor(int i, const char* what, std::initializer_list<uint32_t> dims) const {
        const std::string n = name(i, what);
        if (ctx.inputType(size_t(i)) != type) {
            return ctx.error(n + " has type " + std::string(hal::toString(ctx.inputType(size_t(i)))) +
                             ", expected " + std::string(hal::toString(type)));
        }
        const std::vector<uint32_t> want(dims);
        if (ctx.inputDims(size_t(i)) != want) {
            return ctx.error(n + " has shape " + dimsToString(ctx.inputDims(size_t(i))) + ", expected " +
                             dimsToString(want));
        }
        return {};
    }
    Status required(int i, const char* what) const {
        if (!present(ctx, i)) return ctx.error(name(i, what) + " is required");
        return {};
    }
};

// The weights of the gates (the input gate's only without CIFG) and the peephole weights.
Status checkGateWeights(const CellChecker& k, const CellInputs& c, const CellShape& s) {
    OperationContext& ctx = k.ctx;
    for (int g = 0; g < 4; ++g) {
        if (g == kInputGate && s.cifg) continue;
        NPU_TRY(k.tensor(c.inputToGate[g], "input_to_gate_weights", {s.nCell, s.nInput}));
        NPU_TRY(k.tensor(c.recurrentToGate[g], "recurrent_to_gate_weights", {s.nCell, s.nOutput}));
    }
    if (s.cifg == present(ctx, c.recurrentToGate[kInputGate])) {
        return ctx.error(name(c.recurrentToGate[kInputGate], "recurrent_to_input_weights") +
                         " must be present exactly when input_to_input_weights is (CIFG)");
    }
    for (int p = 0; p < 3; ++p) {
        if (present(ctx, c.peephole[p])) NPU_TRY(k.tensor(c.peephole[p], "cell_to_gate_weights", {s.nCell}));
    }
    const bool peepholeOk =
        (s.peephole && present(ctx, c.peephole[1]) && (s.cifg || present(ctx, c.peephole[0]))) ||
        (!present(ctx, c.peephole[0]) && !present(ctx, c.peephole[1]) && !s.peephole);
    if (!peepholeOk)
        return ctx.error("peephole weights (inputs " + std::to_string(c.peephole[0]) + ".." +
                         std::to_string(c.peephole[2]) + ") must be all present or all omitted");
    return {};
}

// The gate biases, the projection and the states in.
Status checkBiasesAndProjection(const CellChecker& k, const CellInputs& c, const CellShape& s,
                                uint32_t nBatch) {
    OperationContext& ctx = k.ctx;
    if (s.cifg) {
        if (present(ctx, c.bias[kInputGate])) {
            return ctx.error(name(c.bias[kInputGate], "input_gate_bias") +
                             " must be omitted for a CIFG LSTM");
        }
    } else {
        NPU_TRY(k.required(c.bias[kInputGate], "input_gate_bias"));
    }
    for (int g = 0; g < 4; ++g) {
        if (g == kInputGate && s.cifg) continue;
        NPU_TRY(k.tensor(c.bias[g], "gate_bias", {s.nCell}));
    }
    if (s.projection) {
        NPU_TRY(k.tensor(c.projectionWeights, "projection_weights", {s.nOutput, s.nCell}));
    } else if (s.nOutput != s.nCell) {
        return ctx.error("without projection weights the output size " + std::to_string(s.nOutput) +
                         " must equal the number of cells " + std::to_string(s.nCell));
    }
    if (s.projectionBias) {
        if (!s.projection)
            return ctx.error(name(c.projectionBias, "projection_bias") + " needs projection weights");
        NPU_TRY(k.tensor(c.projectionBias, "projection_bias", {s.nOutput}));
    }
    NPU_TRY(k.tensor(c.outputStateIn, "output_state_in", {nBatch, s.nOutput}));
    NPU_TRY(k.tensor(c.cellStateIn, "cell_state_in", {nBatch, s.nCell}));
    return {};
}

// Layer normalization weights: all present (the input gate's only without CIFG) or all omitted.
Status checkLayerNorm(const CellChecker& k, const CellInputs& c, const CellShape& s) {
    if (c.layerNorm[0] == kNone) return {};
    for (int g = 0; g < 4; ++g) {
        const bool want = s.layerNorm && !(g == kInputGate && s.cifg);
        if (want) {
            NPU_TRY(k.required(c.layerNorm[g], "layer_norm_weights"));
            NPU_TRY(k.tensor(c.layerNorm[g], "layer_norm_weights", {s.nCell}));
        } else if (!s.layerNorm && present(k.ctx, c.layerNorm[g])) {
            return k.ctx.error("layer normalization weights (inputs " + std::to_string(c.layerNorm[0]) +
                               ".." + std::to_string(c.layerNorm[3]) +
                               ") must be all present or all omitted");
        }
    }
    return {};
}

// Auxiliary input weights: only with an auxiliary input, and all of them (but the input gate's
// with CIFG).
Status checkAuxWeights(const CellChecker& k, const CellInputs& c, const CellShape& s, int auxIndex) {
    OperationContext& ctx = k.ctx;
    if (c.auxToGate[0] == kNone) return {};
    const bool anyAux = present(ctx, c.auxToGate[0]) || present(ctx, c.auxToGate[1]) ||
                        present(ctx, c.auxToGate[2]) || present(ctx, c.auxToGate[3]);
    if (!anyAux) return {};
    if (auxIndex == kNone || !present(ctx, auxIndex))
        return ctx.error("auxiliary weights given without aux_input");
    for (int g = 0; g < 4; ++g) {
        if (g == kInputGate && s.cifg) {
            if (present(ctx, c.auxToGate[g]))
                return ctx.error(name(c.auxToGate[g], "aux_input_to_input_weights") +
                                 " must be omitted for a CIFG LSTM");
            continue;
        }
        NPU_TRY(k.required(c.auxToGate[g], "aux_input_to_gate_weights"));
        NPU_TRY(k.tensor(c.auxToGate[g], "aux_input_to_gate_weights", {s.nCell, s.nAux}));
    }
    return {};
}

// Checks one cell's tensors against each other (the NNAPI LSTM rules); inputIndex is the tensor the
// cell reads ([.., nInput]); auxIndex the auxiliary input (or kNone).
Result<CellShape> validateCell(OperationContext& ctx, const CellInputs& c, size_t inputIndex, int auxIndex,
                               uint32_t nBatch) {
    const CellChecker k{ctx, ctx.inputType(0)};
    for (int g : {kForgetGate, kCellGate, kOutputGate}) {
        NPU_TRY(k.required(c.inputToGate[g], "input_to_gate_weights"));
        NPU_TRY(k.required(c.recurrentToGate[g], "recurrent_to_gate_weights"));
        NPU_TRY(k.required(c.bias[g], "gate_bias"));
    }
    NPU_TRY(k.required(c.outputStateIn, "output_state_in"));
    NPU_TRY(k.required(c.cellStateIn, "cell_state_in"));
    if (ctx.inputRank(size_t(c.inputToGate[kOutputGate])) != 2 ||
        ctx.inputRank(size_t(c.recurrentToGate[kOutputGate])) != 2) {
        return ctx.error(name(c.inputToGate[kOutputGate], "input_to_output_weights") + " and " +
                         name(c.recurrentToGate[kOutputGate], "recurrent_to_output_weights") +
                         " must have rank 2");
    }
    const CellShape s = describeCell(ctx, c, inputIndex, auxIndex == kNone ? 0 : size_t(auxIndex));
    if (s.nCell == 0 || s.nOutput == 0 || s.nInput == 0)
        return ctx.error("LSTM cell with a zero-sized dimension");
    NPU_TRY(checkGateWeights(k, c, s));
    NPU_TRY(checkBiasesAndProjection(k, c, s, nBatch));
    NPU_TRY(checkLayerNorm(k, c, s));
    NPU_TRY(checkAuxWeights(k, c, s, auxIndex));
    return s;
}

Result<CellParams> cellParams(OperationContext& ctx, size_t activation, size_t cellClip, size_t projClip) {
    CellParams p;
    p.activation = NPU_TRY(scalarInput<int32_t>(ctx, activation, OperandType::INT32));
    if (p.activation < 0 || p.activation > 6 || p.activation == 5) {
        return ctx.error("input " + std::to_string(activation) + ": activation " +
                         std::to_string(p.activation) + " is not NONE, RELU, RELU1, RELU6, TANH or SIGMOID");
    }
    const OperandType ft =
        ctx.inputType(0) == OperandType::TENSOR_FLOAT16 ? OperandType::FLOAT16 : OperandType::FLOAT32;
    for (size_t i : {cellClip, projClip}) {
        NPU_TRY(ctx.expectType(i, ft));
        if (!ctx.hasValue(i)) return ctx.deferred();
        const float v = loadFloat(ft, ctx.input(i).data(), 0);
        if (!(v >= 0))
            return ctx.error("input " + std::to_string(i) + ": clip value " + std::to_string(v) +
                             " must be >= 0");
        (i == cellClip ? p.cellClip : p.projClip) = v;
    }
    return p;
}

std::vector<int> optionalInputs(const CellInputs& c) {
    std::vector<int> v = {c.inputToGate[0],    c.recurrentToGate[0], c.peephole[0],
                          c.peephole[1],       c.peephole[2],        c.bias[0],
                          c.projectionWeights, c.projectionBias};
    for (int g = 0; g < 4; ++g) {
        v.push_back(c.auxToGate[g]);
        v.push_back(c.layerNorm[g]);
    }
    return v;
}
// An optional input that is a model input is only known to be present or omitted when a request
// arrives: preparation then waits for the request (the scratch shape and the checks depend on it).
Status deferIfPresenceUnknown(OperationContext& ctx, const std::vector<int>& optional) {
    if (ctx.mode() != OperationContext::Mode::kPrepare) return {};
    for (int i : optional) {
        if (i != kNone && size_t(i) < ctx.inputCount() &&
            ctx.input(size_t(i)).lifetime == hal::OperandLifeTime::SUBGRAPH_INPUT) {
            return ctx.deferred();
        }
    }
    return {};
}

// ---- Execution ---------------------------------------------------------------------------------

std::vector<float> loadAll(const OperationContext& ctx, int i) {
    if (!present(ctx, i)) return {};
    const RuntimeOperand& op = ctx.input(size_t(i));
    std::vector<float> v(elementCount(op.dims));
    for (size_t k = 0; k < v.size(); ++k) v[k] = loadFloat(op.type, op.data(), k);
    return v;
}

void storeAll(RuntimeOperand& out, const float* v, size_t n) {
    for (size_t k = 0; k < n; ++k) storeFloat(out.type, out.buffer.data(), k, v[k]);
}

struct Cell {
    CellShape s;
    CellParams p;
    std::vector<float> inputToGate[4], recurrentToGate[4], auxToGate[4], peephole[3], bias[4], layerNorm[4];
    std::vector<float> projectionWeights, projectionBias;
};

Cell loadCell(const OperationContext& ctx, const CellInputs& c, const CellShape& s, const CellParams& p) {
    Cell cell{s, p, {}, {}, {}, {}, {}, {}, {}, {}};
    for (int g = 0; g < 4; ++g) {
        cell.inputToGate[g] = loadAll(ctx, c.inputToGate[g]);
        cell.recurrentToGate[g] = loadAll(ctx, c.recurrentToGate[g]);
        cell.auxToGate[g] = loadAll(ctx, c.auxToGate[g]);
        cell.bias[g] = loadAll(ctx, c.bias[g]);
        cell.layerNorm[g] = loadAll(ctx, c.layerNorm[g]);
    }
    for (int k = 0; k < 3; ++k) cell.peephole[k] = loadAll(ctx, c.peephole[k]);
    cell.projectionWeights = loadAll(ctx, c.projectionWeights);
    cell.projectionBias = loadAll(ctx, c.projectionBias);
    return cell;
}

float sigmoid(float x) {
    return 1.0f / (1.0f + std::exp(-x));
}

// rows x cols matrix times each batch vector, accumulated into result (a float dot product per row
// added to what is there, like tensor_utils::MatrixBatchVectorMultiplyAccumulate).
void matVecAccumulate(const std::vector<float>& m, uint32_t rows, uint32_t cols, const float* v,
                      uint32_t nBatch, float* result) {
    for (uint32_t b = 0; b < nBatch; ++b)
        for (uint32_t r = 0; r < rows; ++r) {
            float dot = 0;
            for (uint32_t k = 0; k < cols; ++k) dot += m[size_t(r) * cols + k] * v[size_t(b) * cols + k];
            result[size_t(b) * rows + r] += dot;
        }
}

void meanStddevNormalize(float* v, uint32_t n, uint32_t nBatch) {
    for (uint32_t b = 0; b < nBatch; ++b) {
        float* x = v + size_t(b) * n;
        float sum = 0;
        for (uint32_t k = 0; k < n; ++k) sum += x[k];
        const float mean = sum / float(n);
        float sumDiffSq = 0;
        for (uint32_t k = 0; k < n; ++k) sumDiffSq += (x[k] - mean) * (x[k] - mean);
        const float variance = sumDiffSq / float(n);
        const float stddevInv = 1.0f / std::sqrt(variance + 1e-8f);
        for (uint32_t k = 0; k < n; ++k) x[k] = (x[k] - mean) * stddevInv;
    }
}

// One time step for a batch. scratch holds 4 (3 for CIFG) gate blocks of nBatch * nCell.
void lstmStep(const Cell& c, uint32_t nBatch, const float* input, const float* aux,
              const float* outputStateIn, const float* cellStateIn, float* outputStateOut,
              float* cellStateOut, float* output, float* scratch) {
    const CellShape& s = c.s;
    const uint32_t nCell = s.nCell, nOutput = s.nOutput;
    const size_t block = size_t(nBatch) * nCell;
    float* gates[4];
    gates[kInputGate] = s.cifg ? nullptr : scratch;
    gates[kCellGate] = scratch + (s.cifg ? 0 : 1) * block;
    gates[kForgetGate] = scratch + (s.cifg ? 1 : 2) * block;
    gates[kOutputGate] = scratch + (s.cifg ? 2 : 3) * block;
    for (int g = 0; g < 4; ++g) {
        if (gates[g] == nullptr) continue;
        for (uint32_t b = 0; b < nBatch; ++b)
            for (uint32_t k = 0; k < nCell; ++k)
                gates[g][size_t(b) * nCell + k] = s.layerNorm ? 0.0f : c.bias[g][k];
        matVecAccumulate(c.inputToGate[g], nCell, s.nInput, input, nBatch, gates[g]);
        if (aux != nullptr && s.auxWeights)
            matVecAccumulate(c.auxToGate[g], nCell, s.nAux, aux, nBatch, gates[g]);
        matVecAccumulate(c.recurrentToGate[g], nCell, nOutput, outputStateIn, nBatch, gates[g]);
    }
    auto finishGate = [&](int g, const std::vector<float>* peephole, const float* cellState, bool squash) {
        float* x = gates[g];
        if (peephole != nullptr) {
            for (uint32_t b = 0; b < nBatch; ++b)
                for (uint32_t k = 0; k < nCell; ++k)
                    x[size_t(b) * nCell + k] += (*peephole)[k] * cellState[size_t(b) * nCell + k];
        }
        if (s.layerNorm) {
            meanStddevNormalize(x, nCell, nBatch);
            for (uint32_t b = 0; b < nBatch; ++b)
                for (uint32_t k = 0; k < nCell; ++k) {
                    float& v = x[size_t(b) * nCell + k];
                    v = v * c.layerNorm[g][k] + c.bias[g][k];
                }
        }
        if (squash) {
            for (size_t k = 0; k < block; ++k) x[k] = sigmoid(x[k]);
        }
    };
    if (!s.cifg) finishGate(kInputGate, s.peephole ? &c.peephole[0] : nullptr, cellStateIn, true);
    finishGate(kForgetGate, s.peephole ? &c.peephole[1] : nullptr, cellStateIn, true);
    finishGate(kCellGate, nullptr, nullptr, false);
    for (size_t k = 0; k < block; ++k) {
        const float forget = gates[kForgetGate][k];
        const float cellInput = recurrentActivation(gates[kCellGate][k], c.p.activation);
        const float inputGate = s.cifg ? 1.0f - forget : gates[kInputGate][k];
        float v = forget * cellStateIn[k];
        v += cellInput * inputGate;
        if (c.p.cellClip > 0) v = std::clamp(v, -c.p.cellClip, c.p.cellClip);
        cellStateOut[k] = v;
        gates[kCellGate][k] = cellInput;
        if (s.cifg) gates[kForgetGate][k] = inputGate;
    }
    finishGate(kOutputGate, s.peephole ? &c.peephole[2] : nullptr, cellStateOut, true);
    for (size_t k = 0; k < block; ++k) {
        gates[kCellGate][k] = recurrentActivation(cellStateOut[k], c.p.activation);
        gates[kOutputGate][k] *= gates[kCellGate][k];
    }
    if (s.projection) {
        for (uint32_t b = 0; b < nBatch; ++b)
            for (uint32_t o = 0; o < nOutput; ++o)
                output[size_t(b) * nOutput + o] = s.projectionBias ? c.projectionBias[o] : 0.0f;
        matVecAccumulate(c.projectionWeights, nOutput, nCell, gates[kOutputGate], nBatch, output);
        if (c.p.projClip > 0) {
            for (size_t k = 0; k < size_t(nBatch) * nOutput; ++k)
                output[k] = std::clamp(output[k], -c.p.projClip, c.p.projClip);
        }
    } else {
        std::copy(gates[kOutputGate], gates[kOutputGate] + block, output);
    }
    std::copy(output, output + size_t(nBatch) * nOutput, outputStateOut);
}

// Rows of a [maxTime, batch, n] (time major) or [batch, maxTime, n] tensor.
struct Sequence {
    uint32_t maxTime = 1, nBatch = 1;
    bool timeMajor = true;
    size_t row(uint32_t t, uint32_t b) const {
        return timeMajor ? size_t(t) * nBatch + b : size_t(b) * maxTime + t;
    }
};

// Runs one direction over the sequence; the states are updated in place; the output of step t for
// batch b goes to out[row(t, b) * outStride + outOffset ...].
void lstmSequence(const Cell& c, const Sequence& seq, bool forward, const std::vector<float>& input,
                  const std::vector<float>* aux, std::vector<float>& outputState,
                  std::vector<float>& cellState, std::vector<float>& out, uint32_t outStride,
                  uint32_t outOffset) {
    const uint32_t nB = seq.nBatch, nIn = c.s.nInput, nAux = c.s.nAux, nOut = c.s.nOutput;
    std::vector<float> x(size_t(nB) * nIn), a(aux ? size_t(nB) * nAux : 0), y(size_t(nB) * nOut);
    std::vector<float> hOut(outputState.size()), cOut(cellState.size()), scratch(size_t(nB) * c.s.nCell * 4);
    for (uint32_t step = 0; step < seq.maxTime; ++step) {
        const uint32_t t = forward ? step : seq.maxTime - 1 - step;
        for (uint32_t b = 0; b < nB; ++b) {
            std::copy_n(input.begin() + seq.row(t, b) * nIn, nIn, x.begin() + size_t(b) * nIn);
            if (aux) std::copy_n(aux->begin() + seq.row(t, b) * nAux, nAux, a.begin() + size_t(b) * nAux);
        }
        lstmStep(c, nB, x.data(), aux ? a.data() : nullptr, outputState.data(), cellState.data(), hOut.data(),
                 cOut.data(), y.data(), scratch.data());
        outputState = hOut;
        cellState = cOut;
        for (uint32_t b = 0; b < nB; ++b) {
            std::copy_n(y.begin() + size_t(b) * nOut, nOut,
                        out.begin() + seq.row(t, b) * outStride + outOffset);
        }
    }
}

// ---- LSTM ---------------------------------------------------------------------------------------

CellInputs lstmCellInputs(size_t inputCount, bool sequence) {
    CellInputs c{{1, 2, 3, 4},
                 {5, 6, 7, 8},
                 {9, 10, 11},
                 {12, 13, 14, 15},
                 16,
                 17,
                 18,
                 19,
                 {kNone, kNone, kNone, kNone},
                 {kNone, kNone, kNone, kNone}};
    const int lnBase = sequence ? 24 : 23;
    if (inputCount > size_t(lnBase)) {
        for (int g = 0; g < 4; ++g) c.layerNorm[g] = lnBase + g;
    }
    return c;
}

bool supportsFloatCell(const hal::Subgraph& sg, const hal::Operation& op) {
    const auto t = operandType(sg, op, 0);
    if (!typeIn(t, {OperandType::TENSOR_FLOAT32, OperandType::TENSOR_FLOAT16})) return false;
    for (uint32_t out : op.outputs) {
        if (out >= sg.operands.size() || sg.operands[out].type != t) return false;
    }
    return true;
}

Status expectOutputsOfInputType(OperationContext& ctx) {
    for (size_t o = 0; o < ctx.outputCount(); ++o) {
        if (ctx.outputType(o) != ctx.inputType(0))
            return ctx.error("output " + std::to_string(o) + " type differs from the input type");
    }
    return {};
}

Status prepareLstm(OperationContext& ctx) {
    if (ctx.inputCount() != 23 && ctx.inputCount() != 27) {
        return ctx.error("has " + std::to_string(ctx.inputCount()) + " inputs, expected 23 or 27");
    }
    NPU_TRY(ctx.expectOutputCount(4));
    NPU_TRY(expectOutputsOfInputType(ctx));
    const CellInputs c = lstmCellInputs(ctx.inputCount(), false);
    NPU_TRY(deferIfPresenceUnknown(ctx, optionalInputs(c)));
    NPU_TRY(ctx.expectRank(0, 2));
    const uint32_t nBatch = ctx.inputDims(0)[0];
    const CellShape s = NPU_TRY(validateCell(ctx, c, 0, kNone, nBatch));
    NPU_TRY(cellParams(ctx, 20, 21, 22));
    NPU_TRY(ctx.setOutputShape(0, {nBatch, s.nCell * (s.cifg ? 3 : 4)}));
    NPU_TRY(ctx.setOutputShape(1, {nBatch, s.nOutput}));
    NPU_TRY(ctx.setOutputShape(2, {nBatch, s.nCell}));
    return ctx.setOutputShape(3, {nBatch, s.nOutput});
}

Status executeLstm(OperationContext& ctx) {
    const CellInputs ci = lstmCellInputs(ctx.inputCount(), false);
    const Cell c = loadCell(ctx, ci, describeCell(ctx, ci, 0, 0), *cellParams(ctx, 20, 21, 22));
    const uint32_t nBatch = ctx.inputDims(0)[0];
    const std::vector<float> input = loadAll(ctx, 0), h = loadAll(ctx, ci.outputStateIn),
                             cs = loadAll(ctx, ci.cellStateIn);
    std::vector<float> scratch(size_t(nBatch) * c.s.nCell * 4), hOut(h.size()), cOut(cs.size()),
        out(h.size());
    lstmStep(c, nBatch, input.data(), nullptr, h.data(), cs.data(), hOut.data(), cOut.data(), out.data(),
             scratch.data());
    storeAll(ctx.output(0), scratch.data(), elementCount(ctx.output(0).dims));
    storeAll(ctx.output(1), hOut.data(), hOut.size());
    storeAll(ctx.output(2), cOut.data(), cOut.size());
    storeAll(ctx.output(3), out.data(), out.size());
    return {};
}

// ---- UNIDIRECTIONAL_SEQUENCE_LSTM --------------------------------------------------------------

Status prepareUnidirectionalLstm(OperationContext& ctx) {
    if (ctx.inputCount() != 24 && ctx.inputCount() != 28) {
        return ctx.error("has " + std::to_string(ctx.inputCount()) + " inputs, expected 24 or 28");
    }
    if (ctx.outputCount() != 1 && ctx.outputCount() != 3) {
        return ctx.error("has " + std::to_string(ctx.outputCount()) + " outputs, expected 1 or 3");
    }
    NPU_TRY(expectOutputsOfInputType(ctx));
    const CellInputs c = lstmCellInputs(ctx.inputCount(), true);
    NPU_TRY(deferIfPresenceUnknown(ctx, optionalInputs(c)));
    NPU_TRY(ctx.expectRank(0, 3));
    NPU_TRY(ctx.expectType(23, OperandType::BOOL));
    const bool timeMajor = NPU_TRY(boolInput(ctx, 23));
    const auto& in = ctx.inputDims(0);
    const uint32_t nBatch = timeMajor ? in[1] : in[0];
    const CellShape s = NPU_TRY(validateCell(ctx, c, 0, kNone, nBatch));
    NPU_TRY(cellParams(ctx, 20, 21, 22));
    NPU_TRY(ctx.setOutputShape(0, {in[0], in[1], s.nOutput}));
    if (ctx.outputCount() == 3) {
        NPU_TRY(ctx.setOutputShape(1, {nBatch, s.nOutput}));
        NPU_TRY(ctx.setOutputShape(2, {nBatch, s.nCell}));
    }
    return {};
}

Status executeUnidirectionalLstm(OperationContext& ctx) {
    const CellInputs ci = lstmCellInputs(ctx.inputCount(), true);
    const Cell c = loadCell(ctx, ci, describeCell(ctx, ci, 0, 0), *cellParams(ctx, 20, 21, 22));
    const bool timeMajor = ctx.scalar<uint8_t>(23) != 0;
    const auto& in = ctx.inputDims(0);
    const Sequence seq{timeMajor ? in[0] : in[1], timeMajor ? in[1] : in[0], timeMajor};
    std::vector<float> h = loadAll(ctx, ci.outputStateIn), cs = loadAll(ctx, ci.cellStateIn);
    std::vector<float> out(elementCount(ctx.output(0).dims));
    lstmSequence(c, seq, true, loadAll(ctx, 0), nullptr, h, cs, out, c.s.nOutput, 0);
    storeAll(ctx.output(0), out.data(), out.size());
    if (ctx.outputCount() == 3) {
        storeAll(ctx.output(1), h.data(), h.size());
        storeAll(ctx.output(2), cs.data(), cs.size());
    }
    return {};
}

// ---- BIDIRECTIONAL_SEQUENCE_LSTM ---------------------------------------------------------------

constexpr size_t kBiAuxInput = 39, kBiActivation = 48, kBiCellClip = 49, kBiProjClip = 50, kBiMerge = 51,
                 kBiTimeMajor = 52;

CellInputs biCellInputs(bool forward) {
    if (forward) {
        return CellInputs{{1, 2, 3, 4}, {5, 6, 7, 8}, {9, 10, 11}, {12, 13, 14, 15}, 16,
                          17,           35,           36,          {40, 41, 42, 43}, {53, 54, 55, 56}};
    }
    return CellInputs{{18, 19, 20, 21}, {22, 23, 24, 25}, {26, 27, 28}, {29, 30, 31, 32}, 33, 34, 37, 38,
                      {44, 45, 46, 47}, {57, 58, 59, 60}};
}

// How the auxiliary input is used: not at all, as the backward cell's input (parallel linking),
// or through auxiliary weights by both cells (cross linking).
enum class Linking { kNone, kParallel, kCross };

Status prepareBidirectionalLstm(OperationContext& ctx) {
    NPU_TRY(ctx.expectInputCount(61, 61));
    NPU_TRY(expectOutputsOfInputType(ctx));
    const CellInputs fw = biCellInputs(true), bw = biCellInputs(false);
    std::vector<int> optional = optionalInputs(fw);
    for (int i : optionalInputs(bw)) optional.push_back(i);
    optional.push_back(int(kBiAuxInput));
    NPU_TRY(deferIfPresenceUnknown(ctx, optional));
    NPU_TRY(ctx.expectRank(0, 3));
    const bool merge = NPU_TRY(boolInput(ctx, kBiMerge));
    const bool timeMajor = NPU_TRY(boolInput(ctx, kBiTimeMajor));
    const size_t expectedOutputs = merge ? 1 : 2;
    if (ctx.outputCount() != expectedOutputs && ctx.outputCount() != expectedOutputs + 4) {
        return ctx.error("has " + std::to_string(ctx.outputCount()) + " outputs, expected " +
                         std::to_string(expectedOutputs) + " or " + std::to_string(expectedOutputs + 4) +
                         (merge ? " (merged outputs)" : ""));
    }
    const auto& in = ctx.inputDims(0);
    const uint32_t nBatch = timeMajor ? in[1] : in[0];
    const bool hasAux = present(ctx, int(kBiAuxInput));
    const bool fwAuxWeights = present(ctx, fw.auxToGate[kForgetGate]),
               bwAuxWeights = present(ctx, bw.auxToGate[kForgetGate]);
    if (fwAuxWeights != bwAuxWeights)
        return ctx.error("forward and backward auxiliary weights must be both present or both omitted");
    if (hasAux) {
        NPU_TRY(ctx.expectSameType(kBiAuxInput, 0));
        NPU_TRY(ctx.expectRank(kBiAuxInput, 3));
        const auto& aux = ctx.inputDims(kBiAuxInput);
        if (aux[0] != in[0] || aux[1] != in[1]) {
            return ctx.error("input 39 (aux_input) has shape " + dimsToString(aux) +
                             ", its first two dimensions must match input 0 " + dimsToString(in));
        }
    }
    const Linking linking = !hasAux ? Linking::kNone : fwAuxWeights ? Linking::kCross : Linking::kParallel;
    const int auxForCells = linking == Linking::kCross ? int(kBiAuxInput) : kNone;
    const CellShape f = NPU_TRY(validateCell(ctx, fw, 0, auxForCells, nBatch));
    const CellShape b =
        NPU_TRY(validateCell(ctx, bw, linking == Linking::kParallel ? kBiAuxInput : 0, auxForCells, nBatch));
    NPU_TRY(cellParams(ctx, kBiActivation, kBiCellClip, kBiProjClip));
    NPU_TRY(ctx.setOutputShape(0, {in[0], in[1], merge ? f.nOutput + b.nOutput : f.nOutput}));
    if (!merge) NPU_TRY(ctx.setOutputShape(1, {in[0], in[1], b.nOutput}));
    if (ctx.outputCount() > expectedOutputs) {
        const size_t o = expectedOutputs;
        NPU_TRY(ctx.setOutputShape(o, {nBatch, f.nOutput}));
        NPU_TRY(ctx.setOutputShape(o + 1, {nBatch, f.nCell}));
        NPU_TRY(ctx.setOutputShape(o + 2, {nBatch, b.nOutput}));
        NPU_TRY(ctx.setOutputShape(o + 3, {nBatch, b.nCell}));
    }
    return {};
}

Status executeBidirectionalLstm(OperationContext& ctx) {
    const CellInputs fwi = biCellInputs(true), bwi = biCellInputs(false);
    const bool merge = ctx.scalar<uint8_t>(kBiMerge) != 0, timeMajor = ctx.scalar<uint8_t>(kBiTimeMajor) != 0;
    const bool hasAux = present(ctx, int(kBiAuxInput));
    const Linking linking = !hasAux                                    ? Linking::kNone
                            : present(ctx, fwi.auxToGate[kForgetGate]) ? Linking::kCross
                                                                       : Linking::kParallel;
    const CellParams params = *cellParams(ctx, kBiActivation, kBiCellClip, kBiProjClip);
    const Cell fw = loadCell(ctx, fwi, describeCell(ctx, fwi, 0, kBiAuxInput), params);
    const Cell bw = loadCell(
        ctx, bwi, describeCell(ctx, bwi, linking == Linking::kParallel ? kBiAuxInput : 0, kBiAuxInput),
        params);
    const auto& in = ctx.inputDims(0);
    const Sequence seq{timeMajor ? in[0] : in[1], timeMajor ? in[1] : in[0], timeMajor};
    const std::vector<float> input = loadAll(ctx, 0), aux = loadAll(ctx, int(kBiAuxInput));
    const std::vector<float>* crossAux = linking == Linking::kCross ? &aux : nullptr;

    const uint32_t fwOut = fw.s.nOutput, bwOut = bw.s.nOutput;
    const size_t rows = size_t(in[0]) * in[1];
    std::vector<float> fwH = loadAll(ctx, fwi.outputStateIn), fwC = loadAll(ctx, fwi.cellStateIn);
    std::vector<float> bwH = loadAll(ctx, bwi.outputStateIn), bwC = loadAll(ctx, bwi.cellStateIn);
    std::vector<float> out0(rows * (merge ? fwOut + bwOut : fwOut)), out1(merge ? 0 : rows * bwOut);
    lstmSequence(fw, seq, true, input, crossAux, fwH, fwC, out0, merge ? fwOut + bwOut : fwOut, 0);
    lstmSequence(bw, seq, false, linking == Linking::kParallel ? aux : input, crossAux, bwH, bwC,
                 merge ? out0 : out1, merge ? fwOut + bwOut : bwOut, merge ? fwOut : 0);
    storeAll(ctx.output(0), out0.data(), out0.size());
    size_t o = 1;
    if (!merge) storeAll(ctx.output(o++), out1.data(), out1.size());
    if (ctx.outputCount() > o) {
        storeAll(ctx.output(o), fwH.data(), fwH.size());
        storeAll(ctx.output(o + 1), fwC.data(), fwC.size());
        storeAll(ctx.output(o + 2), bwH.data(), bwH.size());
        storeAll(ctx.output(o + 3), bwC.data(), bwC.size());
    }
    return {};
}

}  // namespace

std::vector<OperationRegistration> lstmOperations() {
    return {
        {OperationType::LSTM, supportsFloatCell, prepareLstm, executeLstm},
        {OperationType::UNIDIRECTIONAL_SEQUENCE_LSTM, supportsFloatCell, prepareUnidirectionalLstm,
         executeUnidirectionalLstm},
        {OperationType::BIDIRECTIONAL_SEQUENCE_LSTM, supportsFloatCell, prepareBidirectionalLstm,
         executeBidirectionalLstm},
    };
}

}  // namespace npu::ref::ops

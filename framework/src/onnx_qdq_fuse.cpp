// QDQ fusion on the HAL model an import produced. A QDQ model (ONNX Runtime's quantized form,
// and what `npu quantize` writes) surrounds float operators with DequantizeLinear on their inputs
// and QuantizeLinear on their outputs; mapped one to one, every float operation would run in
// float between a DEQUANTIZE and a QUANTIZE. This pass rewrites such an operation to run on the
// quant8 tensors themselves:
//   DEQUANTIZE(a_q) -> a ; DEQUANTIZE(b_q) -> b ; OP(a, b, constants) -> y ; QUANTIZE(y) -> y_q
// becomes OP(a_q, b_q, quantized constants) -> y_q. Float constant inputs are quantized here:
// convolution filters per output channel (symmetric int8, TENSOR_QUANT8_SYMM_PER_CHANNEL) with
// int32 biases; FULLY_CONNECTED weights per tensor in the activations' type (the HAL has no
// per-channel FULLY_CONNECTED): the model's own integers and scale when the float weights are a
// dequantized per-tensor quant8 tensor (a QDQ Gemm / MatMul: exact), else over their own range;
// other constants per tensor over their own range. A clamp
// (RELU*, MAXIMUM / MINIMUM with a constant) whose output is quantized gives its input the same
// parameters (saturating first, then clamping, gives the same values), so a Clip mapped to
// MAXIMUM + MINIMUM fuses too. A DEQUANTIZE read only by QUANTIZEs of its own parameters is an
// identity and goes. Operations left without readers are removed and the operands renumbered.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <unordered_map>

#include "npu/hal/validation.h"
#include "onnx_builder.h"

namespace npu::framework::onnx_import {
namespace {

using hal::Operand;
using hal::OperandLifeTime;
using hal::OperandType;
using hal::OperationType;

struct QuantOf {
    OperandType type = OperandType::TENSOR_QUANT8_ASYMM;
    float scale = 0;
    int32_t zeroPoint = 0;
    bool operator==(const QuantOf&) const = default;
};

enum class Kind { None, Conv, FullyConnected, Binary, Clamp, Unary, SameParams, Other };

Kind kindOf(OperationType t) {
    switch (t) {
        case OperationType::CONV_2D:
        case OperationType::DEPTHWISE_CONV_2D:
        case OperationType::GROUPED_CONV_2D:
            return Kind::Conv;
        case OperationType::FULLY_CONNECTED:
            return Kind::FullyConnected;
        case OperationType::ADD:
        case OperationType::SUB:
        case OperationType::MUL:
            return Kind::Binary;
        case OperationType::MAXIMUM:
        case OperationType::MINIMUM:
        case OperationType::RELU:
        case OperationType::RELU1:
        case OperationType::RELU6:
            return Kind::Clamp;
        case OperationType::LOGISTIC:
        case OperationType::TANH:
        case OperationType::HARD_SWISH:
        case OperationType::SOFTMAX:
            return Kind::Unary;
        case OperationType::MAX_POOL_2D:
        case OperationType::AVERAGE_POOL_2D:
        case OperationType::RESHAPE:
        case OperationType::SQUEEZE:
        case OperationType::TRANSPOSE:
        case OperationType::STRIDED_SLICE:
        case OperationType::PAD:
            return Kind::SameParams;
        case OperationType::MEAN:
        case OperationType::CONCATENATION:
        case OperationType::RESIZE_BILINEAR:
        case OperationType::RESIZE_NEAREST_NEIGHBOR:
            return Kind::Other;
        default:
            return Kind::None;
    }
}

class Fuser {
public:
    Fuser(hal::Model& model, std::vector<OnnxNodeOrigin>& origins)
        : m_(model), sg_(model.main), origins_(origins) {}

    // False when the rewrite would leave the model inconsistent (the caller keeps the original).
    bool run();
    size_t removed() const { return removed_; }

private:
    bool isConstant(uint32_t o) const { return sg_.operands[o].lifetime == OperandLifeTime::CONSTANT_COPY; }
    bool isFloatTensor(uint32_t o) const { return sg_.operands[o].type == OperandType::TENSOR_FLOAT32; }
    void index();
    std::optional<QuantOf> quantReaders(uint32_t operand) const;
    void assignTargets();
    bool fuse(uint32_t op);
    std::optional<uint32_t> quantInput(uint32_t op, size_t i) const;
    const float* floats(uint32_t o) const;
    uint32_t addConstant(Operand o, const void* data, size_t bytes);
    uint32_t quantizeConstant(uint32_t o, OperandType type);
    std::optional<uint32_t> recoverConstant(uint32_t o, OperandType type);
    bool quantizeConvArgs(hal::Operation& op, std::vector<uint32_t>& inputs, float inScale);
    void redirect(uint32_t from, uint32_t to);
    void removeIdentityPairs();
    void compact();

    hal::Model& m_;
    hal::Subgraph& sg_;
    std::vector<OnnxNodeOrigin>& origins_;
    std::vector<int64_t> writer_;
    std::vector<std::vector<uint32_t>> readers_;
    std::vector<bool> isOutput_;
    std::unordered_map<uint32_t, QuantOf> target_;  // float operand -> the parameters it takes
    std::vector<bool> dead_;
    std::vector<bool> fused_;
    size_t removed_ = 0;
};

void Fuser::index() {
    writer_.assign(sg_.operands.size(), -1);
    readers_.assign(sg_.operands.size(), {});
    isOutput_.assign(sg_.operands.size(), false);
    for (uint32_t i = 0; i < sg_.operations.size(); ++i) {
        if (dead_[i]) continue;
        for (uint32_t o : sg_.operations[i].outputs) writer_[o] = i;
        for (uint32_t in : sg_.operations[i].inputs) readers_[in].push_back(i);
    }
    for (uint32_t o : sg_.outputIndexes) isOutput_[o] = true;
}

// The common parameters of the QUANTIZEs reading `operand`, when it has readers and only those.
std::optional<QuantOf> Fuser::quantReaders(uint32_t operand) const {
    if (isOutput_[operand] || readers_[operand].empty()) return std::nullopt;
    std::optional<QuantOf> q;
    for (uint32_t r : readers_[operand]) {
        if (sg_.operations[r].type != OperationType::QUANTIZE) return std::nullopt;
        const Operand& out = sg_.operands[sg_.operations[r].outputs[0]];
        const QuantOf mine{out.type, out.scale, out.zeroPoint};
        if (q && !(*q == mine)) return std::nullopt;
        q = mine;
    }
    return q;
}

// Backwards: outputs read by QUANTIZE take its parameters; a clamp's data input takes its
// output's when the clamp is its only reader.
void Fuser::assignTargets() {
    for (size_t k = sg_.operations.size(); k-- > 0;) {
        const auto& op = sg_.operations[k];
        const Kind kind = kindOf(op.type);
        if (kind == Kind::None || op.outputs.size() != 1 || !isFloatTensor(op.outputs[0])) continue;
        const uint32_t out = op.outputs[0];
        if (target_.count(out) == 0) {
            if (auto q = quantReaders(out)) target_[out] = *q;
        }
        if (kind != Kind::Clamp || target_.count(out) == 0) continue;
        for (size_t i = 0;
             i < (op.inputs.size() > 1 && kindOf(op.type) == Kind::Clamp &&
                          (op.type == OperationType::MAXIMUM || op.type == OperationType::MINIMUM)
                      ? 2
                      : 1);
             ++i) {
            const uint32_t in = op.inputs[i];
            if (!isFloatTensor(in) || isConstant(in) || writer_[in] < 0 || readers_[in].size() != 1 ||
                isOutput_[in])
                continue;
            if (sg_.operations[size_t(writer_[in])].type == OperationType::DEQUANTIZE) continue;
            target_[in] = target_[out];
        }
    }
}

// The quant8 operand standing for float input i of op: a DEQUANTIZE's input, or the output of an
// operation already fused.
std::optional<uint32_t> Fuser::quantInput(uint32_t op, size_t i) const {
    const uint32_t in = sg_.operations[op].inputs[i];
    if (hal::isQuantizedType(sg_.operands[in].type)) return in;  // rewritten by an earlier fusion
    if (writer_[in] < 0) return std::nullopt;
    const auto& w = sg_.operations[size_t(writer_[in])];
    if (w.type == OperationType::DEQUANTIZE) return w.inputs[0];
    return std::nullopt;
}

const float* Fuser::floats(uint32_t o) const {
    const auto& loc = sg_.operands[o].location;
    return reinterpret_cast<const float*>(m_.operandValues.data() + loc.offset);
}

uint32_t Fuser::addConstant(Operand o, const void* data, size_t bytes) {
    return appendConstant(m_, std::move(o), data, bytes);
}

size_t elementCount(const Operand& o) {
    size_t n = 1;
    for (uint32_t d : o.dimensions) n *= d;
    return n;
}

// A float constant per tensor in `type` over its own range (0 included).
uint32_t Fuser::quantizeConstant(uint32_t o, OperandType type) {
    const Operand src = sg_.operands[o];
    const size_t n = elementCount(src);
    const float* v = floats(o);
    float lo = 0, hi = 0;
    for (size_t k = 0; k < n; ++k) lo = std::min(lo, v[k]), hi = std::max(hi, v[k]);
    const bool isSigned = type == OperandType::TENSOR_QUANT8_ASYMM_SIGNED;
    const int32_t qmin = isSigned ? -128 : 0, qmax = isSigned ? 127 : 255;
    const float scale = hi > lo ? (hi - lo) / 255.0f : 1.0f / 255.0f;
    const int32_t zp = std::clamp(int32_t(std::lround(qmin - lo / scale)), qmin, qmax);
    std::vector<uint8_t> bytes(n);
    for (size_t k = 0; k < n; ++k)
        bytes[k] = uint8_t(std::clamp(int32_t(std::lround(v[k] / scale)) + zp, qmin, qmax) & 0xff);
    Operand q = src;
    q.type = type;
    q.scale = scale;
    q.zeroPoint = zp;
    return addConstant(q, bytes.data(), bytes.size());
}

// A float constant that is a dequantized per-tensor quant8 tensor (a QDQ model's weights: every
// value an integer multiple of one scale, spanning at most 255 steps) back in `type` with that
// scale, so FULLY_CONNECTED computes with the model's own integers; nullopt when it is not one.
std::optional<uint32_t> Fuser::recoverConstant(uint32_t o, OperandType type) {
    const Operand src = sg_.operands[o];
    const size_t n = elementCount(src);
    const float* v = floats(o);
    // The step: the greatest common divisor of the values (Euclid's, to a tolerance far below it).
    double maxAbs = 0, lowest = 0, highest = 0;
    for (size_t k = 0; k < n; ++k) {
        maxAbs = std::max(maxAbs, std::fabs(double(v[k])));
        lowest = std::min(lowest, double(v[k]));
        highest = std::max(highest, double(v[k]));
    }
    if (!(maxAbs > 0) || !std::isfinite(maxAbs)) return std::nullopt;
    const double tol = maxAbs * 1e-5;
    double step = 0;
    for (size_t k = 0; k < n && (step == 0 || step * 256 >= maxAbs); ++k) {
        double a = step, b = std::fabs(double(v[k]));
        if (b <= tol) continue;
        if (a == 0) std::swap(a, b);
        while (b > tol) {
            double r = std::fmod(a, b);
            if (b - r <= tol) r = 0;
            a = b;
            b = r;
        }
        step = a;
    }
    if (!(step > 0) || step * 256 < maxAbs) return std::nullopt;
    const long lo = std::lround(lowest / step), hi = std::lround(highest / step);
    const bool isSigned = type == OperandType::TENSOR_QUANT8_ASYMM_SIGNED;
    const long qmin = isSigned ? -128 : 0, qmax = isSigned ? 127 : 255;
    if (hi - lo > qmax - qmin) return std::nullopt;
    const long zp = std::clamp(-lo + qmin, qmin, qmax);
    if (hi + zp > qmax) return std::nullopt;
    std::vector<uint8_t> bytes(n);
    for (size_t k = 0; k < n; ++k) {
        const double r = v[k] / step;
        const long i = std::lround(r);
        if (std::fabs(r - double(i)) > 1e-3) return std::nullopt;
        bytes[k] = uint8_t((i + zp) & 0xff);
    }
    // The scale as the largest value gives it (Euclid's step carries the tolerance's error).
    const long top = std::lround(maxAbs / step);
    Operand q = src;
    q.type = type;
    q.scale = float(maxAbs / double(top));
    q.zeroPoint = int32_t(zp);
    return addConstant(q, bytes.data(), bytes.size());
}

// Filter (input 1) and bias (input 2) of a convolution or FULLY_CONNECTED.
bool Fuser::quantizeConvArgs(hal::Operation& op, std::vector<uint32_t>& inputs, float inScale) {
    const uint32_t wIndex = op.inputs[1], bIndex = op.inputs[2];
    if (!isConstant(wIndex) || !isFloatTensor(wIndex) || !isConstant(bIndex) || !isFloatTensor(bIndex))
        return false;
    const Operand& w = sg_.operands[wIndex];
    const float* wv = floats(wIndex);
    const size_t n = elementCount(w);
    const bool fc = op.type == OperationType::FULLY_CONNECTED;
    const uint32_t channelDim = op.type == OperationType::DEPTHWISE_CONV_2D ? 3 : 0;
    if (w.dimensions.size() <= channelDim) return false;
    const size_t channels = w.dimensions[channelDim];
    const size_t inner = channelDim == 3 ? 1 : n / channels;
    std::vector<float> scales;
    std::vector<uint8_t> bytes(n);
    Operand q = w;
    if (fc) {
        const OperandType type = sg_.operands[inputs[0]].type;
        const auto exact = recoverConstant(wIndex, type);
        const uint32_t fcW = exact ? *exact : quantizeConstant(wIndex, type);
        scales.assign(channels, sg_.operands[fcW].scale);
        inputs[1] = fcW;
    } else {
        std::vector<float> maxAbs(channels, 0.0f);
        for (size_t k = 0; k < n; ++k) {
            const size_t c = channelDim == 3 ? k % channels : k / inner;
            maxAbs[c] = std::max(maxAbs[c], std::fabs(wv[k]));
        }
        for (float a : maxAbs) scales.push_back(a > 0 ? a / 127.0f : 1.0f);
        for (size_t k = 0; k < n; ++k) {
            const size_t c = channelDim == 3 ? k % channels : k / inner;
            bytes[k] = uint8_t(std::clamp(int32_t(std::lround(wv[k] / scales[c])), -127, 127) & 0xff);
        }
        q.type = OperandType::TENSOR_QUANT8_SYMM_PER_CHANNEL;
        q.scale = 0;
        q.zeroPoint = 0;
        q.channelQuant = hal::SymmPerChannelQuantParams{scales, channelDim};
        inputs[1] = addConstant(q, bytes.data(), bytes.size());
    }
    const Operand& b = sg_.operands[bIndex];
    if (elementCount(b) != channels) return false;
    const float* bv = floats(bIndex);
    std::vector<int32_t> bias(channels);
    for (size_t c = 0; c < channels; ++c) {
        const double s = double(inScale) * scales[c];
        bias[c] = int32_t(std::clamp(std::llround(bv[c] / s), -(1LL << 31), (1LL << 31) - 1));
    }
    Operand qb = b;
    qb.type = OperandType::TENSOR_INT32;
    qb.scale = fc ? inScale * scales[0] : 0.0f;
    qb.zeroPoint = 0;
    inputs[2] = addConstant(qb, bias.data(), bias.size() * 4);
    return true;
}

// Rewrites op onto quant8 tensors when every float data input has a quant8 counterpart (or is a
// constant) and its output has a target; false leaves it untouched.
bool Fuser::fuse(uint32_t opIndex) {
    hal::Operation& op = sg_.operations[opIndex];
    const Kind kind = kindOf(op.type);
    if (kind == Kind::None || op.outputs.size() != 1) return false;
    const uint32_t out = op.outputs[0];
    auto t = target_.find(out);
    if (t == target_.end()) return false;
    const QuantOf q = t->second;
    std::vector<uint32_t> inputs = op.inputs;
    const size_t dataInputs =
        kind == Kind::Conv || kind == Kind::FullyConnected ? 1
        : op.type == OperationType::CONCATENATION          ? op.inputs.size() - 1
        : kind == Kind::Binary || op.type == OperationType::MAXIMUM || op.type == OperationType::MINIMUM ? 2
                                                                                                         : 1;
    std::optional<OperandType> type;
    for (size_t i = 0; i < dataInputs; ++i) {
        if (isConstant(op.inputs[i])) continue;
        auto qi = quantInput(opIndex, i);
        if (!qi) return false;
        if (type && *type != sg_.operands[*qi].type) return false;
        type = sg_.operands[*qi].type;
        inputs[i] = *qi;
    }
    if (!type || *type != q.type) return false;
    for (size_t i = 0; i < dataInputs; ++i) {
        if (!isConstant(op.inputs[i])) continue;
        if (!isFloatTensor(op.inputs[i])) return false;
        inputs[i] = quantizeConstant(op.inputs[i], *type);
    }
    const Operand& in0 = sg_.operands[inputs[0]];
    if (kind == Kind::SameParams && (in0.scale != q.scale || in0.zeroPoint != q.zeroPoint)) return false;
    if ((kind == Kind::Conv || kind == Kind::FullyConnected) && !quantizeConvArgs(op, inputs, in0.scale))
        return false;
    op.inputs = inputs;
    Operand& o = sg_.operands[out];
    o.type = q.type;
    o.scale = q.scale;
    o.zeroPoint = q.zeroPoint;
    fused_[opIndex] = true;
    // The QUANTIZEs reading it go; their outputs are this operand now.
    for (uint32_t r : std::vector<uint32_t>(readers_[out])) {
        if (sg_.operations[r].type != OperationType::QUANTIZE) continue;
        dead_[r] = true;
        ++removed_;
        redirect(sg_.operations[r].outputs[0], out);
    }
    return true;
}

void Fuser::redirect(uint32_t from, uint32_t to) {
    for (size_t k = 0; k < sg_.operations.size(); ++k) {
        if (dead_[k]) continue;
        for (uint32_t& in : sg_.operations[k].inputs)
            if (in == from) in = to;
    }
    for (uint32_t& o : sg_.outputIndexes) {
        if (o != from) continue;
        o = to;
        sg_.operands[to].lifetime = OperandLifeTime::SUBGRAPH_OUTPUT;
    }
}

// DEQUANTIZE read only by QUANTIZEs of the same parameters: both go.
void Fuser::removeIdentityPairs() {
    for (uint32_t k = 0; k < sg_.operations.size(); ++k) {
        const auto& op = sg_.operations[k];
        if (dead_[k] || op.type != OperationType::DEQUANTIZE) continue;
        const Operand& src = sg_.operands[op.inputs[0]];
        auto q = quantReaders(op.outputs[0]);
        if (!q || !(*q == QuantOf{src.type, src.scale, src.zeroPoint})) continue;
        for (uint32_t r : std::vector<uint32_t>(readers_[op.outputs[0]])) {
            dead_[r] = true;
            ++removed_;
            redirect(sg_.operations[r].outputs[0], op.inputs[0]);
        }
        index();
    }
}

// Drops dead operations (and DEQUANTIZEs nothing reads any more) and unreferenced operands.
void Fuser::compact() {
    index();
    for (size_t k = sg_.operations.size(); k-- > 0;) {
        const auto& op = sg_.operations[k];
        if (dead_[k] || op.type != OperationType::DEQUANTIZE) continue;
        if (readers_[op.outputs[0]].empty() && !isOutput_[op.outputs[0]]) {
            dead_[k] = true;
            ++removed_;
        }
    }
    std::vector<bool> used(sg_.operands.size(), false);
    for (size_t k = 0; k < sg_.operations.size(); ++k) {
        if (dead_[k]) continue;
        for (uint32_t o : sg_.operations[k].inputs) used[o] = true;
        for (uint32_t o : sg_.operations[k].outputs) used[o] = true;
    }
    for (uint32_t o : sg_.inputIndexes) used[o] = true;
    for (uint32_t o : sg_.outputIndexes) used[o] = true;
    std::vector<uint32_t> renumber(sg_.operands.size(), 0);
    std::vector<Operand> operands;
    for (size_t o = 0; o < sg_.operands.size(); ++o) {
        if (!used[o]) continue;
        renumber[o] = uint32_t(operands.size());
        operands.push_back(std::move(sg_.operands[o]));
    }
    std::vector<hal::Operation> operations;
    std::vector<OnnxNodeOrigin> origins;
    for (size_t k = 0; k < sg_.operations.size(); ++k) {
        if (dead_[k]) continue;
        hal::Operation op = std::move(sg_.operations[k]);
        for (uint32_t& o : op.inputs) o = renumber[o];
        for (uint32_t& o : op.outputs) o = renumber[o];
        operations.push_back(std::move(op));
        if (k < origins_.size()) origins.push_back(std::move(origins_[k]));
    }
    for (uint32_t& o : sg_.inputIndexes) o = renumber[o];
    for (uint32_t& o : sg_.outputIndexes) o = renumber[o];
    sg_.operands = std::move(operands);
    sg_.operations = std::move(operations);
    origins_ = std::move(origins);
}

bool Fuser::run() {
    const size_t ops = sg_.operations.size();
    bool any = false;
    for (const auto& op : sg_.operations) any = any || op.type == OperationType::DEQUANTIZE;
    if (!any || !m_.referenced.empty()) return true;
    dead_.assign(ops, false);
    fused_.assign(ops, false);
    std::vector<OperandType> before;
    for (const auto& o : sg_.operands) before.push_back(o.type);
    std::vector<std::vector<uint32_t>> inputsBefore;
    for (const auto& op : sg_.operations) inputsBefore.push_back(op.inputs);
    index();
    assignTargets();
    for (uint32_t k = 0; k < ops; ++k) {
        if (fuse(k)) index();
    }
    // An operation not rewritten must not read an operand a fusion turned quant8 (a clamp that
    // took its input's parameters and then did not fuse); inputs redirected from a removed
    // QUANTIZE's output were quant8 already.
    for (uint32_t k = 0; k < ops; ++k) {
        if (dead_[k] || fused_[k]) continue;
        for (uint32_t in : inputsBefore[k]) {
            if (before[in] != sg_.operands[in].type) return false;
        }
    }
    removeIdentityPairs();
    compact();
    return true;
}

}  // namespace

Result<size_t> fuseQuantDequant(hal::Model& model, std::vector<OnnxNodeOrigin>& origins,
                                const std::string& where) {
    hal::Model fused = model;
    std::vector<OnnxNodeOrigin> fusedOrigins = origins;
    Fuser fuser(fused, fusedOrigins);
    if (!fuser.run() || fuser.removed() == 0) return size_t{0};
    if (auto st = hal::validateModel(fused); !st) {
        return fail(kOnnxUnsupported,
                    where + ": QDQ fusion produced an invalid model: " + st.error().message);
    }
    model = std::move(fused);
    origins = std::move(fusedOrigins);
    return fuser.removed();
}

}  // namespace npu::framework::onnx_import

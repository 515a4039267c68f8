// NCHW -> NHWC on the imported HAL model. ONNX is NCHW; the NPU reads NHWC convolution inputs as
// whole rows (one 2-D DMA copy) but transposes NCHW ones element by element (firmware
// compiler.cpp, convInputBox), so a quantized model (the only kind the NPU takes) is rewritten:
// every 4-D tensor written by a layout-aware operation becomes NHWC, and TRANSPOSEs are
// inserted only where an NHWC tensor meets an operation that needs NCHW (a RESHAPE, a model
// output) or an NCHW tensor (a model input) meets a layout-aware operation. Layout-aware:
//   - operations with a layout flag (convolutions, pools, resizes): the flag becomes NHWC;
//   - elementwise operations (their 4-D operands permuted; constants permuted, lower-rank
//     constants broadcast as rank 4 first);
//   - MEAN / REDUCE_* and CONCATENATION: their axes renumbered;
// the last two kinds only when one of their runtime inputs is NHWC already (layout follows data).
// So a Conv / pool / elementwise chain has no transposes inside it. The result must pass
// hal::validateModel, else the model stays NCHW (as it does when it has no quant8 convolution).
#include <algorithm>
#include <cstring>
#include <map>

#include "npu/hal/validation.h"
#include "onnx_builder.h"

namespace npu::framework::onnx_import {
namespace {

using hal::Operand;
using hal::OperandLifeTime;
using hal::OperandType;
using hal::OperationType;

constexpr uint32_t kToNhwc[4] = {0, 2, 3, 1};    // NHWC dim k = NCHW dim kToNhwc[k]
constexpr uint32_t kToNchw[4] = {0, 3, 1, 2};    // NCHW dim k = NHWC dim kToNchw[k]
constexpr uint32_t kNhwcAxis[4] = {0, 3, 1, 2};  // NCHW axis a is NHWC axis kNhwcAxis[a]

enum class Kind { None, Flag, Elementwise, Reduce, Concat };

Kind kindOf(OperationType t) {
    switch (t) {
        case OperationType::CONV_2D:
        case OperationType::DEPTHWISE_CONV_2D:
        case OperationType::GROUPED_CONV_2D:
        case OperationType::MAX_POOL_2D:
        case OperationType::AVERAGE_POOL_2D:
        case OperationType::RESIZE_BILINEAR:
        case OperationType::RESIZE_NEAREST_NEIGHBOR:
            return Kind::Flag;
        case OperationType::ADD:
        case OperationType::SUB:
        case OperationType::MUL:
        case OperationType::DIV:
        case OperationType::MAXIMUM:
        case OperationType::MINIMUM:
        case OperationType::PRELU:
        case OperationType::RELU:
        case OperationType::RELU1:
        case OperationType::RELU6:
        case OperationType::LOGISTIC:
        case OperationType::TANH:
        case OperationType::HARD_SWISH:
        case OperationType::QUANTIZE:
        case OperationType::DEQUANTIZE:
            return Kind::Elementwise;
        case OperationType::MEAN:
        case OperationType::REDUCE_MAX:
        case OperationType::REDUCE_MIN:
        case OperationType::REDUCE_SUM:
            return Kind::Reduce;
        case OperationType::CONCATENATION:
            return Kind::Concat;
        default:
            return Kind::None;
    }
}

bool isQuantConv(const hal::Subgraph& sg, const hal::Operation& op) {
    return (op.type == OperationType::CONV_2D || op.type == OperationType::DEPTHWISE_CONV_2D ||
            op.type == OperationType::GROUPED_CONV_2D) &&
           hal::isQuantizedType(sg.operands[op.inputs[0]].type);
}

class Layout {
public:
    Layout(hal::Model& model, std::vector<OnnxNodeOrigin>& origins)
        : m_(model), sg_(model.main), origins_(origins) {}
    bool run();
    size_t transposes() const { return transposes_; }

private:
    bool isTensor4(uint32_t o) const {
        const auto& op = sg_.operands[o];
        return op.dimensions.size() == 4 && !hal::isScalarType(op.type) && !isConstant(o);
    }
    bool isConstant(uint32_t o) const { return sg_.operands[o].lifetime == OperandLifeTime::CONSTANT_COPY; }
    bool convertible(const hal::Operation& op) const;
    bool followsNhwc(const hal::Operation& op) const;
    std::vector<size_t> dataInputs(const hal::Operation& op) const;
    uint32_t addConstant(Operand o, const void* data, size_t bytes);
    uint32_t scalarOf(OperandType type, int32_t v);
    std::optional<uint32_t> nhwcConstant(uint32_t o, size_t outRank);
    uint32_t transposeOf(uint32_t o, bool toNhwc, std::vector<hal::Operation>& ops,
                         std::vector<OnnxNodeOrigin>& origins, const OnnxNodeOrigin& at);
    bool rewrite(hal::Operation& op);

    hal::Model& m_;
    hal::Subgraph& sg_;
    std::vector<OnnxNodeOrigin>& origins_;
    std::vector<bool> nhwc_;                                    // per operand: holds NHWC data
    std::map<std::pair<uint32_t, bool>, uint32_t> transposed_;  // (operand, to NHWC) -> its copy
    size_t transposes_ = 0;
};

// The inputs holding tensor data (the rest are parameters).
std::vector<size_t> Layout::dataInputs(const hal::Operation& op) const {
    switch (kindOf(op.type)) {
        case Kind::Flag:
        case Kind::Reduce:
            return {0};
        case Kind::Concat: {
            std::vector<size_t> v(op.inputs.size() - 1);
            for (size_t i = 0; i < v.size(); ++i) v[i] = i;
            return v;
        }
        case Kind::Elementwise: {
            std::vector<size_t> v;
            for (size_t i = 0; i < op.inputs.size(); ++i)
                if (!hal::isScalarType(sg_.operands[op.inputs[i]].type)) v.push_back(i);
            return v;
        }
        default:
            return {};
    }
}

// An operation goes NHWC when its output is a 4-D tensor and its runtime data inputs are 4-D too
// (a reduction without keep_dims only when the axes left keep their order).
bool Layout::convertible(const hal::Operation& op) const {
    const Kind kind = kindOf(op.type);
    if (kind == Kind::None || op.outputs.size() != 1) return false;
    for (size_t i : dataInputs(op)) {
        if (!isConstant(op.inputs[i]) && !isTensor4(op.inputs[i])) return false;
    }
    if (kind == Kind::Flag) {
        bool flag = false;
        for (uint32_t in : op.inputs) flag = flag || sg_.operands[in].type == OperandType::BOOL;
        return flag && isTensor4(op.outputs[0]);
    }
    if (kind != Kind::Reduce) return isTensor4(op.outputs[0]);
    if (op.inputs.size() < 3 || !isConstant(op.inputs[1]) || !isConstant(op.inputs[2])) return false;
    if (isTensor4(op.outputs[0])) return true;
    const auto& axesOp = sg_.operands[op.inputs[1]];
    std::vector<bool> reduced(4, false);
    const auto* axes = reinterpret_cast<const int32_t*>(m_.operandValues.data() + axesOp.location.offset);
    for (size_t k = 0; k < axesOp.location.length / 4; ++k) reduced[size_t((axes[k] + 4) % 4)] = true;
    int last = -1;
    for (uint32_t a = 0; a < 4; ++a) {  // the NCHW axes left must be in the same order in NHWC
        if (reduced[a]) continue;
        if (int(kNhwcAxis[a]) < last) return false;
        last = int(kNhwcAxis[a]);
    }
    return true;
}

// Operations with a layout flag go NHWC; the others follow their data: NHWC when a runtime input
// already is (so a model input's QUANTIZE stays NCHW and the TRANSPOSE runs after it, in quant8).
bool Layout::followsNhwc(const hal::Operation& op) const {
    if (kindOf(op.type) == Kind::Flag) return true;
    for (size_t i : dataInputs(op)) {
        const uint32_t in = op.inputs[i];
        if (in < nhwc_.size() && !isConstant(in) && nhwc_[in]) return true;
    }
    return false;
}

uint32_t Layout::addConstant(Operand o, const void* data, size_t bytes) {
    nhwc_.push_back(false);
    return appendConstant(m_, std::move(o), data, bytes);
}

uint32_t Layout::scalarOf(OperandType type, int32_t v) {
    Operand o;
    o.type = type;
    return addConstant(o, &v, type == OperandType::BOOL ? 1 : 4);
}

// A constant operand of an elementwise operation on rank-`outRank` tensors, as NHWC: broadcast to
// rank 4 (leading 1s) and permuted. nullopt when it is not a plain tensor constant.
std::optional<uint32_t> Layout::nhwcConstant(uint32_t o, size_t outRank) {
    const Operand src = sg_.operands[o];
    if (hal::isScalarType(src.type) || src.dimensions.size() > 4 || outRank != 4 || src.channelQuant)
        return o;
    std::vector<uint32_t> d(4 - src.dimensions.size(), 1);
    d.insert(d.end(), src.dimensions.begin(), src.dimensions.end());
    const size_t size = hal::elementSize(src.type);
    const uint8_t* from = m_.operandValues.data() + src.location.offset;
    std::vector<uint8_t> to(src.location.length);
    const uint32_t nd[4] = {d[0], d[2], d[3], d[1]};
    if (to.size() != size_t(d[0]) * d[1] * d[2] * d[3] * size) return std::nullopt;
    size_t k = 0;
    for (uint32_t n = 0; n < nd[0]; ++n)
        for (uint32_t h = 0; h < nd[1]; ++h)
            for (uint32_t w = 0; w < nd[2]; ++w)
                for (uint32_t c = 0; c < nd[3]; ++c, k += size) {
                    const size_t at = ((size_t(n) * d[1] + c) * d[2] + h) * d[3] + w;
                    std::memcpy(to.data() + k, from + at * size, size);
                }
    Operand q = src;
    q.dimensions = {nd[0], nd[1], nd[2], nd[3]};
    return addConstant(q, to.data(), to.size());
}

// A TRANSPOSE of operand o into the other layout (one per operand and direction).
uint32_t Layout::transposeOf(uint32_t o, bool toNhwc, std::vector<hal::Operation>& ops,
                             std::vector<OnnxNodeOrigin>& origins, const OnnxNodeOrigin& at) {
    auto it = transposed_.find({o, toNhwc});
    if (it != transposed_.end()) return it->second;
    const uint32_t* perm = toNhwc ? kToNhwc : kToNchw;
    Operand t = sg_.operands[o];
    t.lifetime = OperandLifeTime::TEMPORARY_VARIABLE;
    t.location = {};
    for (size_t k = 0; k < 4; ++k) t.dimensions[k] = sg_.operands[o].dimensions[perm[k]];
    const int32_t p[4] = {int32_t(perm[0]), int32_t(perm[1]), int32_t(perm[2]), int32_t(perm[3])};
    Operand permOp;
    permOp.type = OperandType::TENSOR_INT32;
    permOp.dimensions = {4};
    const uint32_t permIndex = addConstant(permOp, p, sizeof p);
    sg_.operands.push_back(t);
    nhwc_.push_back(toNhwc);
    const uint32_t out = uint32_t(sg_.operands.size() - 1);
    ops.push_back({OperationType::TRANSPOSE, {o, permIndex}, {out}});
    origins.push_back({at.nodeIndex, at.nodeName, toNhwc ? "layout NCHW->NHWC" : "layout NHWC->NCHW"});
    ++transposes_;
    transposed_[{o, toNhwc}] = out;
    return out;
}

// The operation's parameters for NHWC: layout flag, axes, constants; its output's dimensions.
bool Layout::rewrite(hal::Operation& op) {
    const Kind kind = kindOf(op.type);
    for (size_t i : dataInputs(op)) {
        if (!isConstant(op.inputs[i])) continue;
        if (kind != Kind::Elementwise) return false;
        auto c = nhwcConstant(op.inputs[i], 4);
        if (!c) return false;
        op.inputs[i] = *c;
    }
    if (kind == Kind::Flag) {
        for (uint32_t& in : op.inputs) {
            if (sg_.operands[in].type != OperandType::BOOL) continue;
            in = scalarOf(OperandType::BOOL, 0);
            break;
        }
    } else if (kind == Kind::Concat) {
        const uint32_t axisOp = op.inputs.back();
        int32_t axis = 0;
        std::memcpy(&axis, m_.operandValues.data() + sg_.operands[axisOp].location.offset, 4);
        op.inputs.back() = scalarOf(OperandType::INT32, int32_t(kNhwcAxis[size_t((axis + 4) % 4)]));
    } else if (kind == Kind::Reduce) {
        const auto& axesOp = sg_.operands[op.inputs[1]];
        std::vector<int32_t> axes(axesOp.location.length / 4);
        std::memcpy(axes.data(), m_.operandValues.data() + axesOp.location.offset, axes.size() * 4);
        for (int32_t& a : axes) a = int32_t(kNhwcAxis[size_t((a + 4) % 4)]);
        Operand t = axesOp;
        op.inputs[1] = addConstant(t, axes.data(), axes.size() * 4);
    }
    Operand& out = sg_.operands[op.outputs[0]];
    if (out.dimensions.size() == 4) {
        const auto d = out.dimensions;
        for (size_t k = 0; k < 4; ++k) out.dimensions[k] = d[kToNhwc[k]];
        nhwc_[op.outputs[0]] = true;
    }
    return true;
}

bool Layout::run() {
    bool any = false;
    for (const auto& op : sg_.operations) any = any || isQuantConv(sg_, op);
    if (!any || !m_.referenced.empty()) return false;
    nhwc_.assign(sg_.operands.size(), false);
    const auto original = sg_.operations;
    const auto originalOrigins = origins_;
    std::vector<hal::Operation> ops;
    std::vector<OnnxNodeOrigin> origins;
    for (size_t k = 0; k < original.size(); ++k) {
        hal::Operation op = original[k];
        const OnnxNodeOrigin at = k < originalOrigins.size() ? originalOrigins[k] : OnnxNodeOrigin{};
        const bool convert = convertible(op) && followsNhwc(op);
        const auto data = dataInputs(op);
        for (size_t i = 0; i < op.inputs.size(); ++i) {
            const uint32_t in = op.inputs[i];
            if (in >= nhwc_.size() || isConstant(in) || !isTensor4(in)) continue;
            const bool isData = std::find(data.begin(), data.end(), i) != data.end();
            const bool want = convert && isData;
            if (nhwc_[in] != want) op.inputs[i] = transposeOf(in, want, ops, origins, at);
        }
        if (convert && !rewrite(op)) return false;
        ops.push_back(std::move(op));
        origins.push_back(at);
    }
    // Model outputs leave in NCHW, as ONNX wrote them.
    for (uint32_t& out : sg_.outputIndexes) {
        if (!nhwc_[out]) continue;
        sg_.operands[out].lifetime = OperandLifeTime::TEMPORARY_VARIABLE;
        out = transposeOf(out, false, ops, origins, {uint32_t(original.size()), "output", ""});
        sg_.operands[out].lifetime = OperandLifeTime::SUBGRAPH_OUTPUT;
    }
    sg_.operations = std::move(ops);
    origins_ = std::move(origins);
    return transposes_ > 0 || any;
}

}  // namespace

size_t convertToNhwc(hal::Model& model, std::vector<OnnxNodeOrigin>& origins) {
    hal::Model converted = model;
    std::vector<OnnxNodeOrigin> convertedOrigins = origins;
    Layout layout(converted, convertedOrigins);
    if (!layout.run()) return size_t{0};
    if (auto st = hal::validateModel(converted); !st) return size_t{0};  // stays NCHW
    model = std::move(converted);
    origins = std::move(convertedOrigins);
    return layout.transposes();
}

}  // namespace npu::framework::onnx_import

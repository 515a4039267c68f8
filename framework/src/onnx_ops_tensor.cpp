// ONNX -> HAL mappers of the elementwise, activation, reduction and shape operators, and the
// operator table.
#include <cmath>
#include <limits>

#include "onnx_builder.h"

namespace npu::framework::onnx_import {
namespace {

using hal::OperationType;

Status requireFloat(NodeContext& ctx, size_t input) {
    const Value* v = ctx.value(input);
    if (v != nullptr && v->elementType != 0 && v->elementType != onnx::TensorProto::FLOAT) {
        return ctx.unsupported("input " + std::to_string(input) + " has element type " +
                               onnxTypeName(v->elementType) + " (the float path takes FLOAT)");
    }
    return {};
}

// Binary ops with a fused-activation input (ADD, SUB, MUL, DIV) and those without.
Status mapBinary(NodeContext& ctx, OperationType type, bool fusedActivation) {
    if (ctx.inputCount() != 2) return ctx.unsupported("expected 2 inputs");
    NPU_TRY(requireFloat(ctx, 0));
    NPU_TRY(requireFloat(ctx, 1));
    if (ctx.opset() < 7 && ctx.attribute("broadcast") != nullptr)
        return ctx.unsupported("legacy broadcast attribute");
    const uint32_t a = NPU_TRY(ctx.operand(0));
    const uint32_t b = NPU_TRY(ctx.operand(1));
    const uint32_t out = NPU_TRY(ctx.output(0));
    std::vector<uint32_t> in = {a, b};
    if (fusedActivation) in.push_back(ctx.builder().scalarInt(0));
    ctx.emit(type, in, {out});
    return {};
}
Status mapAdd(NodeContext& ctx) {
    return mapBinary(ctx, OperationType::ADD, true);
}
Status mapSub(NodeContext& ctx) {
    return mapBinary(ctx, OperationType::SUB, true);
}
Status mapMul(NodeContext& ctx) {
    return mapBinary(ctx, OperationType::MUL, true);
}
Status mapDiv(NodeContext& ctx) {
    return mapBinary(ctx, OperationType::DIV, true);
}
Status mapPow(NodeContext& ctx) {
    return mapBinary(ctx, OperationType::POW, false);
}
// A constant [C] slope that does not broadcast against NC... is the per-channel slope of
// opsets before 7 (upgraded models keep it): given to PRELU as [C, 1, ...].
Status mapPRelu(NodeContext& ctx) {
    const auto x = NPU_TRY(ctx.dims(0));
    const Value* slope = ctx.value(1);
    if (slope != nullptr && slope->constant && slope->constant->dims.size() == 1 && x.size() >= 2 &&
        slope->constant->dims[0] == x[1] && slope->constant->dims[0] != x.back() &&
        slope->constant->dims[0] != 1) {
        std::vector<uint32_t> dims(x.size() - 1, 1);
        dims[0] = uint32_t(x[1]);
        const uint32_t in = NPU_TRY(ctx.operand(0));
        const uint32_t s = ctx.builder().tensorFloat(dims, slope->constant->asFloats());
        const uint32_t out = NPU_TRY(ctx.output(0));
        ctx.emit(OperationType::PRELU, {in, s}, {out});
        return {};
    }
    return mapBinary(ctx, OperationType::PRELU, false);
}

Status mapVariadic(NodeContext& ctx, OperationType type) {
    if (ctx.inputCount() != 2) return ctx.unsupported("only the two-input form is mapped");
    return mapBinary(ctx, type, false);
}
Status mapMax(NodeContext& ctx) {
    return mapVariadic(ctx, OperationType::MAXIMUM);
}
Status mapMin(NodeContext& ctx) {
    return mapVariadic(ctx, OperationType::MINIMUM);
}

Status mapUnary(NodeContext& ctx, OperationType type) {
    NPU_TRY(requireFloat(ctx, 0));
    const uint32_t x = NPU_TRY(ctx.operand(0));
    const uint32_t out = NPU_TRY(ctx.output(0));
    ctx.emit(type, {x}, {out});
    return {};
}
Status mapRelu(NodeContext& ctx) {
    return mapUnary(ctx, OperationType::RELU);
}
Status mapSigmoid(NodeContext& ctx) {
    return mapUnary(ctx, OperationType::LOGISTIC);
}
Status mapTanh(NodeContext& ctx) {
    return mapUnary(ctx, OperationType::TANH);
}
Status mapHardSwish(NodeContext& ctx) {
    return mapUnary(ctx, OperationType::HARD_SWISH);
}
Status mapAbs(NodeContext& ctx) {
    return mapUnary(ctx, OperationType::ABS);
}
Status mapNeg(NodeContext& ctx) {
    return mapUnary(ctx, OperationType::NEG);
}
Status mapExp(NodeContext& ctx) {
    return mapUnary(ctx, OperationType::EXP);
}
Status mapLog(NodeContext& ctx) {
    return mapUnary(ctx, OperationType::LOG);
}
Status mapSqrt(NodeContext& ctx) {
    return mapUnary(ctx, OperationType::SQRT);
}
Status mapFloor(NodeContext& ctx) {
    return mapUnary(ctx, OperationType::FLOOR);
}
Status mapSin(NodeContext& ctx) {
    return mapUnary(ctx, OperationType::SIN);
}

// x op c with a scalar constant c as a one-element tensor (broadcast).
uint32_t emitWithScalar(NodeContext& ctx, OperationType type, uint32_t x, float c,
                        const std::vector<int64_t>& dims) {
    auto& b = ctx.builder();
    const uint32_t out = ctx.temporary(dims);
    std::vector<uint32_t> in = {x, b.tensorFloat({1}, {c})};
    if (type == OperationType::ADD || type == OperationType::MUL) in.push_back(b.scalarInt(0));
    ctx.emit(type, in, {out});
    return out;
}

// Clamp to [lo, hi] into `out`: RELU / RELU1 / RELU6 when they fit, else MAXIMUM and MINIMUM.
void emitClamp(NodeContext& ctx, uint32_t x, float lo, float hi, const std::vector<int64_t>& dims,
               uint32_t out) {
    constexpr float kInf = std::numeric_limits<float>::infinity();
    if (lo == 0.0f && hi == kInf) return ctx.emit(OperationType::RELU, {x}, {out});
    if (lo == 0.0f && hi == 6.0f) return ctx.emit(OperationType::RELU6, {x}, {out});
    if (lo == -1.0f && hi == 1.0f) return ctx.emit(OperationType::RELU1, {x}, {out});
    auto& b = ctx.builder();
    if (hi == kInf) return ctx.emit(OperationType::MAXIMUM, {x, b.tensorFloat({1}, {lo})}, {out});
    if (lo == -kInf) return ctx.emit(OperationType::MINIMUM, {x, b.tensorFloat({1}, {hi})}, {out});
    const uint32_t low = emitWithScalar(ctx, OperationType::MAXIMUM, x, lo, dims);
    ctx.emit(OperationType::MINIMUM, {low, b.tensorFloat({1}, {hi})}, {out});
}

Status mapClip(NodeContext& ctx) {
    NPU_TRY(requireFloat(ctx, 0));
    constexpr float kInf = std::numeric_limits<float>::infinity();
    float lo = -kInf, hi = kInf;
    if (ctx.opset() < 11) {
        lo = ctx.attrFloat("min", -kInf);
        hi = ctx.attrFloat("max", kInf);
    } else {
        if (ctx.hasInput(1)) lo = float(NPU_TRY(ctx.scalarConstant(1, "min")));
        if (ctx.hasInput(2)) hi = float(NPU_TRY(ctx.scalarConstant(2, "max")));
    }
    if (lo > hi) return ctx.unsupported("min > max");
    const auto dims = NPU_TRY(ctx.dims(0));
    const uint32_t x = NPU_TRY(ctx.operand(0));
    const uint32_t out = NPU_TRY(ctx.output(0));
    emitClamp(ctx, x, lo, hi, dims, out);
    return {};
}

// max(0, min(1, alpha * x + beta)).
Status mapHardSigmoid(NodeContext& ctx) {
    NPU_TRY(requireFloat(ctx, 0));
    const auto dims = NPU_TRY(ctx.dims(0));
    const uint32_t x = NPU_TRY(ctx.operand(0));
    const uint32_t out = NPU_TRY(ctx.output(0));
    const uint32_t scaled = emitWithScalar(ctx, OperationType::MUL, x, ctx.attrFloat("alpha", 0.2f), dims);
    const uint32_t shifted =
        emitWithScalar(ctx, OperationType::ADD, scaled, ctx.attrFloat("beta", 0.5f), dims);
    emitClamp(ctx, shifted, 0.0f, 1.0f, dims, out);
    return {};
}

Status mapLeakyRelu(NodeContext& ctx) {
    NPU_TRY(requireFloat(ctx, 0));
    const uint32_t x = NPU_TRY(ctx.operand(0));
    const uint32_t out = NPU_TRY(ctx.output(0));
    ctx.emit(OperationType::PRELU, {x, ctx.builder().tensorFloat({1}, {ctx.attrFloat("alpha", 0.01f)})},
             {out});
    return {};
}

Status mapElu(NodeContext& ctx) {
    NPU_TRY(requireFloat(ctx, 0));
    const uint32_t x = NPU_TRY(ctx.operand(0));
    const uint32_t out = NPU_TRY(ctx.output(0));
    ctx.emit(OperationType::ELU, {x, ctx.builder().scalarFloat(ctx.attrFloat("alpha", 1.0f))}, {out});
    return {};
}

Status mapReciprocal(NodeContext& ctx) {
    NPU_TRY(requireFloat(ctx, 0));
    const uint32_t x = NPU_TRY(ctx.operand(0));
    const uint32_t out = NPU_TRY(ctx.output(0));
    auto& b = ctx.builder();
    ctx.emit(OperationType::DIV, {b.tensorFloat({1}, {1.0f}), x, b.scalarInt(0)}, {out});
    return {};
}

// Every operator that only moves data into a shape shape inference has already found: RESHAPE
// to the inferred output shape (Reshape, Flatten, Squeeze, Unsqueeze, Identity, Dropout).
Status mapToInferredShape(NodeContext& ctx) {
    if (ctx.node().op_type() == "Dropout") {
        if (ctx.node().output_size() > 1 && !ctx.node().output(1).empty())
            return ctx.unsupported("the mask output");
        // Inference is the identity; training mode (opset 12+: input 2) drops at random.
        if (ctx.hasInput(2)) {
            const HostTensor* training = NPU_TRY(ctx.constant(2, "training_mode"));
            if (training->count() != 1 || training->values[0] != 0)
                return ctx.unsupported("training_mode = true");
        }
    }
    if (ctx.node().op_type() == "Reshape" && ctx.attrInt("allowzero", 0) != 0) {
        const HostTensor* shape = NPU_TRY(ctx.constant(1, "shape"));
        for (double d : shape->values) {
            if (d == 0) return ctx.unsupported("allowzero with a zero dimension (empty tensors)");
        }
    }
    const auto dims = NPU_TRY(ctx.outputDims(0));
    if (dims.empty()) return ctx.unsupported("a rank-0 result");
    const uint32_t x = NPU_TRY(ctx.operand(0));
    const hal::OperandType type = ctx.builder().model().main.operands[x].type;
    const uint32_t out = NPU_TRY(ctx.output(0, type));
    std::vector<int32_t> shape(dims.begin(), dims.end());
    ctx.emit(OperationType::RESHAPE, {x, ctx.builder().tensorInt(shape)}, {out});
    return {};
}

Status mapConcat(NodeContext& ctx) {
    const uint32_t rank = NPU_TRY(ctx.rank(0));
    const int64_t axis = ctx.attrInt("axis", 1);
    NPU_TRY(checkAxis(ctx, axis, rank, "axis"));
    std::vector<uint32_t> in;
    for (size_t i = 0; i < ctx.inputCount(); ++i) {
        NPU_TRY(requireFloat(ctx, i));
        if (NPU_TRY(ctx.dims(i)).size() != rank) return ctx.unsupported("inputs of different ranks");
        in.push_back(NPU_TRY(ctx.operand(i)));
    }
    in.push_back(ctx.builder().scalarInt(int32_t(normalizeAxis(axis, rank))));
    const uint32_t out = NPU_TRY(ctx.output(0));
    ctx.emit(OperationType::CONCATENATION, in, {out});
    return {};
}

Status mapTranspose(NodeContext& ctx) {
    NPU_TRY(requireFloat(ctx, 0));
    const uint32_t rank = NPU_TRY(ctx.rank(0));
    std::vector<int64_t> perm = ctx.attrInts("perm");
    if (perm.empty()) {
        for (uint32_t i = 0; i < rank; ++i) perm.push_back(rank - 1 - i);
    }
    if (rank > 4) return ctx.unsupported("rank " + std::to_string(rank) + " > 4 (TRANSPOSE's limit)");
    const uint32_t x = NPU_TRY(ctx.operand(0));
    const uint32_t out = NPU_TRY(ctx.output(0));
    ctx.emit(OperationType::TRANSPOSE,
             {x, ctx.builder().tensorInt(std::vector<int32_t>(perm.begin(), perm.end()))}, {out});
    return {};
}

// Constant-mode Pad with non-negative pads: PAD (value 0) or PAD_V2.
Status mapPad(NodeContext& ctx) {
    NPU_TRY(requireFloat(ctx, 0));
    if (const std::string mode = ctx.attrString("mode", "constant"); mode != "constant")
        return ctx.unsupported("mode '" + mode + "'");
    const uint32_t rank = NPU_TRY(ctx.rank(0));
    std::vector<int64_t> pads;
    float value = 0.0f;
    if (ctx.opset() < 11) {
        pads = ctx.attrInts("pads");
        value = ctx.attrFloat("value", 0.0f);
    } else {
        pads = NPU_TRY(ctx.constant(1, "pads"))->asInts();
        if (ctx.hasInput(2)) value = float(NPU_TRY(ctx.scalarConstant(2, "constant_value")));
        if (ctx.hasInput(3)) return ctx.unsupported("the axes input");
    }
    if (pads.size() != 2 * rank)
        return ctx.unsupported("pads has " + std::to_string(pads.size()) + " values for rank " +
                               std::to_string(rank));
    std::vector<int32_t> paddings;
    for (uint32_t d = 0; d < rank; ++d) {
        if (pads[d] < 0 || pads[d + rank] < 0) return ctx.unsupported("negative pads (cropping)");
        paddings.push_back(int32_t(pads[d]));
        paddings.push_back(int32_t(pads[d + rank]));
    }
    auto& b = ctx.builder();
    const uint32_t x = NPU_TRY(ctx.operand(0));
    const uint32_t out = NPU_TRY(ctx.output(0));
    const uint32_t padOp =
        b.addConstant(hal::OperandType::TENSOR_INT32, {rank, 2}, paddings.data(), paddings.size() * 4);
    if (value == 0.0f) {
        ctx.emit(OperationType::PAD, {x, padOp}, {out});
    } else {
        ctx.emit(OperationType::PAD_V2, {x, padOp, b.scalarFloat(value)}, {out});
    }
    return {};
}

// ReduceMean -> MEAN; ReduceMax / ReduceMin / ReduceSum / ReduceProd -> REDUCE_*. Axes from the
// attribute (ReduceSum takes them as an input from opset 13).
Status mapReduce(NodeContext& ctx, OperationType type) {
    NPU_TRY(requireFloat(ctx, 0));
    const uint32_t rank = NPU_TRY(ctx.rank(0));
    std::vector<int64_t> axes = ctx.attrInts("axes");
    if (ctx.node().op_type() == "ReduceSum" && ctx.opset() >= 13 && ctx.hasInput(1))
        axes = NPU_TRY(ctx.constant(1, "axes"))->asInts();
    if (axes.empty()) {
        if (ctx.attrInt("noop_with_empty_axes", 0) != 0) return mapToInferredShape(ctx);
        for (uint32_t i = 0; i < rank; ++i) axes.push_back(i);
    }
    std::vector<int32_t> halAxes;
    for (int64_t a : axes) {
        NPU_TRY(checkAxis(ctx, a, rank, "axis"));
        halAxes.push_back(int32_t(normalizeAxis(a, rank)));
    }
    const bool keep = ctx.attrInt("keepdims", 1) != 0;
    auto& b = ctx.builder();
    const uint32_t x = NPU_TRY(ctx.operand(0));
    const uint32_t out = NPU_TRY(ctx.output(0));
    const uint32_t keepOp = type == OperationType::MEAN ? b.scalarInt(keep ? 1 : 0) : b.scalarBool(keep);
    ctx.emit(type, {x, b.tensorInt(halAxes), keepOp}, {out});
    return {};
}
Status mapReduceMean(NodeContext& ctx) {
    return mapReduce(ctx, OperationType::MEAN);
}
Status mapReduceMax(NodeContext& ctx) {
    return mapReduce(ctx, OperationType::REDUCE_MAX);
}
Status mapReduceMin(NodeContext& ctx) {
    return mapReduce(ctx, OperationType::REDUCE_MIN);
}
Status mapReduceSum(NodeContext& ctx) {
    return mapReduce(ctx, OperationType::REDUCE_SUM);
}
Status mapReduceProd(NodeContext& ctx) {
    return mapReduce(ctx, OperationType::REDUCE_PROD);
}

// One SLICE per output: begin along `axis`, the output's inferred size.
Status mapSplit(NodeContext& ctx) {
    NPU_TRY(requireFloat(ctx, 0));
    const auto in = NPU_TRY(ctx.dims(0));
    const uint32_t rank = static_cast<uint32_t>(in.size());
    const int64_t axis = ctx.attrInt("axis", 0);
    NPU_TRY(checkAxis(ctx, axis, rank, "axis"));
    const uint32_t a = normalizeAxis(axis, rank);
    const uint32_t x = NPU_TRY(ctx.operand(0));
    auto& b = ctx.builder();
    int64_t begin = 0;
    for (int i = 0; i < ctx.node().output_size(); ++i) {
        const auto outDims = NPU_TRY(ctx.outputDims(size_t(i), in.size()));
        std::vector<int32_t> begins(rank, 0), sizes(in.begin(), in.end());
        begins[a] = int32_t(begin);
        sizes[a] = int32_t(outDims[a]);
        const uint32_t out = NPU_TRY(ctx.output(size_t(i)));
        ctx.emit(OperationType::SLICE, {x, b.tensorInt(begins), b.tensorInt(sizes)}, {out});
        begin += outDims[a];
    }
    if (begin != in[a]) return ctx.unsupported("the outputs do not cover the split axis");
    return {};
}

// Slice -> STRIDED_SLICE with ONNX's clamping resolved here; an end before index 0 (negative
// steps) becomes an end-mask bit.
Status mapSlice(NodeContext& ctx) {
    NPU_TRY(requireFloat(ctx, 0));
    const auto in = NPU_TRY(ctx.dims(0));
    const uint32_t rank = static_cast<uint32_t>(in.size());
    std::vector<int64_t> starts, ends, axes, steps;
    if (ctx.opset() < 10) {
        starts = ctx.attrInts("starts"), ends = ctx.attrInts("ends"), axes = ctx.attrInts("axes");
    } else {
        starts = NPU_TRY(ctx.constant(1, "starts"))->asInts();
        ends = NPU_TRY(ctx.constant(2, "ends"))->asInts();
        if (ctx.hasInput(3)) axes = NPU_TRY(ctx.constant(3, "axes"))->asInts();
        if (ctx.hasInput(4)) steps = NPU_TRY(ctx.constant(4, "steps"))->asInts();
    }
    if (axes.empty())
        for (size_t i = 0; i < starts.size(); ++i) axes.push_back(int64_t(i));
    if (steps.empty()) steps.assign(starts.size(), 1);
    if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size()) {
        return ctx.unsupported("starts, ends, axes and steps differ in length");
    }
    std::vector<int32_t> b0(rank, 0), e0(in.begin(), in.end()), s0(rank, 1);
    int32_t endMask = 0;
    for (size_t i = 0; i < starts.size(); ++i) {
        NPU_TRY(checkAxis(ctx, axes[i], rank, "axis"));
        const uint32_t a = normalizeAxis(axes[i], rank);
        const int64_t dim = in[a], step = steps[i];
        if (step == 0) return ctx.unsupported("step 0");
        auto norm = [&](int64_t v, int64_t lo, int64_t hi) {
            return std::clamp(v < 0 ? v + dim : v, lo, hi);
        };
        const int64_t s = step > 0 ? norm(starts[i], 0, dim) : norm(starts[i], 0, dim - 1);
        const int64_t e = step > 0 ? norm(ends[i], 0, dim) : norm(ends[i], -1, dim - 1);
        b0[a] = int32_t(s), e0[a] = int32_t(e),
        s0[a] = int32_t(std::clamp<int64_t>(step, INT32_MIN, INT32_MAX));
        if (e < 0) endMask |= 1 << a;
    }
    auto& b = ctx.builder();
    const uint32_t x = NPU_TRY(ctx.operand(0));
    const uint32_t out = NPU_TRY(ctx.output(0));
    ctx.emit(OperationType::STRIDED_SLICE,
             {x, b.tensorInt(b0), b.tensorInt(e0), b.tensorInt(s0), b.scalarInt(0), b.scalarInt(endMask),
              b.scalarInt(0)},
             {out});
    return {};
}

Status mapGather(NodeContext& ctx) {
    NPU_TRY(requireFloat(ctx, 0));
    const uint32_t rank = NPU_TRY(ctx.rank(0));
    const int64_t axis = ctx.attrInt("axis", 0);
    NPU_TRY(checkAxis(ctx, axis, rank, "axis"));
    const HostTensor* indices = NPU_TRY(ctx.constant(1, "indices"));
    if (indices->dims.empty()) return ctx.unsupported("scalar indices (a rank-reducing gather)");
    const int64_t dim = NPU_TRY(ctx.dims(0))[normalizeAxis(axis, rank)];
    std::vector<int32_t> idx;
    for (int64_t v : indices->asInts()) {
        if (v < -dim || v >= dim)
            return ctx.unsupported("index " + std::to_string(v) + " outside [" + std::to_string(-dim) + ", " +
                                   std::to_string(dim) + ")");
        idx.push_back(int32_t(v < 0 ? v + dim : v));
    }
    auto& b = ctx.builder();
    const uint32_t x = NPU_TRY(ctx.operand(0));
    const uint32_t out = NPU_TRY(ctx.output(0));
    const uint32_t idxOp =
        b.addConstant(hal::OperandType::TENSOR_INT32, toHalDims(indices->dims), idx.data(), idx.size() * 4);
    ctx.emit(OperationType::GATHER, {x, b.scalarInt(int32_t(normalizeAxis(axis, rank))), idxOp}, {out});
    return {};
}

Status mapTile(NodeContext& ctx) {
    NPU_TRY(requireFloat(ctx, 0));
    const auto repeats = NPU_TRY(ctx.constant(1, "repeats"))->asInts();
    const uint32_t x = NPU_TRY(ctx.operand(0));
    const uint32_t out = NPU_TRY(ctx.output(0));
    ctx.emit(OperationType::TILE,
             {x, ctx.builder().tensorInt(std::vector<int32_t>(repeats.begin(), repeats.end()))}, {out});
    return {};
}

// Shape of a statically known tensor: folded to a constant (PP-OCR's reshape chains).
Status mapShape(NodeContext& ctx) {
    const auto dims = NPU_TRY(ctx.dims(0));
    if (ctx.attribute("start") != nullptr || ctx.attribute("end") != nullptr)
        return ctx.unsupported("start / end attributes");
    HostTensor t{onnx::TensorProto::INT64, {int64_t(dims.size())}, {}};
    for (int64_t d : dims) t.values.push_back(double(d));
    ctx.bindConstant(0, std::move(t));
    return {};
}

std::unordered_map<std::string, Mapper> buildTable() {
    std::unordered_map<std::string, Mapper> t = {
        {"Add", mapAdd},
        {"Sub", mapSub},
        {"Mul", mapMul},
        {"Div", mapDiv},
        {"Pow", mapPow},
        {"PRelu", mapPRelu},
        {"Max", mapMax},
        {"Min", mapMin},
        {"Relu", mapRelu},
        {"Sigmoid", mapSigmoid},
        {"Tanh", mapTanh},
        {"HardSwish", mapHardSwish},
        {"Abs", mapAbs},
        {"Neg", mapNeg},
        {"Exp", mapExp},
        {"Log", mapLog},
        {"Sqrt", mapSqrt},
        {"Floor", mapFloor},
        {"Sin", mapSin},
        {"Clip", mapClip},
        {"HardSigmoid", mapHardSigmoid},
        {"LeakyRelu", mapLeakyRelu},
        {"Elu", mapElu},
        {"Reciprocal", mapReciprocal},
        {"Reshape", mapToInferredShape},
        {"Flatten", mapToInferredShape},
        {"Squeeze", mapToInferredShape},
        {"Unsqueeze", mapToInferredShape},
        {"Identity", mapToInferredShape},
        {"Dropout", mapToInferredShape},
        {"Concat", mapConcat},
        {"Transpose", mapTranspose},
        {"Pad", mapPad},
        {"ReduceMean", mapReduceMean},
        {"ReduceMax", mapReduceMax},
        {"ReduceMin", mapReduceMin},
        {"ReduceSum", mapReduceSum},
        {"ReduceProd", mapReduceProd},
        {"Split", mapSplit},
        {"Slice", mapSlice},
        {"Gather", mapGather},
        {"Tile", mapTile},
        {"Shape", mapShape},
    };
    registerNnOps(t);
    registerQuantOps(t);
    return t;
}

}  // namespace

Mapper findMapper(const std::string& opType) {
    static const auto table = buildTable();
    auto it = table.find(opType);
    return it == table.end() ? nullptr : it->second;
}

bool isImportOnlyInput(const std::string& opType, size_t inputIndex) {
    if (opType == "Reshape" || opType == "Upsample") return inputIndex == 1;
    if (opType == "Resize") return inputIndex >= 1;
    if (opType == "Squeeze" || opType == "Unsqueeze" || opType == "Split") return inputIndex >= 1;
    if (opType == "Dropout") return inputIndex >= 1;
    if (opType == "Shape") return true;  // reads only the (inferred) shape
    return false;
}

}  // namespace npu::framework::onnx_import

// Folds shape computations into initializers: Shape of a tensor whose shape inference knows it,
// then Cast, Slice, Concat, Gather, Squeeze and Unsqueeze of small integer constants. Exported
// PaddlePaddle models build Reshape's shape as Shape -> Cast -> Slice -> Cast -> Concat, which
// ONNX 1.12's data propagation does not follow through Cast; once folded, shape inference knows
// Reshape's output.
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <unordered_map>

#include "onnx_builder.h"

namespace npu::framework::onnx_import {
namespace {

using TP = onnx::TensorProto;

// Larger constants are data, not shapes: they are left to the mappers.
constexpr size_t kMaxFoldedElements = 64;

using Known = std::unordered_map<std::string, HostTensor>;

bool isIntegerType(int32_t t) {
    return t == TP::INT64 || t == TP::INT32 || t == TP::INT16 || t == TP::INT8 || t == TP::UINT8;
}

int64_t attrInt(const onnx::NodeProto& n, const char* name, int64_t fallback) {
    for (const auto& a : n.attribute()) {
        if (a.name() == name) return a.i();
    }
    return fallback;
}

std::optional<std::vector<int64_t>> attrInts(const onnx::NodeProto& n, const char* name) {
    for (const auto& a : n.attribute()) {
        if (a.name() == name) return std::vector<int64_t>(a.ints().begin(), a.ints().end());
    }
    return std::nullopt;
}

// A rank-1 integer constant input (or nullopt).
std::optional<std::vector<int64_t>> intsInput(const onnx::NodeProto& n, int i, const Known& known) {
    if (n.input_size() <= i || n.input(i).empty()) return std::nullopt;
    auto it = known.find(n.input(i));
    if (it == known.end() || !isIntegerType(it->second.elementType)) return std::nullopt;
    return it->second.asInts();
}

const HostTensor* input(const onnx::NodeProto& n, int i, const Known& known) {
    if (n.input_size() <= i) return nullptr;
    auto it = known.find(n.input(i));
    return it == known.end() ? nullptr : &it->second;
}

HostTensor ints1d(int32_t type, const std::vector<int64_t>& v) {
    HostTensor t;
    t.elementType = type;
    t.dims = {static_cast<int64_t>(v.size())};
    t.values.assign(v.begin(), v.end());
    return t;
}

std::optional<HostTensor> foldShape(const onnx::NodeProto& n, const std::vector<int64_t>& dims) {
    const auto rank = static_cast<int64_t>(dims.size());
    auto clampIndex = [&](int64_t i) { return std::clamp(i < 0 ? i + rank : i, int64_t{0}, rank); };
    const int64_t start = clampIndex(attrInt(n, "start", 0));
    const int64_t end = clampIndex(attrInt(n, "end", rank));
    std::vector<int64_t> out;
    for (int64_t k = start; k < end; ++k) out.push_back(dims[static_cast<size_t>(k)]);
    return ints1d(TP::INT64, out);
}

std::optional<HostTensor> foldCast(const onnx::NodeProto& n, const HostTensor& x) {
    const auto to = static_cast<int32_t>(attrInt(n, "to", 0));
    if (!isIntegerType(to) && to != TP::FLOAT) return std::nullopt;
    HostTensor t = x;
    t.elementType = to;
    if (isIntegerType(to)) {
        for (double& v : t.values) v = std::trunc(v);
    }
    return t;
}

// Rank-1 Slice: opset < 10 takes starts/ends/axes as attributes, later opsets as inputs.
std::optional<HostTensor> foldSlice(const onnx::NodeProto& n, int64_t opset, const HostTensor& x,
                                    const Known& known) {
    if (x.dims.size() != 1) return std::nullopt;
    std::optional<std::vector<int64_t>> starts, ends, axes, steps;
    if (opset < 10) {
        starts = attrInts(n, "starts"), ends = attrInts(n, "ends"), axes = attrInts(n, "axes");
    } else {
        starts = intsInput(n, 1, known), ends = intsInput(n, 2, known);
        axes = intsInput(n, 3, known), steps = intsInput(n, 4, known);
        if (n.input_size() > 3 && !n.input(3).empty() && !axes) return std::nullopt;
        if (n.input_size() > 4 && !n.input(4).empty() && !steps) return std::nullopt;
    }
    if (!starts || !ends || starts->size() != 1 || ends->size() != 1) return std::nullopt;
    if (axes && (axes->size() != 1 || ((*axes)[0] != 0 && (*axes)[0] != -1))) return std::nullopt;
    const int64_t step = steps ? (steps->size() == 1 ? (*steps)[0] : 0) : 1;
    if (step <= 0) return std::nullopt;  // negative steps are left to the mapper
    const auto size = static_cast<int64_t>(x.count());
    auto clampIndex = [&](int64_t i) { return std::clamp(i < 0 ? i + size : i, int64_t{0}, size); };
    std::vector<int64_t> out;
    const auto v = x.asInts();
    for (int64_t k = clampIndex((*starts)[0]); k < clampIndex((*ends)[0]); k += step)
        out.push_back(v[static_cast<size_t>(k)]);
    return ints1d(x.elementType, out);
}

std::optional<HostTensor> foldConcat(const onnx::NodeProto& n, const Known& known) {
    std::vector<int64_t> out;
    int32_t type = 0;
    for (int i = 0; i < n.input_size(); ++i) {
        const HostTensor* t = input(n, i, known);
        if (t == nullptr || t->dims.size() != 1 || !isIntegerType(t->elementType) ||
            (type != 0 && t->elementType != type))
            return std::nullopt;
        type = t->elementType;
        const auto v = t->asInts();
        out.insert(out.end(), v.begin(), v.end());
    }
    if (type == 0) return std::nullopt;
    return ints1d(type, out);
}

// Gather along axis 0 of a rank-1 constant with scalar or rank-1 indices.
std::optional<HostTensor> foldGather(const onnx::NodeProto& n, const HostTensor& x, const Known& known) {
    const HostTensor* idx = input(n, 1, known);
    if (idx == nullptr || x.dims.size() != 1 || idx->dims.size() > 1 || attrInt(n, "axis", 0) != 0)
        return std::nullopt;
    const auto size = static_cast<int64_t>(x.count());
    HostTensor t;
    t.elementType = x.elementType;
    t.dims = idx->dims;
    for (int64_t i : idx->asInts()) {
        if (i < -size || i >= size) return std::nullopt;
        t.values.push_back(x.values[static_cast<size_t>(i < 0 ? i + size : i)]);
    }
    return t;
}

// Squeeze / Unsqueeze change only the dims; axes are an attribute before opset 13.
std::optional<HostTensor> foldSqueeze(const onnx::NodeProto& n, int64_t opset, const HostTensor& x,
                                      const Known& known) {
    const auto axes = opset < 13 ? attrInts(n, "axes") : intsInput(n, 1, known);
    const bool unsqueeze = n.op_type() == "Unsqueeze";
    if (!axes) {
        if (unsqueeze) return std::nullopt;
        HostTensor t = x;  // Squeeze without axes drops every 1
        std::erase(t.dims, 1);
        return t;
    }
    HostTensor t = x;
    const auto outRank = static_cast<int64_t>(x.dims.size()) + (unsqueeze ? 1 : -1) * int64_t(axes->size());
    const int64_t rank = unsqueeze ? outRank : static_cast<int64_t>(x.dims.size());
    std::vector<bool> marked(static_cast<size_t>(std::max<int64_t>(rank, 0)), false);
    for (int64_t a : *axes) {
        const int64_t k = a < 0 ? a + rank : a;
        if (k < 0 || k >= rank || marked[static_cast<size_t>(k)]) return std::nullopt;  // repeated axis
        marked[static_cast<size_t>(k)] = true;
    }
    t.dims.clear();
    size_t src = 0;
    for (int64_t k = 0; k < rank; ++k) {
        if (unsqueeze) {
            t.dims.push_back(marked[size_t(k)] ? 1 : x.dims[src++]);
        } else if (!marked[size_t(k)]) {
            t.dims.push_back(x.dims[size_t(k)]);
        } else if (x.dims[size_t(k)] != 1) {
            return std::nullopt;
        }
    }
    return t;
}

std::optional<HostTensor> foldNode(const onnx::NodeProto& n, int64_t opset, const Known& known,
                                   const std::unordered_map<std::string, std::vector<int64_t>>& shapes) {
    if (n.output_size() != 1 || (!n.domain().empty() && n.domain() != "ai.onnx")) return std::nullopt;
    const std::string& op = n.op_type();
    if (op == "Shape") {
        auto it = n.input_size() == 1 ? shapes.find(n.input(0)) : shapes.end();
        return it == shapes.end() ? std::nullopt : foldShape(n, it->second);
    }
    if (op == "Concat") return foldConcat(n, known);
    const HostTensor* x = input(n, 0, known);
    if (x == nullptr || x->count() > kMaxFoldedElements || !isIntegerType(x->elementType))
        return std::nullopt;
    if (op == "Cast") return foldCast(n, *x);
    if (op == "Slice") return foldSlice(n, opset, *x, known);
    if (op == "Gather") return foldGather(n, *x, known);
    if (op == "Squeeze" || op == "Unsqueeze") return foldSqueeze(n, opset, *x, known);
    return std::nullopt;
}

TP protoOf(const std::string& name, const HostTensor& t) {
    TP p;
    p.set_name(name);
    p.set_data_type(t.elementType);
    for (int64_t d : t.dims) p.add_dims(d);
    for (double v : t.values) {
        if (t.elementType == TP::INT64) {
            p.add_int64_data(static_cast<int64_t>(v));
        } else if (t.elementType == TP::FLOAT) {
            p.add_float_data(static_cast<float>(v));
        } else {
            p.add_int32_data(static_cast<int32_t>(v));  // INT32, INT16, INT8, UINT8 all live here
        }
    }
    return p;
}

}  // namespace

Result<size_t> foldShapeComputations(onnx::ModelProto& model, int64_t opset, const std::string& where) {
    auto* graph = model.mutable_graph();
    std::unordered_map<std::string, std::vector<int64_t>> shapes;
    auto noteShape = [&](const onnx::ValueInfoProto& vi) {
        if (!vi.type().has_tensor_type() || !vi.type().tensor_type().has_shape()) return;
        std::vector<int64_t> dims;
        for (const auto& d : vi.type().tensor_type().shape().dim()) {
            if (!d.has_dim_value()) return;
            dims.push_back(d.dim_value());
        }
        shapes[vi.name()] = dims;
    };
    for (const auto& vi : graph->input()) noteShape(vi);
    for (const auto& vi : graph->value_info()) noteShape(vi);
    for (const auto& vi : graph->output()) noteShape(vi);
    Known known;
    for (const auto& init : graph->initializer()) {
        size_t count = 1;
        for (int64_t d : init.dims()) count *= static_cast<size_t>(std::max<int64_t>(d, 0));
        shapes[init.name()] = {init.dims().begin(), init.dims().end()};
        if (count > kMaxFoldedElements || !isIntegerType(init.data_type())) continue;
        known[init.name()] =
            NPU_TRY(hostTensorFromProto(init, where + ": initializer '" + init.name() + "'"));
    }
    google::protobuf::RepeatedPtrField<onnx::NodeProto> kept;
    size_t folded = 0;
    for (const auto& n : graph->node()) {
        auto value = foldNode(n, opset, known, shapes);
        if (!value) {
            *kept.Add() = n;
            continue;
        }
        *graph->add_initializer() = protoOf(n.output(0), *value);
        shapes[n.output(0)] = value->dims;
        known[n.output(0)] = std::move(*value);
        ++folded;
    }
    graph->mutable_node()->Swap(&kept);
    return folded;
}

}  // namespace npu::framework::onnx_import

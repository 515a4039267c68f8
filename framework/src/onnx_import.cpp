// ONNX import: parse, check, fix input shapes, fold constants, infer shapes, fold
// BatchNormalization into Conv, then map each live node to HAL operations (onnx_ops_*.cpp).
#include "npu/framework/onnx_import.h"

#include <onnx/checker.h>
#include <onnx/defs/schema.h>
#include <onnx/shape_inference/implementation.h>
#include <onnx/version_converter/convert.h>

#include <cmath>
#include <exception>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>
#include <unordered_set>

#include "onnx_builder.h"

namespace npu::framework {
namespace {

using namespace onnx_import;
using TP = onnx::TensorProto;

// Graph passes on the protobuf, before mapping. Each reports what it did or an error.
class ModelPrep {
public:
    ModelPrep(onnx::ModelProto& model, std::string where) : model_(model), where_(std::move(where)) {}

    Result<int64_t> opset() const;
    Status applyFixedInputs(const std::map<std::string, OnnxTensor>& fixed);
    Status applyInputShapes(const std::map<std::string, std::vector<int64_t>>& shapes);
    std::map<std::string, std::vector<int64_t>> namedInputShapes(const OnnxImportOptions& options) const;
    Result<size_t> foldConstantNodes();
    Status inferShapes();
    size_t foldBatchNorms();

private:
    Result<TP> constantValue(const onnx::NodeProto& node, size_t index) const;
    bool foldOneBatchNorm(size_t bnIndex, const std::unordered_map<std::string, size_t>& initializers);

    onnx::ModelProto& model_;
    std::string where_;
};

TP tensorProtoOf(const OnnxTensor& t) {
    TP p;
    p.set_name(t.name);
    p.set_data_type(t.elementType);
    for (int64_t d : t.dims) p.add_dims(d);
    p.set_raw_data(std::string(t.data.begin(), t.data.end()));
    return p;
}

Result<int64_t> ModelPrep::opset() const {
    for (const auto& id : model_.opset_import()) {
        if (id.domain().empty() || id.domain() == "ai.onnx") {
            if (id.version() < kOnnxMinOpset || id.version() > kOnnxMaxOpset) {
                return fail(kOnnxUnsupported, where_ + ": opset " + std::to_string(id.version()) +
                                                  " is outside the supported " +
                                                  std::to_string(kOnnxMinOpset) + ".." +
                                                  std::to_string(kOnnxMaxOpset));
            }
            return id.version();
        }
    }
    return fail(kOnnxUnsupported, where_ + ": the model imports no opset of the default domain (ai.onnx)");
}

Status ModelPrep::applyFixedInputs(const std::map<std::string, OnnxTensor>& fixed) {
    auto* graph = model_.mutable_graph();
    for (const auto& [name, tensor] : fixed) {
        bool found = false;
        for (int i = 0; i < graph->input_size(); ++i) {
            if (graph->input(i).name() != name) continue;
            graph->mutable_input()->DeleteSubrange(i, 1);
            found = true;
            break;
        }
        if (!found) return invalidArgument(where_ + ": fixed input '" + name + "' is not a graph input");
        OnnxTensor named = tensor;
        named.name = name;
        *graph->add_initializer() = tensorProtoOf(named);
    }
    return {};
}

Status ModelPrep::applyInputShapes(const std::map<std::string, std::vector<int64_t>>& shapes) {
    for (const auto& [name, dims] : shapes) {
        onnx::ValueInfoProto* input = nullptr;
        for (auto& in : *model_.mutable_graph()->mutable_input()) {
            if (in.name() == name) input = &in;
        }
        if (input == nullptr)
            return invalidArgument(where_ + ": input shape given for '" + name + "', not a graph input");
        auto* shape = input->mutable_type()->mutable_tensor_type()->mutable_shape();
        if (shape->dim_size() != 0 && shape->dim_size() != static_cast<int>(dims.size())) {
            return invalidArgument(where_ + ": input '" + name + "' has rank " +
                                   std::to_string(shape->dim_size()) + ", the given shape has rank " +
                                   std::to_string(dims.size()));
        }
        if (shape->dim_size() == 0) {
            for (size_t k = 0; k < dims.size(); ++k) shape->add_dim();
        }
        for (size_t k = 0; k < dims.size(); ++k) {
            auto* dim = shape->mutable_dim(static_cast<int>(k));
            if (dims[k] <= 0)
                return invalidArgument(where_ + ": input '" + name + "' dimension " + std::to_string(k) +
                                       " given as " + std::to_string(dims[k]));
            if (dim->has_dim_value() && dim->dim_value() != dims[k]) {
                return invalidArgument(where_ + ": input '" + name + "' dimension " + std::to_string(k) +
                                       " is " + std::to_string(dim->dim_value()) + " in the model, given " +
                                       std::to_string(dims[k]));
            }
            dim->set_dim_value(dims[k]);
        }
    }
    return {};
}

std::map<std::string, std::vector<int64_t>> ModelPrep::namedInputShapes(
    const OnnxImportOptions& options) const {
    auto shapes = options.inputShapes;
    std::unordered_set<std::string> initialized;
    for (const auto& init : model_.graph().initializer()) initialized.insert(init.name());
    size_t next = 0;
    for (const auto& in : model_.graph().input()) {
        if (initialized.count(in.name()) != 0) continue;
        if (next < options.orderedInputShapes.size() && !options.orderedInputShapes[next].empty() &&
            shapes.count(in.name()) == 0)
            shapes[in.name()] = options.orderedInputShapes[next];
        ++next;
    }
    return shapes;
}

Result<TP> ModelPrep::constantValue(const onnx::NodeProto& node, size_t index) const {
    const std::string where = where_ + ": Constant node " + std::to_string(index) + " '" + node.name() + "'";
    if (node.attribute_size() != 1) return invalidArgument(where + ": expected exactly one attribute");
    const auto& a = node.attribute(0);
    TP p;
    if (a.name() == "value") {
        p = a.t();
    } else if (a.name() == "value_float") {
        p.set_data_type(TP::FLOAT);
        p.add_float_data(a.f());
    } else if (a.name() == "value_floats") {
        p.set_data_type(TP::FLOAT);
        p.add_dims(a.floats_size());
        for (float f : a.floats()) p.add_float_data(f);
    } else if (a.name() == "value_int") {
        p.set_data_type(TP::INT64);
        p.add_int64_data(a.i());
    } else if (a.name() == "value_ints") {
        p.set_data_type(TP::INT64);
        p.add_dims(a.ints_size());
        for (int64_t v : a.ints()) p.add_int64_data(v);
    } else {
        return fail(kOnnxUnsupported,
                    where + ": cannot map: attribute '" + a.name() + "' (sparse or string constants)");
    }
    p.set_name(node.output(0));
    return p;
}

Result<size_t> ModelPrep::foldConstantNodes() {
    auto* graph = model_.mutable_graph();
    google::protobuf::RepeatedPtrField<onnx::NodeProto> kept;
    size_t folded = 0;
    for (int i = 0; i < graph->node_size(); ++i) {
        const auto& node = graph->node(i);
        if (node.op_type() == "Constant" && (node.domain().empty() || node.domain() == "ai.onnx")) {
            *graph->add_initializer() = NPU_TRY(constantValue(node, static_cast<size_t>(i)));
            ++folded;
        } else {
            *kept.Add() = node;
        }
    }
    graph->mutable_node()->Swap(&kept);
    return folded;
}

Status ModelPrep::inferShapes() {
    try {
        onnx::ShapeInferenceOptions options(/*check_type=*/false, /*error_mode=*/0, /*data_prop=*/true);
        onnx::shape_inference::InferShapes(model_, onnx::OpSchemaRegistry::Instance(), options);
    } catch (const std::exception& e) {
        // libonnx's inference can disagree with shapes a valid model declares (STFT in 1.12):
        // the model is not malformed, this importer just cannot know its shapes.
        return fail(kOnnxUnsupported, where_ + ": ONNX shape inference failed: " + e.what());
    }
    return {};
}

// Conv -> BatchNormalization with constant weights and statistics, the conv's output read by
// nothing else: the BN's scale and shift go into the conv's weights and bias.
bool ModelPrep::foldOneBatchNorm(size_t bnIndex,
                                 const std::unordered_map<std::string, size_t>& initializers) {
    auto* graph = model_.mutable_graph();
    const auto& bn = graph->node(static_cast<int>(bnIndex));
    if (bn.output_size() != 1 || bn.input_size() != 5) return false;
    for (const auto& a : bn.attribute()) {
        if (a.name() == "training_mode" && a.i() != 0) return false;
    }
    const std::string& x = bn.input(0);
    int convIndex = -1;
    size_t readers = 0;
    for (int i = 0; i < graph->node_size(); ++i) {
        const auto& n = graph->node(i);
        for (const auto& in : n.input()) readers += in == x ? 1 : 0;
        if (n.output_size() > 0 && n.output(0) == x && n.op_type() == "Conv") convIndex = i;
    }
    for (const auto& out : graph->output()) readers += out.name() == x ? 1 : 0;
    if (convIndex < 0 || readers != 1) return false;
    auto* conv = graph->mutable_node(convIndex);
    auto lookup = [&](const std::string& name) -> std::optional<HostTensor> {
        auto it = initializers.find(name);
        if (it == initializers.end()) return std::nullopt;
        auto t = hostTensorFromProto(graph->initializer(static_cast<int>(it->second)), name);
        if (!t || t->elementType != TP::FLOAT) return std::nullopt;
        return *t;
    };
    auto w = lookup(conv->input(1));
    if (!w || w->dims.empty()) return false;
    const int64_t outChannels = w->dims[0];
    std::vector<std::optional<HostTensor>> p;
    for (int k = 1; k < 5; ++k) p.push_back(lookup(bn.input(k)));
    for (const auto& t : p) {
        if (!t || static_cast<int64_t>(t->count()) != outChannels) return false;
    }
    std::optional<HostTensor> b =
        conv->input_size() > 2 && !conv->input(2).empty() ? lookup(conv->input(2)) : std::nullopt;
    if (conv->input_size() > 2 && !conv->input(2).empty() &&
        (!b || static_cast<int64_t>(b->count()) != outChannels)) {
        return false;
    }
    float epsilon = 1e-5f;
    for (const auto& a : bn.attribute()) {
        if (a.name() == "epsilon") epsilon = a.f();
    }
    TP newW, newB;
    newW.set_name(conv->input(1) + "/bn_folded/" + bn.output(0));
    newB.set_name(newW.name() + "_bias");
    newW.set_data_type(TP::FLOAT);
    newB.set_data_type(TP::FLOAT);
    for (int64_t d : w->dims) newW.add_dims(d);
    newB.add_dims(outChannels);
    const size_t perChannel = w->count() / static_cast<size_t>(outChannels);
    for (int64_t o = 0; o < outChannels; ++o) {
        const double s = p[0]->values[o] / std::sqrt(p[3]->values[o] + double(epsilon));
        for (size_t k = 0; k < perChannel; ++k) newW.add_float_data(float(w->values[o * perChannel + k] * s));
        const double bias = b ? b->values[o] : 0.0;
        newB.add_float_data(float((bias - p[2]->values[o]) * s + p[1]->values[o]));
    }
    conv->set_input(1, newW.name());
    if (conv->input_size() < 3)
        conv->add_input(newB.name());
    else
        conv->set_input(2, newB.name());
    conv->set_output(0, bn.output(0));
    *graph->add_initializer() = std::move(newW);
    *graph->add_initializer() = std::move(newB);
    graph->mutable_node()->DeleteSubrange(static_cast<int>(bnIndex), 1);
    return true;
}

size_t ModelPrep::foldBatchNorms() {
    size_t folded = 0;
    for (int i = 0; i < model_.graph().node_size();) {
        if (model_.graph().node(i).op_type() != "BatchNormalization") {
            ++i;
            continue;
        }
        std::unordered_map<std::string, size_t> initializers;
        for (int k = 0; k < model_.graph().initializer_size(); ++k)
            initializers[model_.graph().initializer(k).name()] = k;
        if (foldOneBatchNorm(static_cast<size_t>(i), initializers)) {
            ++folded;
        } else {
            ++i;
        }
    }
    return folded;
}

std::optional<std::vector<int64_t>> staticShape(const onnx::TypeProto& type) {
    if (!type.has_tensor_type() || !type.tensor_type().has_shape()) return std::nullopt;
    std::vector<int64_t> dims;
    for (const auto& d : type.tensor_type().shape().dim()) {
        if (!d.has_dim_value() || d.dim_value() < 0) return std::nullopt;
        dims.push_back(d.dim_value());
    }
    return dims;
}

// A quantized graph input takes its scale and zero point from the first node reading it
// (DequantizeLinear, QLinearConv, QLinearMatMul: the scale and zero point follow the input).
std::optional<std::pair<float, int32_t>> consumerQuant(const onnx::GraphProto& graph, const std::string& name,
                                                       const std::unordered_map<std::string, Value>& values) {
    for (const auto& n : graph.node()) {
        for (int k = 0; k < n.input_size(); ++k) {
            if (n.input(k) != name) continue;
            const bool takes =
                (n.op_type() == "DequantizeLinear" && k == 0) ||
                ((n.op_type() == "QLinearConv" || n.op_type() == "QLinearMatMul") && (k == 0 || k == 3));
            if (!takes || n.input_size() <= k + 1) return std::nullopt;
            auto scale = values.find(n.input(k + 1));
            if (scale == values.end() || !scale->second.constant || scale->second.constant->count() != 1)
                return std::nullopt;
            int32_t zp = 0;
            if (n.input_size() > k + 2 && !n.input(k + 2).empty()) {
                auto z = values.find(n.input(k + 2));
                if (z == values.end() || !z->second.constant || z->second.constant->count() != 1)
                    return std::nullopt;
                zp = int32_t(z->second.constant->values[0]);
            }
            return std::pair{float(scale->second.constant->values[0]), zp};
        }
    }
    return std::nullopt;
}

// Graph inputs, initializers and the shapes shape inference found.
Status bindGraphValues(const onnx::GraphProto& graph, ModelBuilder& b, OnnxImportedModel& out,
                       const std::string& where) {
    auto& values = b.values();
    auto noteType = [&](const onnx::ValueInfoProto& vi) {
        Value& v = values[vi.name()];
        if (vi.type().has_tensor_type()) v.elementType = vi.type().tensor_type().elem_type();
        if (auto s = staticShape(vi.type())) v.dims = *s;
    };
    for (const auto& vi : graph.value_info()) noteType(vi);
    for (const auto& vi : graph.output()) noteType(vi);
    std::unordered_set<std::string> initialized;
    for (const auto& init : graph.initializer()) {
        Value& v = values[init.name()];
        v.constant = NPU_TRY(hostTensorFromProto(init, where + ": initializer '" + init.name() + "'"));
        v.elementType = init.data_type();
        v.dims = v.constant->dims;
        initialized.insert(init.name());
    }
    for (const auto& in : graph.input()) {
        if (initialized.count(in.name()) != 0) continue;
        noteType(in);
        Value& v = values[in.name()];
        const auto type = halTypeOfOnnx(v.elementType);
        if (!type) {
            return fail(kOnnxUnsupported, where + ": input '" + in.name() + "' has element type " +
                                              onnxTypeName(v.elementType) +
                                              ", which the HAL does not carry (fix its value at import)");
        }
        if (v.dims && v.dims->empty()) {
            return fail(kOnnxUnsupported,
                        where + ": input '" + in.name() + "' is a rank-0 tensor, which the HAL lacks");
        }
        if (!v.dims) {
            return invalidArgument(
                where + ": input '" + in.name() +
                "' has dynamic dimensions: give its shape (--input-shape or an input file)");
        }
        v.operand = b.temporary(*type, *v.dims);
        b.model().main.operands[*v.operand].lifetime = hal::OperandLifeTime::SUBGRAPH_INPUT;
        if (hal::isQuantizedType(*type)) {
            const auto q = consumerQuant(graph, in.name(), values);
            if (!q) {
                return fail(kOnnxUnsupported,
                            where + ": quantized input '" + in.name() +
                                "' is read by no DequantizeLinear / QLinear* node with a constant scale");
            }
            b.model().main.operands[*v.operand].scale = q->first;
            b.model().main.operands[*v.operand].zeroPoint = q->second;
        }
        b.model().main.inputIndexes.push_back(*v.operand);
        out.inputNames.push_back(in.name());
    }
    return {};
}

// Nodes whose outputs reach a graph output through inputs read at run time.
std::vector<bool> liveNodes(const onnx::GraphProto& graph) {
    std::unordered_set<std::string> live;
    for (const auto& o : graph.output()) live.insert(o.name());
    std::vector<bool> result(graph.node_size(), false);
    for (int i = graph.node_size() - 1; i >= 0; --i) {
        const auto& n = graph.node(i);
        for (const auto& o : n.output()) result[i] = result[i] || live.count(o) != 0;
        if (!result[i]) continue;
        for (int k = 0; k < n.input_size(); ++k) {
            if (!isImportOnlyInput(n.op_type(), static_cast<size_t>(k))) live.insert(n.input(k));
        }
    }
    return result;
}

Status mapNodes(const onnx::GraphProto& graph, int64_t opset, ModelBuilder& b) {
    const auto live = liveNodes(graph);
    for (int i = 0; i < graph.node_size(); ++i) {
        if (!live[i]) continue;
        const auto& node = graph.node(i);
        NodeContext ctx(node, static_cast<uint32_t>(i), opset, b);
        if (!node.domain().empty() && node.domain() != "ai.onnx") {
            return ctx.unsupported("operators of domain '" + node.domain() + "' are not mapped");
        }
        const Mapper mapper = findMapper(node.op_type());
        if (mapper == nullptr) return ctx.unsupported("no HAL mapping for this operator");
        NPU_TRY(mapper(ctx));
    }
    return {};
}

// Graph outputs become SUBGRAPH_OUTPUT operands; one that is not a fresh temporary (an input, a
// constant, an output listed twice) gets a copy through RESHAPE to its own shape.
Status bindGraphOutputs(const onnx::GraphProto& graph, ModelBuilder& b, OnnxImportedModel& out,
                        const std::string& where) {
    auto& operands = b.model().main.operands;
    for (const auto& o : graph.output()) {
        auto it = b.values().find(o.name());
        if (it == b.values().end() || (!it->second.operand && !it->second.constant)) {
            return invalidArgument(where + ": graph output '" + o.name() + "' is produced by no node");
        }
        Value& v = it->second;
        const int32_t declared = o.type().tensor_type().elem_type();
        if (!halTypeOfOnnx(declared)) {
            return fail(kOnnxUnsupported, where + ": graph output '" + o.name() + "' has element type " +
                                              onnxTypeName(declared) + ", which the HAL does not carry");
        }
        if (!v.operand) {
            onnx::NodeProto fake;
            fake.set_op_type("Output");
            fake.add_input(o.name());
            NodeContext ctx(fake, static_cast<uint32_t>(graph.node_size()), 0, b);
            NPU_TRY(ctx.operand(0));
        }
        uint32_t index = *v.operand;
        if (operands[index].lifetime != hal::OperandLifeTime::TEMPORARY_VARIABLE) {
            const auto dims = operands[index].dimensions;
            std::vector<int32_t> shape(dims.begin(), dims.end());
            const uint32_t copy = b.addOperand({operands[index].type, dims});
            b.addOperation(hal::OperationType::RESHAPE, {index, b.tensorInt(shape)}, {copy},
                           {static_cast<uint32_t>(graph.node_size()), o.name(), "Identity (output copy)"});
            index = copy;
        }
        operands[index].lifetime = hal::OperandLifeTime::SUBGRAPH_OUTPUT;
        b.model().main.outputIndexes.push_back(index);
        out.outputNames.push_back(o.name());
    }
    return {};
}

Status checkModel(const onnx::ModelProto& model, const std::string& where) {
    try {
        onnx::checker::check_model(model);
    } catch (const std::exception& e) {
        return invalidArgument(where + ": the ONNX checker rejects the model: " + e.what());
    }
    return {};
}

// Models of opsets before kOnnxMinOpset go through libonnx's version converter first.
// Returns the model's original default-domain opset (0 when it imports none).
Result<int64_t> upgradeOldOpset(onnx::ModelProto& proto, const std::string& where) {
    int64_t original = 0;
    for (const auto& id : proto.opset_import()) {
        if (id.domain().empty() || id.domain() == "ai.onnx") original = id.version();
    }
    if (original == 0 || original >= kOnnxMinOpset) return original;
    // libonnx 1.12's converter dereferences undefined node inputs and graph outputs (segfaults,
    // found by fuzzing): refuse those here.
    std::unordered_set<std::string> defined;
    for (const auto& in : proto.graph().input()) defined.insert(in.name());
    for (const auto& init : proto.graph().initializer()) defined.insert(init.name());
    for (const auto& n : proto.graph().node()) {
        for (const auto& in : n.input()) {
            if (!in.empty() && defined.count(in) == 0) {
                return invalidArgument(where + ": node '" + n.name() + "' (" + n.op_type() + ") reads '" +
                                       in + "', which no input, initializer or earlier node defines");
            }
        }
        for (const auto& out : n.output()) defined.insert(out);
    }
    for (const auto& out : proto.graph().output()) {
        if (defined.count(out.name()) == 0)
            return invalidArgument(where + ": graph output '" + out.name() + "' is defined by nothing");
    }
    try {
        proto = onnx::version_conversion::ConvertVersion(proto, static_cast<int>(kOnnxMinOpset));
    } catch (const std::exception& e) {
        return fail(kOnnxUnsupported, where + ": opset " + std::to_string(original) + " is before " +
                                          std::to_string(kOnnxMinOpset) +
                                          " and the ONNX version converter cannot upgrade it: " + e.what());
    }
    return original;
}

}  // namespace

namespace onnx_import {

Status prepareOnnxProto(onnx::ModelProto& proto, const OnnxImportOptions& options, const std::string& where,
                        OnnxImportedModel& out) {
    NPU_TRY(checkModel(proto, where));
    ModelPrep prep(proto, where);
    // The user's inputs apply to the model as written, before any opset upgrade.
    NPU_TRY(prep.applyFixedInputs(options.fixedInputs));
    NPU_TRY(prep.applyInputShapes(prep.namedInputShapes(options)));
    out.originalOpset = NPU_TRY(upgradeOldOpset(proto, where));
    out.opset = NPU_TRY(prep.opset());
    out.foldedConstants = NPU_TRY(prep.foldConstantNodes());
    NPU_TRY(prep.inferShapes());
    if (const size_t shapeNodes = NPU_TRY(foldShapeComputations(proto, out.opset, where)); shapeNodes > 0) {
        out.foldedConstants += shapeNodes;
        NPU_TRY(prep.inferShapes());
    }
    out.foldedBatchNorms = prep.foldBatchNorms();
    out.onnxNodes = static_cast<size_t>(proto.graph().node_size());
    return {};
}

}  // namespace onnx_import

Result<OnnxImportedModel> importOnnxModelBytes(std::string_view bytes, const OnnxImportOptions& options,
                                               const std::string& where) {
    onnx::ModelProto proto;
    if (bytes.size() > static_cast<size_t>(std::numeric_limits<int>::max()) ||
        !proto.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
        return invalidArgument(where + ": not a serialized onnx.ModelProto (" + std::to_string(bytes.size()) +
                               " bytes)");
    }
    OnnxImportedModel out;
    NPU_TRY(prepareOnnxProto(proto, options, where, out));
    ModelBuilder b;
    NPU_TRY(bindGraphValues(proto.graph(), b, out, where));
    NPU_TRY(mapNodes(proto.graph(), out.opset, b));
    NPU_TRY(bindGraphOutputs(proto.graph(), b, out, where));
    out.model = std::move(b.model());
    out.origins = std::move(b.origins());
    out.fusedQdqOperations = NPU_TRY(fuseQuantDequant(out.model, out.origins, where));
    if (!options.keepNchw) out.layoutTransposes = convertToNhwc(out.model, out.origins);
    return out;
}

Result<OnnxImportedModel> importOnnxModel(const std::string& path, const OnnxImportOptions& options) {
    const std::string bytes = NPU_TRY(onnx_import::readFileBytes(path));
    return importOnnxModelBytes(bytes, options, path);
}

}  // namespace npu::framework

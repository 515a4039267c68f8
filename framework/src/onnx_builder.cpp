// The HAL model under construction and what one ONNX node's mapper sees.
#include "onnx_builder.h"

#include <cmath>
#include <cstring>

namespace npu::framework::onnx_import {
namespace {

constexpr size_t kConstantAlignment = 8;

template <typename T>
void appendValues(HostTensor& t, const std::string& raw, size_t count) {
    for (size_t i = 0; i < count; ++i) {
        T v;
        std::memcpy(&v, raw.data() + i * sizeof(T), sizeof(T));
        t.values.push_back(static_cast<double>(v));
    }
}

Status appendRaw(HostTensor& t, const std::string& raw, size_t count, const std::string& where) {
    using TP = onnx::TensorProto;
    const size_t size = onnxElementSize(t.elementType);
    if (size == 0)
        return fail(kOnnxUnsupported,
                    where + ": element type " + onnxTypeName(t.elementType) + " is not taken");
    if (raw.size() != count * size) {
        return invalidArgument(where + ": raw_data has " + std::to_string(raw.size()) +
                               " bytes, the shape needs " + std::to_string(count * size));
    }
    switch (t.elementType) {
        case TP::FLOAT:
            appendValues<float>(t, raw, count);
            break;
        case TP::DOUBLE:
            appendValues<double>(t, raw, count);
            break;
        case TP::INT32:
            appendValues<int32_t>(t, raw, count);
            break;
        case TP::UINT32:
            appendValues<uint32_t>(t, raw, count);
            break;
        case TP::INT64:
            appendValues<int64_t>(t, raw, count);
            break;
        case TP::UINT64:
            appendValues<uint64_t>(t, raw, count);
            break;
        case TP::INT16:
            appendValues<int16_t>(t, raw, count);
            break;
        case TP::UINT16:
            appendValues<uint16_t>(t, raw, count);
            break;
        case TP::INT8:
            appendValues<int8_t>(t, raw, count);
            break;
        default:
            appendValues<uint8_t>(t, raw, count);
            break;  // UINT8, BOOL
    }
    return {};
}

Status appendTyped(HostTensor& t, const onnx::TensorProto& p, size_t count, const std::string& where) {
    using TP = onnx::TensorProto;
    switch (t.elementType) {
        case TP::FLOAT:
            for (float v : p.float_data()) t.values.push_back(v);
            break;
        case TP::DOUBLE:
            for (double v : p.double_data()) t.values.push_back(v);
            break;
        case TP::INT64:
            for (int64_t v : p.int64_data()) t.values.push_back(static_cast<double>(v));
            break;
        case TP::UINT32:
        case TP::UINT64:
            for (uint64_t v : p.uint64_data()) t.values.push_back(static_cast<double>(v));
            break;
        case TP::INT32:
        case TP::INT16:
        case TP::UINT16:
        case TP::INT8:
        case TP::UINT8:
        case TP::BOOL:
            for (int32_t v : p.int32_data()) t.values.push_back(v);
            break;
        default:
            return fail(kOnnxUnsupported,
                        where + ": element type " + onnxTypeName(t.elementType) + " is not taken");
    }
    if (t.values.size() != count) {
        return invalidArgument(where + ": " + std::to_string(t.values.size()) +
                               " elements, the shape needs " + std::to_string(count));
    }
    return {};
}

}  // namespace

size_t onnxElementSize(int32_t type) {
    using TP = onnx::TensorProto;
    switch (type) {
        case TP::FLOAT:
        case TP::INT32:
        case TP::UINT32:
            return 4;
        case TP::DOUBLE:
        case TP::INT64:
        case TP::UINT64:
            return 8;
        case TP::INT16:
        case TP::UINT16:
            return 2;
        case TP::INT8:
        case TP::UINT8:
        case TP::BOOL:
            return 1;
        default:
            return 0;
    }
}

std::vector<int64_t> HostTensor::asInts() const {
    std::vector<int64_t> out;
    out.reserve(values.size());
    for (double v : values) out.push_back(static_cast<int64_t>(v));
    return out;
}

std::vector<float> HostTensor::asFloats() const {
    return std::vector<float>(values.begin(), values.end());
}

Result<HostTensor> hostTensorFromProto(const onnx::TensorProto& proto, const std::string& where) {
    HostTensor t;
    t.elementType = proto.data_type();
    size_t count = 1;
    for (int64_t d : proto.dims()) {
        if (d < 0 || d > (int64_t{1} << 31))
            return invalidArgument(where + ": dimension " + std::to_string(d));
        t.dims.push_back(d);
        count *= static_cast<size_t>(d);
        if (count > (size_t{1} << 31)) return invalidArgument(where + ": more than 2^31 elements");
    }
    if (proto.data_location() == onnx::TensorProto::EXTERNAL) {
        return fail(kOnnxUnsupported, where + ": external data is not supported");
    }
    // No reserve(count): the dims are not checked against the data yet, and a header claiming
    // 2^31 elements must not allocate 16 GiB.
    if (proto.has_raw_data()) {
        NPU_TRY(appendRaw(t, proto.raw_data(), count, where));
    } else {
        NPU_TRY(appendTyped(t, proto, count, where));
    }
    return t;
}

uint32_t ModelBuilder::addOperand(hal::Operand operand) {
    model_.main.operands.push_back(std::move(operand));
    return static_cast<uint32_t>(model_.main.operands.size() - 1);
}

uint32_t appendConstant(hal::Model& model, hal::Operand operand, const void* data, size_t bytes) {
    auto& values = model.operandValues;
    values.resize((values.size() + kConstantAlignment - 1) / kConstantAlignment * kConstantAlignment);
    operand.lifetime = hal::OperandLifeTime::CONSTANT_COPY;
    operand.location = {0, static_cast<uint32_t>(values.size()), static_cast<uint32_t>(bytes), 0};
    const auto* p = static_cast<const uint8_t*>(data);
    values.insert(values.end(), p, p + bytes);
    model.main.operands.push_back(std::move(operand));
    return static_cast<uint32_t>(model.main.operands.size() - 1);
}

uint32_t ModelBuilder::addConstant(hal::OperandType type, std::vector<uint32_t> dims, const void* data,
                                   size_t bytes) {
    hal::Operand operand;
    operand.type = type;
    operand.dimensions = std::move(dims);
    return appendConstant(model_, std::move(operand), data, bytes);
}

uint32_t ModelBuilder::scalarInt(int32_t v) {
    return addConstant(hal::OperandType::INT32, {}, &v, sizeof v);
}
uint32_t ModelBuilder::scalarFloat(float v) {
    return addConstant(hal::OperandType::FLOAT32, {}, &v, sizeof v);
}
uint32_t ModelBuilder::scalarBool(bool v) {
    const uint8_t b = v ? 1 : 0;
    return addConstant(hal::OperandType::BOOL, {}, &b, 1);
}
uint32_t ModelBuilder::tensorInt(const std::vector<int32_t>& values) {
    return addConstant(hal::OperandType::TENSOR_INT32, {static_cast<uint32_t>(values.size())}, values.data(),
                       values.size() * sizeof(int32_t));
}
uint32_t ModelBuilder::tensorFloat(std::vector<uint32_t> dims, const std::vector<float>& values) {
    return addConstant(hal::OperandType::TENSOR_FLOAT32, std::move(dims), values.data(),
                       values.size() * sizeof(float));
}

uint32_t ModelBuilder::temporary(hal::OperandType type, const std::vector<int64_t>& dims) {
    hal::Operand operand;
    operand.type = type;
    operand.dimensions = toHalDims(dims);
    return addOperand(std::move(operand));
}

void ModelBuilder::addOperation(hal::OperationType type, std::vector<uint32_t> inputs,
                                std::vector<uint32_t> outputs, const OnnxNodeOrigin& origin) {
    model_.main.operations.push_back({type, std::move(inputs), std::move(outputs)});
    origins_.push_back(origin);
}

// ---- NodeContext ----------------------------------------------------------------------

NodeContext::NodeContext(const onnx::NodeProto& node, uint32_t index, int64_t opset, ModelBuilder& builder)
    : node_(node), opset_(opset), builder_(builder) {
    origin_.nodeIndex = index;
    origin_.nodeName = node.name().empty() ? "#" + std::to_string(index) : node.name();
    origin_.opType = node.op_type();
}

std::string NodeContext::where() const {
    return "node " + std::to_string(origin_.nodeIndex) + " '" + origin_.nodeName + "' (" + origin_.opType +
           ")";
}

std::unexpected<Error> NodeContext::unsupported(const std::string& reason) const {
    return fail(kOnnxUnsupported, where() + ": cannot map: " + reason);
}

size_t NodeContext::inputCount() const {
    size_t n = static_cast<size_t>(node_.input_size());
    while (n > 0 && node_.input(static_cast<int>(n - 1)).empty()) --n;
    return n;
}

bool NodeContext::hasInput(size_t i) const {
    return i < static_cast<size_t>(node_.input_size()) && !node_.input(static_cast<int>(i)).empty();
}

const Value* NodeContext::value(size_t i) const {
    if (!hasInput(i)) return nullptr;
    auto it = builder_.values().find(node_.input(static_cast<int>(i)));
    return it == builder_.values().end() ? nullptr : &it->second;
}

Result<uint32_t> NodeContext::operand(size_t i) {
    if (!hasInput(i)) return unsupported("input " + std::to_string(i) + " is absent");
    const std::string& name = node_.input(static_cast<int>(i));
    auto it = builder_.values().find(name);
    if (it == builder_.values().end())
        return unsupported("input " + std::to_string(i) + " '" + name + "' is unknown");
    Value& v = it->second;
    if (v.operand) return *v.operand;
    if (!v.constant) return unsupported("input " + std::to_string(i) + " '" + name + "' has no value");
    const HostTensor& c = *v.constant;
    std::vector<uint32_t> dims = c.dims.empty() ? std::vector<uint32_t>{1} : toHalDims(c.dims);
    if (c.elementType == onnx::TensorProto::FLOAT) {
        v.operand = builder_.tensorFloat(std::move(dims), c.asFloats());
    } else if (c.elementType == onnx::TensorProto::INT32) {
        std::vector<int32_t> ints(c.values.begin(), c.values.end());
        v.operand = builder_.addConstant(hal::OperandType::TENSOR_INT32, std::move(dims), ints.data(),
                                         ints.size() * 4);
    } else {
        return unsupported("input " + std::to_string(i) + " '" + name + "' is a constant of type " +
                           onnxTypeName(c.elementType) + ", which the HAL does not carry");
    }
    return *v.operand;
}

Result<const HostTensor*> NodeContext::constant(size_t i, const char* role) const {
    const Value* v = value(i);
    if (v == nullptr || !v->constant) {
        return unsupported(std::string("input ") + std::to_string(i) + " (" + role + ") must be a constant");
    }
    return &*v->constant;
}

Result<std::vector<int64_t>> NodeContext::dims(size_t i) const {
    const Value* v = value(i);
    if (v != nullptr && v->constant) return v->constant->dims;
    if (v == nullptr || !v->dims)
        return unsupported("the shape of input " + std::to_string(i) + " is not known");
    return *v->dims;
}

Result<uint32_t> NodeContext::rank(size_t i) const {
    return static_cast<uint32_t>(NPU_TRY(dims(i)).size());
}

Result<double> NodeContext::scalarConstant(size_t i, const char* role) const {
    const HostTensor* t = NPU_TRY(constant(i, role));
    if (t->count() != 1)
        return unsupported(std::string(role) + " has " + std::to_string(t->count()) + " values, expected 1");
    return t->values[0];
}

Result<std::vector<int64_t>> NodeContext::outputDims(size_t i, std::optional<size_t> rank) const {
    if (rank) {
        auto dims = NPU_TRY(outputDims(i));
        if (dims.size() != *rank) {
            return unsupported("output " + std::to_string(i) + " has rank " + std::to_string(dims.size()) +
                               ", expected " + std::to_string(*rank));
        }
        return dims;
    }
    if (i >= static_cast<size_t>(node_.output_size()))
        return unsupported("output " + std::to_string(i) + " is absent");
    auto it = builder_.values().find(node_.output(static_cast<int>(i)));
    if (it == builder_.values().end() || !it->second.dims) {
        return unsupported("the shape of output " + std::to_string(i) +
                           " is not known after shape inference");
    }
    return *it->second.dims;
}

const onnx::AttributeProto* NodeContext::attribute(const char* name) const {
    for (const auto& a : node_.attribute()) {
        if (a.name() == name) return &a;
    }
    return nullptr;
}

int64_t NodeContext::attrInt(const char* name, int64_t fallback) const {
    const auto* a = attribute(name);
    return a != nullptr ? a->i() : fallback;
}

float NodeContext::attrFloat(const char* name, float fallback) const {
    const auto* a = attribute(name);
    return a != nullptr ? a->f() : fallback;
}

std::vector<int64_t> NodeContext::attrInts(const char* name) const {
    const auto* a = attribute(name);
    if (a == nullptr) return {};
    return std::vector<int64_t>(a->ints().begin(), a->ints().end());
}

std::string NodeContext::attrString(const char* name, const std::string& fallback) const {
    const auto* a = attribute(name);
    return a != nullptr ? a->s() : fallback;
}

Result<uint32_t> NodeContext::output(size_t i, hal::OperandType type) {
    const auto dims = NPU_TRY(outputDims(i));
    Value& v = builder_.values()[node_.output(static_cast<int>(i))];
    if (dims.empty())
        return unsupported("output " + std::to_string(i) + " is a rank-0 tensor, which the HAL lacks");
    v.operand = builder_.temporary(type, dims);
    v.elementType =
        type == hal::OperandType::TENSOR_INT32 ? onnx::TensorProto::INT32 : onnx::TensorProto::FLOAT;
    v.dims = dims;
    return *v.operand;
}

Result<uint32_t> NodeContext::outputQuant(size_t i, hal::OperandType type, float scale, int32_t zeroPoint) {
    const uint32_t index = NPU_TRY(output(i, type));
    auto& operand = builder_.model().main.operands[index];
    operand.scale = scale;
    operand.zeroPoint = zeroPoint;
    builder_.values()[node_.output(static_cast<int>(i))].elementType =
        type == hal::OperandType::TENSOR_QUANT8_ASYMM ? onnx::TensorProto::UINT8 : onnx::TensorProto::INT8;
    return index;
}

uint32_t NodeContext::temporary(const std::vector<int64_t>& dims) {
    return builder_.temporary(hal::OperandType::TENSOR_FLOAT32, dims);
}

void NodeContext::bindConstant(size_t i, HostTensor value) {
    Value& v = builder_.values()[node_.output(static_cast<int>(i))];
    v.dims = value.dims;
    v.elementType = value.elementType;
    v.constant = std::move(value);
}

void NodeContext::emit(hal::OperationType type, std::vector<uint32_t> inputs, std::vector<uint32_t> outputs) {
    builder_.addOperation(type, std::move(inputs), std::move(outputs), origin_);
}

// ---- helpers ----------------------------------------------------------------------------

uint32_t normalizeAxis(int64_t axis, uint32_t rank) {
    return static_cast<uint32_t>(axis < 0 ? axis + rank : axis);
}

Status checkAxis(const NodeContext& ctx, int64_t axis, uint32_t rank, const char* what) {
    if (axis < -static_cast<int64_t>(rank) || axis >= static_cast<int64_t>(rank)) {
        return ctx.unsupported(std::string(what) + " " + std::to_string(axis) + " is outside a rank-" +
                               std::to_string(rank) + " tensor");
    }
    return {};
}

std::vector<uint32_t> toHalDims(const std::vector<int64_t>& dims) {
    std::vector<uint32_t> out;
    out.reserve(dims.size());
    for (int64_t d : dims) out.push_back(static_cast<uint32_t>(d));
    return out;
}

int64_t product(const std::vector<int64_t>& dims, size_t from, size_t to) {
    int64_t p = 1;
    for (size_t i = from; i < dims.size() && i < to; ++i) p *= dims[i];
    return p;
}

}  // namespace npu::framework::onnx_import

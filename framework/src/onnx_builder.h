#pragma once
// Internal to the ONNX importer: the HAL model under construction, the table from ONNX tensor
// names to HAL operands or host constants, and what one node's mapper sees (NodeContext).

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "npu/framework/onnx_import.h"

namespace npu::framework::onnx_import {

// A constant known at import (an initializer, a folded Constant node, a fixed input), widened
// to double so one code path serves float and integer data.
struct HostTensor {
    int32_t elementType = 1;
    std::vector<int64_t> dims;
    std::vector<double> values;

    size_t count() const { return values.size(); }
    std::vector<int64_t> asInts() const;
    std::vector<float> asFloats() const;
};

Result<HostTensor> hostTensorFromProto(const onnx::TensorProto& proto, const std::string& where);

// One ONNX tensor name as the importer knows it.
struct Value {
    std::optional<uint32_t> operand;           // HAL operand holding it at run time (or once emitted)
    std::optional<HostTensor> constant;        // its value, when known at import
    int32_t elementType = 0;                   // ONNX element type; 0 = unknown
    std::optional<std::vector<int64_t>> dims;  // fully known static shape, when known
};

class ModelBuilder {
public:
    hal::Model& model() { return model_; }
    std::vector<OnnxNodeOrigin>& origins() { return origins_; }

    uint32_t addOperand(hal::Operand operand);
    uint32_t addConstant(hal::OperandType type, std::vector<uint32_t> dims, const void* data, size_t bytes);
    uint32_t scalarInt(int32_t v);
    uint32_t scalarFloat(float v);
    uint32_t scalarBool(bool v);
    uint32_t tensorInt(const std::vector<int32_t>& values);
    uint32_t tensorFloat(std::vector<uint32_t> dims, const std::vector<float>& values);
    uint32_t temporary(hal::OperandType type, const std::vector<int64_t>& dims);
    void addOperation(hal::OperationType type, std::vector<uint32_t> inputs, std::vector<uint32_t> outputs,
                      const OnnxNodeOrigin& origin);

    std::unordered_map<std::string, Value>& values() { return values_; }

private:
    hal::Model model_;
    std::vector<OnnxNodeOrigin> origins_;
    std::unordered_map<std::string, Value> values_;
};

// What a mapper sees: the node, its attributes, its inputs as operands or constants.
class NodeContext {
public:
    NodeContext(const onnx::NodeProto& node, uint32_t index, int64_t opset, ModelBuilder& builder);

    const onnx::NodeProto& node() const { return node_; }
    int64_t opset() const { return opset_; }
    ModelBuilder& builder() { return builder_; }
    const OnnxNodeOrigin& origin() const { return origin_; }

    // kOnnxUnsupported naming the node, its operator and `reason`.
    std::unexpected<Error> unsupported(const std::string& reason) const;
    std::string where() const;

    size_t inputCount() const;  // trailing empty names excluded
    bool hasInput(size_t i) const;
    const Value* value(size_t i) const;
    // The runtime operand of input i (a constant input is emitted as a HAL constant). Only float32
    // and int32 data are carried at run time.
    Result<uint32_t> operand(size_t i);
    // Input i's value; an error when it is not known at import.
    Result<const HostTensor*> constant(size_t i, const char* role) const;
    Result<std::vector<int64_t>> dims(size_t i) const;  // fully known shape of input i
    // Output i's inferred shape; with `rank`, an error unless it has that rank.
    Result<std::vector<int64_t>> outputDims(size_t i, std::optional<size_t> rank = std::nullopt) const;
    // The single value of constant input i (a scalar or one-element tensor).
    Result<double> scalarConstant(size_t i, const char* role) const;
    Result<uint32_t> rank(size_t i) const;

    // Attributes (defaults when absent).
    const onnx::AttributeProto* attribute(const char* name) const;
    int64_t attrInt(const char* name, int64_t fallback) const;
    float attrFloat(const char* name, float fallback) const;
    std::vector<int64_t> attrInts(const char* name) const;
    std::string attrString(const char* name, const std::string& fallback) const;

    // A new temporary operand for output i, bound to its name; float32 unless said otherwise.
    Result<uint32_t> output(size_t i, hal::OperandType type = hal::OperandType::TENSOR_FLOAT32);
    // A new quantized temporary for output i (TENSOR_QUANT8_ASYMM or _SIGNED), bound to its name.
    Result<uint32_t> outputQuant(size_t i, hal::OperandType type, float scale, int32_t zeroPoint);
    // A new float32 temporary with the given shape (an intermediate of a multi-operation mapping).
    uint32_t temporary(const std::vector<int64_t>& dims);
    // Binds output i to a value computed at import.
    void bindConstant(size_t i, HostTensor value);
    void emit(hal::OperationType type, std::vector<uint32_t> inputs, std::vector<uint32_t> outputs);

private:
    const onnx::NodeProto& node_;
    int64_t opset_;
    ModelBuilder& builder_;
    OnnxNodeOrigin origin_;
};

// Bytes per element of an ONNX tensor type the importer takes (0: a type it does not take).
size_t onnxElementSize(int32_t type);

using Mapper = Status (*)(NodeContext&);
// The mapper of an ONNX operator of the default domain; nullptr when there is none.
Mapper findMapper(const std::string& opType);
// Operators whose every mapper lives in onnx_ops_*.cpp (one table per file).
void registerTensorOps(std::unordered_map<std::string, Mapper>& table);
void registerNnOps(std::unordered_map<std::string, Mapper>& table);
void registerQuantOps(std::unordered_map<std::string, Mapper>& table);
// ONNX conv weights [O, I, kh, kw] -> HAL OHWI [O, kh, kw, I] (any element values).
std::vector<double> toOhwiValues(const HostTensor& w);
// Replaces Shape (of a tensor whose shape is inferred), Cast, Slice, Concat, Gather, Squeeze and
// Unsqueeze nodes of small integer constants by initializers (onnx_fold_shapes.cpp). Returns how
// many nodes it folded; shape inference must run again when any was.
Result<size_t> foldShapeComputations(onnx::ModelProto& model, int64_t opset, const std::string& where);
// Inputs a node reads only for their shape or value at import (never at run time).
bool isImportOnlyInput(const std::string& opType, size_t inputIndex);

// A 2-D window (Conv, pools): kernel, strides, dilations, explicit pads (auto_pad resolved).
struct Window2d {
    int64_t kh = 1, kw = 1, strideH = 1, strideW = 1, dilH = 1, dilW = 1;
    int64_t padT = 0, padL = 0, padB = 0, padR = 0;
};
// kernel_shape (or `kernel`, the weights' spatial dims), strides, dilations, pads or auto_pad of
// a node whose input has shape `in` (rank 4, NCHW).
Result<Window2d> windowOf(NodeContext& ctx, const std::vector<int64_t>& in, std::vector<int64_t> kernel);

// The graph passes of the import before mapping, on a parsed model: the checker, fixed inputs and
// input shapes, opset upgrade, Constant folding, shape inference, shape-chain folding,
// BatchNormalization folding. Fills out's opset and fold counts.
Status prepareOnnxProto(onnx::ModelProto& proto, const OnnxImportOptions& options, const std::string& where,
                        OnnxImportedModel& out);
// QDQ fusion on the mapped HAL model (onnx_qdq_fuse.cpp); returns how many operations it removed.
Result<size_t> fuseQuantDequant(hal::Model& model, std::vector<OnnxNodeOrigin>& origins,
                                const std::string& where);

// NCHW -> NHWC of a model with quant8 convolutions (onnx_layout.cpp); returns the TRANSPOSEs it
// inserted (0: the model is unchanged).
size_t convertToNhwc(hal::Model& model, std::vector<OnnxNodeOrigin>& origins);

// The whole file's bytes (INVALID_ARGUMENT naming the path when it cannot be read).
Result<std::string> readFileBytes(const std::string& path);
// Appends a CONSTANT_COPY operand holding `bytes` (8-byte aligned in operandValues); its index.
uint32_t appendConstant(hal::Model& model, hal::Operand operand, const void* data, size_t bytes);

// Shared helpers of the mappers.
uint32_t normalizeAxis(int64_t axis, uint32_t rank);  // caller has checked -rank <= axis < rank
Status checkAxis(const NodeContext& ctx, int64_t axis, uint32_t rank, const char* what);
std::vector<uint32_t> toHalDims(const std::vector<int64_t>& dims);
int64_t product(const std::vector<int64_t>& dims, size_t from = 0, size_t to = SIZE_MAX);

}  // namespace npu::framework::onnx_import

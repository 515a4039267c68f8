#pragma once
// Import of ONNX models (opsets 9-17; older ones are first upgraded to 9 by libonnx's version
// converter) into HAL models, through Debian's libonnx: its generated protobuf classes, its
// checker, version converter and shape inference (no hand-written schema). The graph keeps
// ONNX's NCHW layout: the HAL operations that have a layout flag are given layout = NCHW.
// No exceptions leave this module: libonnx's and protobuf's errors become npu::Error values.
//
// Error statuses: a file that cannot be read or a model the ONNX checker rejects is
// INVALID_ARGUMENT; a valid model this importer cannot map (an operator, attribute or data type
// it does not take) is kOnnxUnsupported, and its message names the node, its operator and why.

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "npu/hal/result.h"
#include "npu/hal/types.h"

namespace npu::framework {

inline constexpr hal::ErrorStatus kOnnxUnsupported = hal::ErrorStatus::GENERAL_FAILURE;
inline constexpr int64_t kOnnxMinOpset = 9;
inline constexpr int64_t kOnnxMaxOpset = 17;

// A tensor on the host: a graph input or output, or the value in a .pb / .npy file.
// elementType is the ONNX TensorProto data type (1 = FLOAT, 6 = INT32, 7 = INT64, ...);
// data holds the elements packed little-endian in that type.
struct OnnxTensor {
    std::string name;
    int32_t elementType = 1;
    std::vector<int64_t> dims;
    std::vector<uint8_t> data;

    size_t elementCount() const;
};

struct OnnxImportOptions {
    // Shapes of graph inputs with dynamic dimensions (e.g. "x" -> {1, 3, 224, 224}); applied
    // before shape inference. A given shape must agree with every static dimension.
    std::map<std::string, std::vector<int64_t>> inputShapes;
    // Graph inputs whose values are fixed at import: they become constants (initializers) before
    // shape inference. The HAL has no 64-bit integer tensors, so an int64 input (a shape, axes,
    // pads) can only be taken this way.
    std::map<std::string, OnnxTensor> fixedInputs;
    // Shapes of the run-time graph inputs in order (those neither initializers nor fixed), as the
    // input files give them; an input named in inputShapes keeps that shape. An empty entry gives
    // none (a file whose shape the model decides: .raw bytes, a PNG image).
    std::vector<std::vector<int64_t>> orderedInputShapes;
    // A model with quant8 convolutions (what the NPU takes) is rewritten to NHWC, with TRANSPOSEs
    // only where NHWC meets NCHW (onnx_layout.cpp); true keeps ONNX's NCHW throughout.
    bool keepNchw = false;
};

// Where a HAL operation came from.
struct OnnxNodeOrigin {
    uint32_t nodeIndex = 0;  // in the ONNX graph, after constant folding
    std::string nodeName;    // the node's name, or "#index" when it has none
    std::string opType;
};

struct OnnxImportedModel {
    hal::Model model;
    std::vector<std::string> inputNames;   // one per model.main.inputIndexes
    std::vector<std::string> outputNames;  // one per model.main.outputIndexes
    std::vector<OnnxNodeOrigin> origins;   // one per model.main.operations
    int64_t opset = 0;                     // the default domain's opset (after any upgrade)
    int64_t originalOpset = 0;             // as in the file; < 9 is upgraded by libonnx's converter
    size_t onnxNodes = 0;                  // nodes left after constant folding
    size_t foldedConstants = 0;            // Constant nodes folded into initializers
    size_t foldedBatchNorms = 0;           // BatchNormalization nodes folded into a Conv
    size_t fusedQdqOperations = 0;         // QUANTIZE / DEQUANTIZE removed by QDQ fusion
    size_t layoutTransposes = 0;           // TRANSPOSEs of the NHWC rewrite (0: NCHW as in ONNX)
};

Result<OnnxImportedModel> importOnnxModel(const std::string& path, const OnnxImportOptions& options = {});
// `where` names the source in error messages (a path or "memory").
Result<OnnxImportedModel> importOnnxModelBytes(std::string_view bytes, const OnnxImportOptions& options,
                                               const std::string& where);

// Reads a serialized onnx.TensorProto (.pb) or a NumPy array (.npy, little-endian, C order).
Result<OnnxTensor> loadOnnxTensorFile(const std::string& path);
Result<OnnxTensor> parseOnnxTensorProto(std::string_view bytes, const std::string& where);

// "FLOAT", "INT64", ... for messages.
std::string onnxTypeName(int32_t elementType);
// The HAL operand type of an ONNX element type the importer carries at run time: FLOAT ->
// TENSOR_FLOAT32, INT32 -> TENSOR_INT32, UINT8 -> TENSOR_QUANT8_ASYMM, INT8 ->
// TENSOR_QUANT8_ASYMM_SIGNED (the quantized ones take their scale and zero point from the
// QuantizeLinear / DequantizeLinear / QLinear* node that reads or writes them); nullopt otherwise.
// And back: the ONNX element type of a HAL tensor type.
std::optional<hal::OperandType> halTypeOfOnnx(int32_t elementType);
int32_t onnxTypeOfHal(hal::OperandType type);

// The ONNX backend-test comparison: |actual - expected| <= atol + rtol * |expected| for each
// element (numpy.testing.assert_allclose with the backend's defaults rtol 1e-3, atol 1e-7).
// Returns an empty string when they agree, else a message naming the element and the values.
std::string compareOnnxTensors(const OnnxTensor& expected, const OnnxTensor& actual, double rtol = 1e-3,
                               double atol = 1e-7);

}  // namespace npu::framework

#pragma once
// Running an imported ONNX model on one hal::IDevice: host tensors in, host tensors out.

#include <vector>

#include "npu/framework/onnx_import.h"
#include "npu/hal/device.h"

namespace npu::framework {

struct OnnxRunResult {
    std::vector<OnnxTensor> outputs;  // in model.outputNames order, named
    hal::ExecutionResult execution;
};

// Inputs are matched to the model's inputs by name (an unnamed tensor takes the next input in
// order); each must have the input's element type and shape. Fails with the device's error, or
// kOnnxUnsupported naming the first operation the device does not take.
Result<OnnxRunResult> runOnnxModel(hal::IDevice& device, const OnnxImportedModel& model,
                                   const std::vector<OnnxTensor>& inputs);

// The pieces of runOnnxModel for other executors (partitioned runs): the input tensors as byte
// buffers in model input order (checked as above), and output buffers as named tensors.
Result<std::vector<std::vector<uint8_t>>> onnxInputBuffers(const OnnxImportedModel& model,
                                                           const std::vector<OnnxTensor>& inputs);
std::vector<OnnxTensor> onnxOutputTensors(const OnnxImportedModel& model,
                                          std::vector<std::vector<uint8_t>> buffers);

}  // namespace npu::framework

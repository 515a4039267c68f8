#pragma once
// Post-training quantization of a float ONNX model (`npu quantize`): the model runs in float on
// a device (the CPU reference) over calibration inputs, every activation's range is recorded
// (min / max, or a percentile of the values), and a QDQ ONNX model is written: each quantized
// activation t becomes QuantizeLinear -> t_q -> DequantizeLinear -> t (asymmetric uint8, or int8),
// each Conv whose input is quantized becomes a QLinearConv with symmetric int8 weights per output
// channel and an int32 bias. The importer maps QLinearConv to quant8 CONV_2D / DEPTHWISE_CONV_2D /
// GROUPED_CONV_2D and fuses the QDQ pairs around the other operators (onnx_qdq_fuse.cpp), so the
// quantized model runs in quant8 on the NPU. Before calibration, Div by a constant becomes Mul by
// its reciprocal and HardSigmoid becomes Mul, Add and Clip, so each step has a named, calibrated
// tensor (the NPU has no DIV). The written model has opset >= 10 (QuantizeLinear) and the
// calibration's fixed input shapes.

#include <cstdint>
#include <string>
#include <vector>

#include "npu/framework/onnx_import.h"
#include "npu/hal/device.h"

namespace npu::framework {

struct OnnxQuantizeOptions {
    enum class Method { MinMax, Percentile };
    Method method = Method::MinMax;
    double percentile = 99.99;       // Percentile: the range is [q(100 - p), q(p)] of the values seen
    bool signedActivations = false;  // int8 activations (TENSOR_QUANT8_ASYMM_SIGNED) instead of uint8
    OnnxImportOptions import;        // input shapes (the calibration inputs give them otherwise)
};

struct OnnxQuantizeReport {
    size_t samples = 0;
    size_t quantizedTensors = 0;  // activations given QuantizeLinear / DequantizeLinear
    size_t quantizedConvs = 0;    // Conv -> QLinearConv
    size_t floatNodes = 0;        // nodes left in float (operators the quantizer does not take)
    size_t rewrittenNodes = 0;    // Div by a constant, HardSigmoid, decomposed before calibration
    int64_t opset = 0;            // of the written model
    std::string comparedOutput;   // the output the accuracy is measured on (the last one)
    bool classifier = false;      // that output is 2-D [batch, classes > 1]
    double top1Agreement = -1;    // classifiers: share of rows whose argmax agrees with float
    double maxAbsError = 0;       // over all elements of that output, quantized vs float
    double meanAbsError = 0;
};

// Quantizes the model at `path`. calibration: per sample, the model's run-time inputs in order.
// `device` runs both the float calibration and the quantized model's evaluation.
// Returns the serialized quantized onnx.ModelProto.
Result<std::string> quantizeOnnxModel(const std::string& path,
                                      const std::vector<std::vector<OnnxTensor>>& calibration,
                                      hal::IDevice& device, const OnnxQuantizeOptions& options,
                                      OnnxQuantizeReport* report);

// Calibration inputs from a directory of .npy / .pb files, sorted by name: each consecutive group
// of `inputsPerSample` files is one sample (one file per sample for a single-input model).
Result<std::vector<std::vector<OnnxTensor>>> loadCalibrationDir(const std::string& dir,
                                                                size_t inputsPerSample);

// `count` samples of uniform values in [-1, 1) from a seeded generator (std::mt19937), for the
// float run-time inputs of `model` (imported with the shapes the calibration will use).
Result<std::vector<std::vector<OnnxTensor>>> randomCalibration(const OnnxImportedModel& model, size_t count,
                                                               uint32_t seed);

}  // namespace npu::framework

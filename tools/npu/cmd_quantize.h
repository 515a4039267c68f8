#pragma once
// npu quantize MODEL.onnx (--calibration DIR | --calibration-random N) -o OUT.onnx: post-training
// quantization of a float ONNX model into a QDQ / QLinearConv model (framework/onnx_quantize.h),
// with its accuracy against the float model on the calibration set (docs/onnx.md).
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace npu::tools {

class QuantizeCli {
public:
    explicit QuantizeCli(CLI::App& app);
    bool parsed() const;
    int run() const;  // 0 ok, 1 failure, 2 bad usage or input, 3 unsupported model

private:
    CLI::App* cmd_ = nullptr;
    std::string model_;
    std::string output_;
    std::string calibrationDir_;
    size_t randomSamples_ = 0;
    uint32_t seed_ = 1;
    std::string method_ = "minmax";
    double percentile_ = 99.99;
    std::string activations_ = "uint8";
    std::vector<std::string> inputShapes_;
    bool json_ = false;
};

}  // namespace npu::tools

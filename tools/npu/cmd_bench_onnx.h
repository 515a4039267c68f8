#pragma once
// npu bench onnx MODEL.onnx: one ONNX model on the reference device, on the NPU (partitioned,
// simulator, reference as CPU fallback) and, with --compare-onnxruntime, on ONNX Runtime
// single-threaded (tools/onnxruntime/run.js), with the outputs compared (docs/onnx.md).
#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "device_factory.h"

namespace npu::tools {

class BenchOnnxCli {
public:
    // Adds `onnx` under the `bench` subcommand.
    explicit BenchOnnxCli(CLI::App& bench);
    bool parsed() const;
    int run() const;  // 0 ok, 1 a run failed or outputs disagree, 2 bad input, 3 unsupported

private:
    CLI::App* cmd_ = nullptr;
    std::string model_;
    std::vector<std::string> inputShapes_;
    std::string hwConfig_;
    uint32_t runs_ = 5;
    bool json_ = false;
    bool compareOnnxRuntime_ = false;
};

}  // namespace npu::tools

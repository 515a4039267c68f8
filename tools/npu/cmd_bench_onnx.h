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

struct BenchOnnxOptions {
    std::string model;
    std::vector<std::string> inputShapes;
    std::string hwConfig;
    uint32_t runs = 5;
    bool json = false;
    bool compareOnnxRuntime = false;
};
// The benchmark itself (also `npu bench model MODEL.onnx`): 0 ok, 1 a run failed or outputs
// disagree, 2 bad input, 3 unsupported.
int benchOnnx(const BenchOnnxOptions& options);

class BenchOnnxCli {
public:
    // Adds `onnx` under the `bench` subcommand.
    explicit BenchOnnxCli(CLI::App& bench);
    bool parsed() const;
    int run() const;  // 0 ok, 1 a run failed or outputs disagree, 2 bad input, 3 unsupported

private:
    CLI::App* cmd_ = nullptr;
    BenchOnnxOptions o_;
};

}  // namespace npu::tools

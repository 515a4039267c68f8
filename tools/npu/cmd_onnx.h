#pragma once
// npu onnx run MODEL.onnx: import an ONNX model, run it on a device (npu: partitioned, with
// the reference as CPU fallback), print the outputs and, with --explain, where each node ran.
// npu onnx conformance [DIR]: the ONNX backend node tests (libonnx-testdata) on a device.
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "device_factory.h"

namespace npu::tools {

class OnnxCli {
public:
    explicit OnnxCli(CLI::App& app);
    bool parsed() const;
    int run() const;  // 0 ok, 1 failure or mismatch, 2 bad usage or input, 3 unsupported

private:
    int runModel() const;
    int runConformance() const;

    CLI::App* cmd_ = nullptr;
    CLI::App* run_ = nullptr;
    CLI::App* conformance_ = nullptr;
    DeviceChoice choice_;
    std::string model_;
    std::vector<std::string> inputs_;
    std::vector<std::string> inputShapes_;  // name=1x3x224x224
    std::vector<std::string> fixed_;        // name=FILE.pb: an input's value fixed at import
    std::string dir_;
    std::vector<std::string> filters_;
    bool json_ = false;
    bool verbose_ = false;
    bool explain_ = false;
};

}  // namespace npu::tools

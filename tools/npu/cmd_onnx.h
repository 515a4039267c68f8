#pragma once
// npu onnx run MODEL.onnx: import an ONNX model, run it on a device (npu: partitioned, with
// the reference as CPU fallback), print the outputs and, with --explain, where each node ran.
// npu onnx conformance [DIR]: the ONNX backend node tests (libonnx-testdata) on a device.
#include <CLI/CLI.hpp>
#include <map>
#include <string>
#include <vector>

#include "device_factory.h"
#include "npu/framework/onnx_import.h"

namespace npu::tools {

// Shared with npu bench onnx (cmd_bench_onnx.cpp).
// "x=1x3x224x224" -> {"x", {1, 3, 224, 224}}.
Result<std::pair<std::string, std::vector<int64_t>>> parseInputShape(const std::string& text);
// Every --input-shape value, by input name.
Result<std::map<std::string, std::vector<int64_t>>> parseInputShapes(const std::vector<std::string>& texts);
// The elements as numbers: FLOAT, INT32, UINT8 or INT8.
std::vector<double> valuesOf(const framework::OnnxTensor& t);
std::string dimsText(const std::vector<int64_t>& dims);
// Deterministic input i when the user gives none: a ramp in [-1, 1) (integers: 0..6, 0..255).
framework::OnnxTensor syntheticInput(const framework::OnnxImportedModel& m, size_t i);

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

#pragma once
// npu run --builtin NAME and npu bench model --builtin NAME: whole built-in networks through the
// stack (builtin_networks.h), CPU fallback for what the NPU does not claim, per-layer profiles.

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "device_factory.h"
#include "model_run.h"

namespace npu::tools {

// Profile files of `npu run` (a built-in network or a test vector).
struct ProfileFiles {
    std::string csv, trace;
};

struct BuiltinRunOptions {
    std::string name;
    uint32_t inputSize = 0;  // 0: the network's own
    ProfileFiles files;
};

// npu run --builtin NAME: the network on the chosen device (npu: each operation the NPU does not
// claim on the CPU reference) and on the reference; outputs must be bit-exact. Exit 0 match, 1
// mismatch or failure, 2 bad input.
int cmdRunBuiltin(const DeviceChoice& choice, const BuiltinRunOptions& options, bool json);

// A model run on the chosen device (npu: each operation the NPU does not claim on the CPU
// reference) and, on the NPU, compared with the reference's outputs for the whole model.
struct CheckedRun {
    NetworkRun run;
    bool compared = false;
    std::string difference;  // empty: bit-exact
    shim::NpuInfo hw;
    double hostMs = 0;  // host time of the partitioned run (partition prepares included)
};
Result<CheckedRun> runNetworkChecked(const DeviceChoice& choice, const framework::TestCase& testCase,
                                     const std::vector<std::string>& names);

// The per-layer table of `npu run` (cycles, utilization, roofline, DRAM bytes, device).
std::string layerTable(const NetworkRun& run);
uint64_t rooflineTotal(const NetworkRun& run);
// "65 SOFTMAX head/softmax" for each operation not on `first`.
std::vector<std::string> fallbackOperations(const NetworkRun& run, const std::string& first);

// Writes the CSV and trace files asked for; false (and a message) when one cannot be written.
bool writeProfileFiles(const ProfileFiles& files, const NetworkRun& run, const std::string& modelName,
                       uint64_t clockHz);

// npu bench model --builtin NAME [--input-size N] [--json] [--no-autotune] [--hw-config FILE];
// npu bench model MODEL.onnx [--compare-onnxruntime] [--runs N] [--input-shape ...] is
// `npu bench onnx` (cmd_bench_onnx.h).
class BenchModelCli {
public:
    explicit BenchModelCli(CLI::App& bench);
    bool parsed() const { return cmd_->parsed(); }
    int run();

private:
    CLI::App* cmd_;
    DeviceChoice choice_;
    std::string name_;
    uint32_t inputSize_ = 0;
    bool json_ = false;
    std::string onnxModel_;
    std::vector<std::string> inputShapes_;
    uint32_t runs_ = 5;
    bool compareOnnxRuntime_ = false;
};

}  // namespace npu::tools

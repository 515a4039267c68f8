#pragma once
// npu bench sim: the simulator's host speed on a MobileNet-v2-sized int8 workload, against the
// same arithmetic on XNNPACK's int8 operators (single-threaded), in one run.
#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "npu/hwsim/mobilenet_workload.h"

namespace npu::tools {

class BenchSimCli {
public:
    // Adds `sim` under the `bench` subcommand.
    explicit BenchSimCli(CLI::App& bench);
    bool parsed() const;
    int run() const;  // 0 ok, 1 failed (the run or the output check), 2 bad input

private:
    CLI::App* cmd_ = nullptr;
    bool json_ = false;
    bool checkReference_ = false;
    uint32_t inputSize_ = 224;
    uint32_t repeat_ = 5;
    uint32_t deviceMemoryMiB_ = 32;
    std::string hwConfig_;
    std::string hostKernel_;
};

// The XNNPACK baseline: every layer of `w` with XNNPACK's qs8 convolution (NULL threadpool),
// reading each layer's input from `dram` and writing its output to outputs[i]. `hostMs` is the
// time of the setup + run calls (operator creation, i.e. weight packing, excluded). Fails with
// XNNPACK's status and the layer.
sim::Result<void> runXnnpackBaseline(const sim::workload::Workload& w, const std::vector<uint8_t>& dram,
                                     std::vector<std::vector<int8_t>>& outputs, double* hostMs);

// XNNPACK requantizes in fp32 (round to nearest even) where the NPU and reference/ use TFLite's
// fixed-point multiplier (double rounding, ties away from zero): outputs may differ by 1.
inline constexpr int kXnnpackTolerance = 1;

}  // namespace npu::tools

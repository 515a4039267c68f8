#pragma once
// npu conformance: runs CTS vector files, and directories of ONNX backend tests, against a device
// in worker processes and prints passed / failed / unsupported / errors per operation and data type.
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "device_factory.h"

namespace npu::tools {

class ConformanceCli {
public:
    // Adds the `conformance` subcommand and its options to `app`.
    explicit ConformanceCli(CLI::App& app);
    bool parsed() const;
    int run() const;  // exit code: 0 nothing failed or errored, 1 otherwise, 2 bad usage or input

private:
    int execute() const;
    void warnInapplicableFlags() const;

    CLI::App* cmd_ = nullptr;
    DeviceChoice choice_;
    std::vector<std::string> files_;
    std::vector<std::string> filters_;
    bool json_ = false;
    bool progress_ = false;
    bool all_ = false;
    bool verbose_ = false;
    bool noFallback_ = false;  // ONNX tests on --device npu: no CPU fallback (unsupported instead)
    int jobs_ = 0;             // 0 = number of online CPUs
    double timeoutSeconds_ = 30.0;
};

}  // namespace npu::tools

#pragma once
// npu stress: the stress engine (stress_engine.h) for a lab, for as long as it likes.
#include <CLI/CLI.hpp>

#include "stress_engine.h"

namespace npu::tools {

class StressCli {
public:
    // Adds the `stress` subcommand and its options to `app`.
    explicit StressCli(CLI::App& app);
    bool parsed() const;
    int run() const;  // exit code: 0 passed, 1 something lost, answered twice or wrong, 2 bad input

private:
    CLI::App* cmd_ = nullptr;
    StressOptions options_;
    bool json_ = false;
};

}  // namespace npu::tools

// npu stress --duration S [--faults RATE] [--transport loopback|unix] [--clients N] [--threads N]
//            [--seed N] [--json]
#include "cmd_stress.h"

#include <fmt/format.h>

#include "cli_checks.h"

namespace npu::tools {

StressCli::StressCli(CLI::App& app) {
    cmd_ = app.add_subcommand(
        "stress", "Concurrent clients with injected faults; every answer checked against the reference");
    cmd_->add_option("--duration", options_.durationSeconds, "seconds of load (default 30)")
        ->check(finiteNumberIn(1, 604800, " s"));
    cmd_->add_option(
            "--faults", options_.faultRate,
            "probability per request of an injected fault: NPU hang, DMA error, SRAM flip, host crash, "
            "wedge (default 0.01)")
        ->check(finiteNumberIn(0, 1));
    cmd_->add_option("--transport", options_.transport,
                     "loopback (a firmware thread per client) or unix (npu-fwd)")
        ->check(CLI::IsMember({"loopback", "unix"}));
    cmd_->add_option("--clients", options_.clients, "client processes (default 2)")
        ->check(wholeNumberIn(1, 16));
    cmd_->add_option("--threads", options_.threads, "worker threads per client (default 2)")
        ->check(wholeNumberIn(1, 32));
    cmd_->add_option("--seed", options_.seed, "random seed (default: from the clock; always printed)");
    cmd_->add_flag("--json", json_, "print JSON");
}

bool StressCli::parsed() const {
    return cmd_->parsed();
}

int StressCli::run() const {
    auto report = runStress(options_);
    if (!report) {
        fmt::print(stderr, "npu stress: {}\n", report.error().message);
        return report.error().status == hal::ErrorStatus::INVALID_ARGUMENT ? 2 : 1;
    }
    if (json_) {
        fmt::print("{}\n", stressReportJson(*report).dump(2));
    } else {
        printStressReport(*report);
    }
    return report->passed() ? 0 : 1;
}

}  // namespace npu::tools

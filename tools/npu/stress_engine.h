#pragma once
// The stress engine of `npu stress` and of the stress test suite (tests/stress compiles this
// file too): client processes, each with worker threads on one NPU device (loopback, or all on
// one npu-fwd daemon over unix), run a mix of models (the demo network and CTS quant8 vectors)
// with random injected faults (NPU hang, DMA error, SRAM bit flip with ECC, firmware host crash,
// a wedged item thread that still answers pings) and deadlines. Every answer is compared bit for bit with the
// CPU reference's. The run passes when no request was lost, none was answered twice and none was answered
// wrongly (docs/reliability.md).

#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "npu/hal/result.h"
#include "npu/shim/npu_device.h"

namespace npu::tools {

struct StressOptions {
    double durationSeconds = 30;
    double faultRate = 0.01;             // probability, per request, that a fault is injected first
    std::string transport = "loopback";  // loopback | unix
    int clients = 2;                     // client processes
    int threads = 2;                     // worker threads per client
    uint64_t seed = 0;                   // 0: taken from the clock (always printed)
    std::string daemonPath;              // unix: the npu-fwd to start (empty: the shim's search)
    double deadlineShare = 0.1;          // share of requests given a deadline (half of them tight)
    // The devices' execute timeout: a wedge is found once an execution times out, so it is short
    // (the stress models run in milliseconds); the shim's default is 30 s.
    std::chrono::milliseconds executeTimeout{5000};
};

struct StressReport {
    uint64_t seed = 0;
    double seconds = 0;
    int clients = 0, threads = 0;
    std::string transport;
    std::vector<std::string> models;
    // Requests and what became of them; every request ends in exactly one of these.
    uint64_t requests = 0, correct = 0, wrong = 0, lost = 0, answeredTwice = 0;
    uint64_t failedDataFault = 0;  // failed with the data-fault error (DMA error, SRAM ECC)
    uint64_t missedDeadline = 0;   // failed with MISSED_DEADLINE_* (only requests with a deadline)
    uint64_t failedOther = 0;      // any other error (a recovery that gave up, ...)
    // Faults injected.
    uint64_t faults = 0, faultHang = 0, faultDma = 0, faultSram = 0, faultCrash = 0, faultWedge = 0;
    shim::NpuCounters counters;         // summed over the clients (the shim's own counters)
    std::vector<std::string> problems;  // the first messages of wrong, lost or other failures
    bool passed() const { return lost == 0 && answeredTwice == 0 && wrong == 0 && requests > 0; }
};

// Runs the engine. Forks the client processes, so call it before this process starts threads.
Result<StressReport> runStress(const StressOptions& options);

nlohmann::json stressReportJson(const StressReport& report);
void printStressReport(const StressReport& report);

// The shim's reliability counters, for `npu info` and `npu stress`.
nlohmann::json reliabilityJson(const shim::NpuCounters& counters);
void printReliability(const shim::NpuCounters& counters);

}  // namespace npu::tools

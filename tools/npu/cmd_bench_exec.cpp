// npu bench exec: the per-execution overhead of each execution mode (synchronous, asynchronous
// with a callback, fenced, burst) for a one-operation model over loopback and unix, next to a
// bare Unix-socket round trip measured in the same run (docs/execution.md).
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "npu/hal/execution_callback.h"
#include "npu/hal/sync_fence.h"
#include "npu/shim/npu_device.h"
#include "rpc_timing.h"

namespace npu::tools {
namespace {

constexpr auto kWait = std::chrono::seconds(10);
const char* const kModes[] = {"sync", "async", "fenced", "burst"};

// Median microseconds per execution of each mode on one device; -1 where a mode fails.
std::array<double, 4> measureModes(std::unique_ptr<proto::Transport> transport, int iterations) {
    std::array<double, 4> us = {-1, -1, -1, -1};
    auto device = shim::createNpuDevice(std::move(transport));
    if (!device) return us;
    const framework::TestCase tc = oneAddCase();
    auto prepared = (*device)->prepareModel(tc.model);
    auto request = framework::makeRequest(tc);
    if (!prepared || !request) return us;
    hal::IPreparedModel& model = **prepared;
    const hal::Request& r = request->request;
    us[0] = medianUs(iterations, [&] {
        return model.executeSynchronously(r, hal::MeasureTiming::NO, std::nullopt, std::nullopt).has_value();
    });
    us[1] = medianUs(iterations, [&] {
        auto callback = std::make_shared<hal::ExecutionCallback>();
        return model.execute(r, hal::MeasureTiming::NO, std::nullopt, std::nullopt, callback).has_value() &&
               callback->wait(kWait).has_value();
    });
    us[2] = medianUs(iterations, [&] {
        auto fenced =
            model.executeFenced(r, {}, hal::MeasureTiming::NO, std::nullopt, std::nullopt, std::nullopt);
        if (!fenced) return false;
        auto signalled = hal::waitForSyncFence(fenced->syncFence, kWait);
        close(fenced->syncFence);
        auto info = fenced->callback->getExecutionInfo();
        return signalled && *signalled && info && info->status == hal::ErrorStatus::NONE;
    });
    auto burst = model.configureExecutionBurst();
    if (!burst) return us;
    // The pool is passed once with token 0, then only by its token.
    if (!(*burst)->executeSynchronously(r, {0}, hal::MeasureTiming::NO, std::nullopt, std::nullopt))
        return us;
    hal::Request cached = r;
    cached.pools = {std::shared_ptr<hal::Memory>()};
    us[3] = medianUs(iterations, [&] {
        return (*burst)
            ->executeSynchronously(cached, {0}, hal::MeasureTiming::NO, std::nullopt, std::nullopt)
            .has_value();
    });
    return us;
}

}  // namespace

int cmdBenchExec(bool json, int iterations, const std::string& hwConfigPath) {
    auto config = firmwareConfig(hwConfigPath);
    if (!config) {
        fmt::print(stderr, "npu bench exec: {}\n", config.error().message);
        return 2;
    }
    std::array<double, 4> loopback = {-1, -1, -1, -1}, unix = loopback;
    if (auto loop = fw::host::startLoopbackFirmware(*config)) {
        loopback = measureModes(std::move(loop->hostEnd), iterations);
    }
    const std::string dir =
        std::filesystem::temp_directory_path() / fmt::format("npu-bench-exec-{}", getpid());
    std::filesystem::create_directories(dir);
    if (auto served = startUnixFirmware(dir + "/exec.sock", *config)) {
        unix = measureModes(std::move(served->client), iterations);
    }
    std::filesystem::remove_all(dir);
    const double bare = bareSocketUs(iterations);

    auto measured = [](const std::array<double, 4>& v) {
        return std::all_of(v.begin(), v.end(), [](double f) { return f >= 0; });
    };
    const bool ok = bare > 0 && measured(loopback) && measured(unix);
    auto ratio = [&](double v) { return bare > 0 && v > 0 ? v / bare : 0.0; };
    // No firmware counter of copied tensor bytes exists yet: every execution copies its inputs
    // and outputs through the host window, so zero copy is not done (figure null, not 0).
    const char* copiedNote =
        "no copy counter in the firmware; tensors are copied through the host window (no zero copy yet)";
    if (json) {
        auto orNull = [](double f) { return f < 0 ? nlohmann::json(nullptr) : nlohmann::json(f); };
        nlohmann::json j;
        for (int m = 0; m < 4; ++m) {
            j["loopback"][std::string(kModes[m]) + "_us"] = orNull(loopback[m]);
            j["unix"][std::string(kModes[m]) + "_us"] = orNull(unix[m]);
        }
        j["bare_socket_us"] = orNull(bare);
        j["sync_unix_over_bare"] = ratio(unix[0]);
        j["burst_unix_over_bare"] = ratio(unix[3]);
        j["targets"] = {{"sync_unix_over_bare", 2.0}, {"burst_unix_over_bare", 1.5}};
        j["copied_bytes"] = nullptr;
        j["copied_bytes_note"] = copiedNote;
        j["iterations"] = iterations;
        fmt::print("{}\n", j.dump(2));
    } else {
        fmt::print("median per-execution time over {} iterations (one quantized ADD, 1x64)\n", iterations);
        fmt::print("  {:<8} {:>12} {:>12}\n", "mode", "loopback us", "unix us");
        for (int m = 0; m < 4; ++m)
            fmt::print("  {:<8} {:>12.2f} {:>12.2f}\n", kModes[m], loopback[m], unix[m]);
        fmt::print("  bare_socket_us {:.2f}\n", bare);
        fmt::print("  sync unix / bare = {:.2f} (target <= 2), burst unix / bare = {:.2f} (target <= 1.5)\n",
                   ratio(unix[0]), ratio(unix[3]));
        fmt::print("  copied_bytes: n/a ({})\n", copiedNote);
    }
    if (!ok) fmt::print(stderr, "npu bench exec: some figures could not be measured (-1 / null)\n");
    return ok ? 0 : 1;
}

}  // namespace npu::tools

// npu bench exec: the per-execution overhead of each execution mode (synchronous, asynchronous
// with a callback, fenced, burst) for a one-operation model over loopback and unix, next to a
// bare Unix-socket round trip measured in the same run, and a burst without its channel (the
// burst's baseline: it takes the connection, as before bursts had fast message queues;
// docs/execution.md).
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "commands.h"
#include "npu/hal/execution_callback.h"
#include "npu/hal/model_builder.h"
#include "npu/hal/sync_fence.h"
#include "npu/shim/npu_device.h"
#include "rpc_timing.h"

namespace npu::tools {
namespace {

constexpr auto kWait = std::chrono::seconds(10);
const char* const kModes[] = {"sync", "async", "fenced", "burst"};

constexpr uint32_t kCopyBytes = 1u << 20;
constexpr int kBurstRun = 16;  // burst executions back to back before the other burst's turn

// out = a + a over [1, 1024, 1024]: one 1 MiB input, one 1 MiB output.
framework::TestCase mebibyteCase() {
    hal::ModelBuilder b;
    const auto q8 = hal::OperandType::TENSOR_QUANT8_ASYMM;
    const uint32_t a = b.input(q8, {1, 1024, kCopyBytes / 1024}, 1.0f, 0);
    const uint32_t act = b.scalar(0);
    const uint32_t out = b.output(q8, {1, 1024, kCopyBytes / 1024}, 1.0f, 0);
    b.operation(hal::OperationType::ADD, {a, a, act}, {out});
    framework::TestCase tc;
    tc.model = b.build();
    tc.inputs = {std::vector<uint8_t>(kCopyBytes, 7)};
    tc.expectedOutputs = {std::vector<uint8_t>(kCopyBytes)};
    tc.expectedOutputDims = {{1, 1024, kCopyBytes / 1024}};
    tc.outputIgnored = {false};
    return tc;
}

// The growth of the firmware's runtime.copied_bytes over one synchronous execution of
// mebibyteCase(): the tensor bytes moved between client memory and device memory. -1 on failure.
double copiedBytes(hal::IDevice& device) {
    const framework::TestCase tc = mebibyteCase();
    auto prepared = device.prepareModel(tc.model);
    auto request = framework::makeRequest(tc);
    if (!prepared || !request) return -1;
    auto before = shim::queryFirmwareCounters(device);
    if (!before || !(*prepared)->executeSynchronously(request->request, hal::MeasureTiming::NO, std::nullopt,
                                                      std::nullopt)) {
        return -1;
    }
    auto after = shim::queryFirmwareCounters(device);
    if (!after || after->count("runtime.copied_bytes") == 0) return -1;
    return double(after->at("runtime.copied_bytes") - before->at("runtime.copied_bytes"));
}

struct ModeFigures {
    std::array<double, 4> us = {-1, -1, -1, -1};  // median per execution of each mode
    double burstSocketUs = -1;                    // a burst of a device without burst channels
    double copiedBytes = -1;                      // copiedBytes() on the same device
};

// Two clients of one firmware (two sessions): the device measured, and the baseline device whose
// bursts take the connection.
struct Clients {
    std::unique_ptr<fw::host::FirmwareHost> firmware;
    std::unique_ptr<proto::Transport> measured, baseline;
};

std::optional<Clients> loopbackClients(const fw::host::FirmwareHostConfig& config) {
    auto loop = fw::host::startLoopbackFirmware(config);
    if (!loop) return std::nullopt;
    Clients c;
    c.baseline = loop->firmware->connectLoopback();
    c.measured = std::move(loop->hostEnd);
    c.firmware = std::move(loop->firmware);
    return c;
}

std::optional<Clients> unixClients(const std::string& path, const fw::host::FirmwareHostConfig& config) {
    auto listener = proto::UnixListener::listen(path);
    auto firmware = fw::host::FirmwareHost::create(config);
    if (!listener || !firmware) return std::nullopt;
    Clients c;
    for (auto* client : {&c.measured, &c.baseline}) {
        auto connected = proto::connectUnix(path, std::chrono::milliseconds(2000));
        if (!connected) return std::nullopt;
        auto server = (*listener)->accept(std::chrono::milliseconds(2000));
        if (!server) return std::nullopt;
        (*firmware)->start(std::move(*server));
        *client = std::move(*connected);
    }
    c.firmware = std::move(*firmware);
    return c;
}

// Median microseconds of each call in `calls`, run in turn: per round `run` calls of each in a
// row (after a warm-up). In blocks, one mode after the other, the modes met different machine
// states: on an idle machine whether the firmware's thread ran on the caller's core or had to
// wake the other one (~50 us) changed between blocks, so one mode (the burst, last) could read 5x
// another with the same work per call. Runs longer than 1 measure back-to-back calls (a burst's
// use: executions in quick succession) while the modes still take turns. -1 for a call that fails.
std::vector<double> interleavedMedianUs(int iterations, const std::vector<std::function<bool()>>& calls,
                                        int run = 1) {
    std::vector<std::vector<double>> us(calls.size());
    std::vector<double> medians(calls.size(), -1.0);
    for (int i = 0; i < std::min(iterations / 10, 200); ++i) {
        for (const auto& call : calls) call();
    }
    for (auto& v : us) v.reserve(iterations);
    for (int i = 0; i < iterations; i += run) {
        for (size_t c = 0; c < calls.size(); ++c) {
            for (int k = 0; k < run && i + k < iterations; ++k) {
                if (us[c].size() < static_cast<size_t>(i + k)) break;  // failed before
                const auto t0 = std::chrono::steady_clock::now();
                if (!calls[c]()) break;
                us[c].push_back(
                    std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
            }
        }
    }
    for (size_t c = 0; c < calls.size(); ++c) {
        if (us[c].size() != static_cast<size_t>(iterations)) continue;
        std::nth_element(us[c].begin(), us[c].begin() + iterations / 2, us[c].end());
        medians[c] = us[c][iterations / 2];
    }
    return medians;
}

// A burst of `model` whose pool is passed once with token 0 and then only by its token; false
// when the first execution fails.
struct CachedBurst {
    std::shared_ptr<hal::IBurst> burst;
    hal::Request cached;
    bool operator()() const {
        return burst->executeSynchronously(cached, {0}, hal::MeasureTiming::NO, std::nullopt, std::nullopt)
            .has_value();
    }
};
std::optional<CachedBurst> cachedBurst(hal::IPreparedModel& model, const hal::Request& r) {
    auto burst = model.configureExecutionBurst();
    if (!burst || !(*burst)->executeSynchronously(r, {0}, hal::MeasureTiming::NO, std::nullopt, std::nullopt))
        return std::nullopt;
    CachedBurst b{std::move(*burst), r};
    b.cached.pools = {std::shared_ptr<hal::Memory>()};
    return b;
}

// Median microseconds per execution of each mode on one device (-1 where a mode fails), a burst
// of the baseline device (no burst channels), and the bytes a 1 MiB-in, 1 MiB-out execution
// copies.
ModeFigures measureModes(Clients clients, int iterations) {
    ModeFigures figures;
    auto device = shim::createNpuDevice(std::move(clients.measured));
    shim::ShimOptions noChannels;
    noChannels.burstChannels = false;
    auto baseline = shim::createNpuDevice(std::move(clients.baseline), noChannels);
    if (!device || !baseline) return figures;
    figures.copiedBytes = copiedBytes(**device);
    const framework::TestCase tc = oneAddCase();
    auto prepared = (*device)->prepareModel(tc.model);
    auto preparedBaseline = (*baseline)->prepareModel(tc.model);
    auto request = framework::makeRequest(tc);
    if (!prepared || !preparedBaseline || !request) return figures;
    hal::IPreparedModel& model = **prepared;
    const hal::Request& r = request->request;
    auto burst = cachedBurst(model, r);
    auto socketBurst = cachedBurst(**preparedBaseline, r);
    if (!burst || !socketBurst) return figures;
    auto sync = [&] {
        return model.executeSynchronously(r, hal::MeasureTiming::NO, std::nullopt, std::nullopt).has_value();
    };
    auto async = [&] {
        auto callback = std::make_shared<hal::ExecutionCallback>();
        return model.execute(r, hal::MeasureTiming::NO, std::nullopt, std::nullopt, callback).has_value() &&
               callback->wait(kWait).has_value();
    };
    auto fenced = [&] {
        auto f = model.executeFenced(r, {}, hal::MeasureTiming::NO, std::nullopt, std::nullopt, std::nullopt);
        if (!f) return false;
        auto signalled = hal::waitForSyncFence(f->syncFence, kWait);
        close(f->syncFence);
        auto info = f->callback->getExecutionInfo();
        return signalled && *signalled && info && info->status == hal::ErrorStatus::NONE;
    };
    // Sync and async, fenced, and the two bursts, each pair in turn. Async and fenced, whose worker
    // thread still winds down after the caller is notified, apart from the others; the bursts in
    // runs of kBurstRun executions back to back, as a burst is used.
    const std::vector<double> sync1 = interleavedMedianUs(iterations, {sync});
    const std::vector<double> threaded = interleavedMedianUs(iterations, {async, fenced});
    const std::vector<double> bursts = interleavedMedianUs(iterations, {*burst, *socketBurst}, kBurstRun);
    figures.us = {sync1[0], threaded[0], threaded[1], bursts[0]};
    figures.burstSocketUs = bursts[1];
    return figures;
}

}  // namespace

int cmdBenchExec(bool json, int iterations, const std::string& hwConfigPath) {
    auto config = firmwareConfig(hwConfigPath);
    if (!config) {
        fmt::print(stderr, "npu bench exec: {}\n", config.error().message);
        return 2;
    }
    ModeFigures loopback, unix;
    if (auto clients = loopbackClients(*config)) loopback = measureModes(std::move(*clients), iterations);
    const std::string dir =
        std::filesystem::temp_directory_path() / fmt::format("npu-bench-exec-{}", getpid());
    std::filesystem::create_directories(dir);
    if (auto clients = unixClients(dir + "/exec.sock", *config))
        unix = measureModes(std::move(*clients), iterations);
    std::filesystem::remove_all(dir);
    const double bare = bareSocketUs(iterations);

    auto measured = [](const std::array<double, 4>& v) {
        return std::all_of(v.begin(), v.end(), [](double f) { return f >= 0; });
    };
    const bool ok = bare > 0 && measured(loopback.us) && measured(unix.us) && unix.copiedBytes >= 0 &&
                    loopback.copiedBytes >= 0 && loopback.burstSocketUs >= 0 && unix.burstSocketUs >= 0;
    auto ratio = [&](double v) { return bare > 0 && v > 0 ? v / bare : 0.0; };
    const char* copiedNote =
        "firmware counter runtime.copied_bytes over one execution of a 1 MiB input and a 1 MiB output "
        "(over unix): pools of 64 KiB or more are passed by fd and mapped by the firmware (zero copy); "
        "smaller ones are staged through the host window";
    if (json) {
        auto orNull = [](double f) { return f < 0 ? nlohmann::json(nullptr) : nlohmann::json(f); };
        auto bytesOrNull = [](double f) {
            return f < 0 ? nlohmann::json(nullptr) : nlohmann::json(static_cast<uint64_t>(f));
        };
        nlohmann::json j;
        for (int m = 0; m < 4; ++m) {
            j["loopback"][std::string(kModes[m]) + "_us"] = orNull(loopback.us[m]);
            j["unix"][std::string(kModes[m]) + "_us"] = orNull(unix.us[m]);
        }
        j["loopback"]["burst_socket_us"] = orNull(loopback.burstSocketUs);
        j["unix"]["burst_socket_us"] = orNull(unix.burstSocketUs);
        j["burst_socket_note"] =
            "a burst of a second client whose bursts have no channel of their own "
            "(ShimOptions::burstChannels "
            "off): its executions take the connection, as every burst did before fast message queues";
        j["loopback"]["copied_bytes"] = bytesOrNull(loopback.copiedBytes);
        j["bare_socket_us"] = orNull(bare);
        j["sync_unix_over_bare"] = ratio(unix.us[0]);
        j["burst_unix_over_bare"] = ratio(unix.us[3]);
        j["burst_socket_unix_over_bare"] = ratio(unix.burstSocketUs);
        j["targets"] = {{"sync_unix_over_bare", 2.0}, {"burst_unix_over_bare", 1.5}, {"copied_bytes", 0}};
        j["copied_bytes"] = bytesOrNull(unix.copiedBytes);
        j["copied_bytes_note"] = copiedNote;
        j["iterations"] = iterations;
        fmt::print("{}\n", j.dump(2));
    } else {
        fmt::print("median per-execution time over {} iterations (one quantized ADD, 1x64)\n", iterations);
        fmt::print("  {:<8} {:>12} {:>12}\n", "mode", "loopback us", "unix us");
        for (int m = 0; m < 4; ++m)
            fmt::print("  {:<8} {:>12.2f} {:>12.2f}\n", kModes[m], loopback.us[m], unix.us[m]);
        fmt::print("  {:<8} {:>12.2f} {:>12.2f}   (a burst without its channel: the baseline)\n",
                   "burst-socket", loopback.burstSocketUs, unix.burstSocketUs);
        fmt::print("  bare_socket_us {:.2f}\n", bare);
        fmt::print(
            "  sync unix / bare = {:.2f} (target <= 2), burst unix / bare = {:.2f} (target <= 1.5; "
            "without its channel {:.2f})\n",
            ratio(unix.us[0]), ratio(unix.us[3]), ratio(unix.burstSocketUs));
        fmt::print("  copied_bytes {:.0f} (loopback {:.0f}): {}\n", unix.copiedBytes, loopback.copiedBytes,
                   copiedNote);
    }
    if (!ok) fmt::print(stderr, "npu bench exec: some figures could not be measured (-1 / null)\n");
    return ok ? 0 : 1;
}

}  // namespace npu::tools

// The watchdog's restart of a lost QEMU (docs/reliability.md, "Watchdog, reset, replay"): a device
// opened over a factory that starts QEMU (as `npu --transport qemu` does) gets a new emulator
// from the same options when the one it talks to is killed; its prepared models are restored and
// the requests that were in flight are replayed, each answered exactly once.
// Skipped (exit 77, with the reason) when qemu-system-arm, the image or the bridge is missing.
#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <future>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "npu/framework/cts_loader.h"
#include "npu/protocol/qemu_transport.h"
#include "npu/shim/npu_device.h"

namespace {

using namespace npu;
using namespace std::chrono_literals;

void skipUnlessQemuRuns() {
    if (auto paths = proto::resolveQemuPaths({}); !paths) {
        std::printf("SKIP: %s\n", paths.error().message.c_str());
        std::exit(77);
    }
}

// Every QEMU the factory started, in order (the factory runs on the shim's recovery path).
struct Started {
    std::mutex mutex;
    std::vector<proto::QemuProcesses> processes;
    proto::QemuProcesses last() {
        std::lock_guard lock(mutex);
        return processes.back();
    }
    size_t count() {
        std::lock_guard lock(mutex);
        return processes.size();
    }
};

shim::TransportFactory qemuFactory(std::shared_ptr<Started> started) {
    return [started]() -> proto::Result<std::unique_ptr<proto::Transport>> {
        auto transport = proto::startQemu({});
        if (!transport) return std::unexpected(transport.error());
        std::lock_guard lock(started->mutex);
        started->processes.push_back(proto::qemuProcesses(**transport));
        return std::move(*transport);
    };
}

// Stops the emulator and waits until the kernel says it stopped, so that a call sent now is
// certainly still unanswered when it is killed.
void freeze(int pid) {
    REQUIRE(kill(pid, SIGSTOP) == 0);
    bool stopped = false;
    for (int i = 0; i < 500 && !stopped; ++i) {
        int status = 0;
        stopped = waitpid(pid, &status, WUNTRACED | WNOHANG) == pid && WIFSTOPPED(status);
        if (!stopped) std::this_thread::sleep_for(10ms);
    }
    REQUIRE(stopped);
}

uint64_t counterOf(const shim::NpuCounters& c, const std::string& name) {
    for (const auto& [n, v] : c.firmware) {
        if (n == name) return v;
    }
    return 0;
}

struct Model {
    framework::TestCase tc;
    std::shared_ptr<hal::IPreparedModel> prepared;
};

std::future<Result<hal::ExecutionResult>> executeAsync(const Model& m, const framework::PreparedRequest& r) {
    return std::async(std::launch::async, [&m, &r] {
        return m.prepared->executeSynchronously(r.request, hal::MeasureTiming::NO, std::nullopt,
                                                std::nullopt);
    });
}

}  // namespace

TEST_CASE("qemu: a killed QEMU is started again, the models restored, the pending requests replayed once",
          "[shim][qemu]") {
    skipUnlessQemuRuns();
    auto started = std::make_shared<Started>();
    shim::ShimOptions options;
    options.autotune = false;               // quick prepares: the test is about recovery
    options.recovery.watchdogPeriod = 0ms;  // recovery is driven by the calls in flight
    options.executeTimeout = 20s;           // a bound only: the kill ends the calls at once
    auto device = shim::createNpuDevice(qemuFactory(started), options);
    INFO((device ? std::string("ok") : device.error().message));
    REQUIRE(device.has_value());
    REQUIRE(started->count() == 1);

    std::vector<Model> models;
    for (const char* name : {"conv_quant8", "fully_connected_quant8"}) {
        auto tc = framework::findTestCase(framework::ctsDataDir() + "/V1_0.jsonl.gz", name);
        REQUIRE(tc.has_value());
        auto prepared = (*device)->prepareModel(tc->model);
        INFO(name << ": " << (prepared ? std::string("ok") : prepared.error().message));
        REQUIRE(prepared.has_value());
        models.push_back({std::move(*tc), *prepared});
    }
    const auto before = shim::queryNpuCounters(**device);
    REQUIRE(before.has_value());
    const uint64_t requestsBefore = counterOf(*before, "rpc.requests");
    REQUIRE(requestsBefore > 0);

    // One request per model in flight on a frozen emulator, then the emulator is killed.
    const proto::QemuProcesses first = started->last();
    std::vector<framework::PreparedRequest> requests;
    for (const auto& m : models) {
        auto r = framework::makeRequest(m.tc);
        REQUIRE(r.has_value());
        requests.push_back(std::move(*r));
    }
    freeze(first.qemuPid);
    std::vector<std::future<Result<hal::ExecutionResult>>> calls;
    for (size_t i = 0; i < models.size(); ++i) calls.push_back(executeAsync(models[i], requests[i]));
    std::this_thread::sleep_for(200ms);
    REQUIRE(kill(first.qemuPid, SIGKILL) == 0);

    // Each call returns once, with the right answer, computed by the new QEMU.
    for (size_t i = 0; i < calls.size(); ++i) {
        INFO(models[i].tc.name);
        REQUIRE(calls[i].wait_for(60s) == std::future_status::ready);  // bounds the test only
        auto result = calls[i].get();
        INFO((result ? std::string("ok") : result.error().message));
        REQUIRE(result.has_value());
        CHECK_FALSE(
            framework::compareOutputs(models[i].tc, framework::readOutputs(requests[i]), result->outputShapes)
                .has_value());
    }
    REQUIRE(started->count() == 2);
    CHECK(started->last().qemuPid != first.qemuPid);
    CHECK(kill(started->last().qemuPid, 0) == 0);

    const auto after = shim::queryNpuCounters(**device);
    REQUIRE(after.has_value());
    CHECK(after->restarts == before->restarts + 1);
    CHECK(after->modelsRestored == before->modelsRestored + models.size());
    CHECK(after->modelsLost == 0);
    CHECK(after->requestsReplayed == before->requestsReplayed + models.size());
    CHECK(after->requestsFailed == 0);
    CHECK(after->disconnects >= before->disconnects + 1);
    // The firmware counters are the new emulator's: it has handled what the first one had before
    // the kill (the handshake, the prepares as restores, one GetCounters) and each replayed
    // execution once.
    CHECK(counterOf(*after, "rpc.requests") == requestsBefore + models.size());
    CHECK(counterOf(*after, "qemu.mailbox_round_trips") > 0);

    // None answered twice: a late second answer would land in the first requests' outputs. Mark
    // them, run each model again on new memory, and check the marks are untouched.
    for (auto& r : requests) std::memset(r.pool->data(), 0xA5, r.pool->size());
    for (size_t i = 0; i < models.size(); ++i) {
        auto again = framework::makeRequest(models[i].tc);
        REQUIRE(again.has_value());
        auto result = models[i].prepared->executeSynchronously(again->request, hal::MeasureTiming::NO,
                                                               std::nullopt, std::nullopt);
        REQUIRE(result.has_value());
        CHECK_FALSE(
            framework::compareOutputs(models[i].tc, framework::readOutputs(*again), result->outputShapes)
                .has_value());
    }
    for (const auto& r : requests) {
        CHECK(std::all_of(r.pool->data(), r.pool->data() + r.pool->size(),
                          [](uint8_t b) { return b == 0xA5; }));
    }
    CHECK(shim::queryNpuCounters(**device)->requestsReplayed == after->requestsReplayed);
}

TEST_CASE("qemu: an emulator started on a thread that has ended keeps running", "[shim][qemu]") {
    // The shim restarts QEMU on the thread of the call that met the loss. PR_SET_PDEATHSIG (the
    // children die with their parent) is bound to the thread that forks: forked there, the new
    // QEMU was killed as soon as that thread ended.
    skipUnlessQemuRuns();
    proto::Result<std::unique_ptr<proto::Transport>> transport = std::unexpected(proto::Error{});
    std::thread([&] { transport = proto::startQemu({}); }).join();
    INFO((transport ? std::string("ok") : transport.error().message));
    REQUIRE(transport.has_value());
    const proto::QemuProcesses processes = proto::qemuProcesses(**transport);
    auto device = shim::createNpuDevice(std::move(*transport));
    INFO((device ? std::string("ok") : device.error().message));
    REQUIRE(device.has_value());
    auto capabilities = (*device)->getCapabilities();
    INFO((capabilities ? std::string("ok") : capabilities.error().message));
    CHECK(capabilities.has_value());
    CHECK(kill(processes.qemuPid, 0) == 0);
    CHECK(kill(processes.bridgePid, 0) == 0);
}

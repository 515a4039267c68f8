// The NPU HAL device over the qemu transport: the firmware image on an emulated Cortex-M55,
// the simulated NPU behind the register bridge. Results and simulated cycles must equal the
// in-process firmware's (loopback), and a dead emulator must give DEVICE_UNAVAILABLE, not a hang.
// Skipped (exit 77, with the reason) when qemu-system-arm, the image or the bridge is missing.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <future>
#include <map>
#include <set>
#include <thread>

#include "npu/framework/cts_loader.h"
#include "npu/fw/platform/host/firmware_host.h"
#include "npu/hal/execution_callback.h"
#include "npu/hal/sync_fence.h"
#include "npu/protocol/qemu_transport.h"
#include "npu/shim/npu_device.h"

namespace {

using namespace npu;
using namespace std::chrono_literals;

struct QemuDevice {
    std::shared_ptr<hal::IDevice> device;
    proto::QemuProcesses processes;
};

void skipUnlessQemuRuns() {
    if (auto paths = proto::resolveQemuPaths({}); !paths) {
        std::printf("SKIP: %s\n", paths.error().message.c_str());
        std::exit(77);
    }
}

QemuDevice openQemu(const shim::ShimOptions& options = {}) {
    skipUnlessQemuRuns();
    auto transport = proto::startQemu({});
    REQUIRE(transport.has_value());
    QemuDevice q;
    q.processes = proto::qemuProcesses(**transport);
    auto device = shim::createNpuDevice(std::move(*transport), options);
    INFO((device ? std::string("ok") : device.error().message));
    REQUIRE(device.has_value());
    q.device = *device;
    return q;
}

struct Outcome {
    std::vector<std::vector<uint8_t>> outputs;
    uint64_t cycles = 0;
    std::vector<uint64_t> operationCycles;
    uint32_t tuningTrials = 0;
};

Outcome runOnce(hal::IDevice& device, const framework::TestCase& tc) {
    auto supported = device.getSupportedOperations(tc.model);
    REQUIRE(supported.has_value());
    for (bool s : *supported) REQUIRE(s);
    auto prepared = device.prepareModel(tc.model);
    INFO((prepared ? std::string("ok") : prepared.error().message));
    REQUIRE(prepared.has_value());
    auto request = framework::makeRequest(tc);
    REQUIRE(request.has_value());
    auto r = (*prepared)->executeSynchronously(request->request, hal::MeasureTiming::YES, std::nullopt,
                                               std::nullopt);
    INFO((r ? std::string("ok") : r.error().message));
    REQUIRE(r.has_value());
    Outcome o;
    o.outputs = framework::readOutputs(*request);
    CHECK_FALSE(framework::compareOutputs(tc, o.outputs, r->outputShapes).has_value());
    o.cycles = r->deviceCycles;
    for (const auto& p : r->profile) o.operationCycles.push_back(p.cycles);
    auto info = shim::queryCompileInfo(**prepared);
    REQUIRE(info.has_value());
    o.tuningTrials = info->tuningTrials;
    return o;
}

// The in-process firmware (loopback) the qemu results are compared with.
struct Loopback {
    std::unique_ptr<fw::host::FirmwareHost> firmware;
    std::shared_ptr<hal::IDevice> device;
};

Loopback openLoopback() {
    auto loop = fw::host::startLoopbackFirmware();
    REQUIRE(loop.has_value());
    auto device = shim::createNpuDevice(std::move(loop->hostEnd));
    REQUIRE(device.has_value());
    return {std::move(loop->firmware), *device};
}

}  // namespace

TEST_CASE("qemu: CONV_2D and FULLY_CONNECTED vectors give loopback's bytes and simulated cycles",
          "[shim][qemu]") {
    QemuDevice q = openQemu();
    Loopback loopback = openLoopback();
    for (const char* name :
         {"conv_quant8", "conv_quant8_large", "conv_quant8_all_inputs_as_internal", "fully_connected_quant8",
          "fully_connected_quant8_2", "fully_connected_quant8_large"}) {
        INFO(name);
        auto tc = framework::findTestCase(framework::ctsDataDir() + "/V1_0.jsonl.gz", name);
        REQUIRE(tc.has_value());
        const Outcome onQemu = runOnce(*q.device, *tc);
        const Outcome onLoopback = runOnce(*loopback.device, *tc);
        CHECK(onQemu.outputs == onLoopback.outputs);
        CHECK(onQemu.cycles > 0);
        CHECK(onQemu.cycles == onLoopback.cycles);
        CHECK(onQemu.operationCycles == onLoopback.operationCycles);
        CHECK(onQemu.tuningTrials == onLoopback.tuningTrials);
    }
}

TEST_CASE("qemu: the emulator killed mid-call gives DEVICE_UNAVAILABLE within the timeout", "[shim][qemu]") {
    shim::ShimOptions options;
    options.executeTimeout = 20s;
    QemuDevice q = openQemu(options);
    auto tc = framework::findTestCase(framework::ctsDataDir() + "/V1_0.jsonl.gz", "conv_quant8");
    REQUIRE(tc.has_value());
    auto prepared = q.device->prepareModel(tc->model);
    REQUIRE(prepared.has_value());
    auto request = framework::makeRequest(*tc);
    REQUIRE(request.has_value());
    // Freeze the emulator so the call is certainly in flight (wait until the kernel says it
    // stopped), then kill it.
    REQUIRE(kill(q.processes.qemuPid, SIGSTOP) == 0);
    bool stopped = false;
    for (int i = 0; i < 500 && !stopped; ++i) {
        int status = 0;
        stopped = waitpid(q.processes.qemuPid, &status, WUNTRACED | WNOHANG) == q.processes.qemuPid &&
                  WIFSTOPPED(status);
        if (!stopped) std::this_thread::sleep_for(10ms);
    }
    REQUIRE(stopped);
    auto call = std::async(std::launch::async, [&] {
        return (*prepared)->executeSynchronously(request->request, hal::MeasureTiming::NO, std::nullopt,
                                                 std::nullopt);
    });
    std::this_thread::sleep_for(200ms);
    REQUIRE(kill(q.processes.qemuPid, SIGKILL) == 0);
    // Bounds the test only: the call must end by itself well before its 20 s timeout.
    REQUIRE(call.wait_for(15s) == std::future_status::ready);
    auto result = call.get();
    REQUIRE_FALSE(result.has_value());
    INFO(result.error().message);
    CHECK(result.error().status == hal::ErrorStatus::DEVICE_UNAVAILABLE);
    CHECK(result.error().message.find("QEMU") != std::string::npos);
    auto again = q.device->getCapabilities();
    REQUIRE_FALSE(again.has_value());
    CHECK(again.error().status == hal::ErrorStatus::DEVICE_UNAVAILABLE);
}

TEST_CASE("qemu: an image speaking another protocol major version is refused with both versions",
          "[shim][qemu]") {
    skipUnlessQemuRuns();
    auto transport = proto::startQemu({});
    REQUIRE(transport.has_value());
    shim::ShimOptions options;
    options.protocolMajor = shim::kProtocolMajor + 1;  // as if the image were built for major 1
    auto device = shim::createNpuDevice(std::move(*transport), options);
    REQUIRE_FALSE(device.has_value());
    INFO(device.error().message);
    CHECK(device.error().status == hal::ErrorStatus::DEVICE_UNAVAILABLE);
    CHECK_THAT(device.error().message, Catch::Contains("qemu mps3-an547"));
    CHECK_THAT(device.error().message, Catch::Contains("2.") && Catch::Contains("1."));
}

TEST_CASE("qemu: a missing firmware image or emulator is refused, naming it", "[shim][qemu]") {
    skipUnlessQemuRuns();
    proto::QemuOptions options;
    options.imagePath = "/nonexistent/npu-fw.elf";
    auto transport = proto::startQemu(options);
    REQUIRE_FALSE(transport.has_value());
    CHECK_THAT(transport.error().message, Catch::Contains("/nonexistent/npu-fw.elf"));
    options = {};
    options.qemuBinary = "no-such-qemu-system-arm";
    transport = proto::startQemu(options);
    REQUIRE_FALSE(transport.has_value());
    CHECK_THAT(transport.error().message, Catch::Contains("no-such-qemu-system-arm"));
}

namespace {

// What makes a vector cover an operation: its type and the type of its first input.
struct Claim {
    hal::OperationType operation;
    hal::OperandType type;
    auto operator<=>(const Claim&) const = default;
};

std::string describe(const Claim& c) {
    return std::string(hal::toString(c.operation)) + " " + std::string(hal::toString(c.type));
}

// The bytes a vector moves and holds: a proxy for how long it runs on the emulated core.
size_t cost(const framework::TestCase& tc) {
    size_t bytes = tc.model.operandValues.size();
    for (const auto& pool : tc.model.pools) bytes += pool != nullptr ? pool->size() : 0;
    for (const auto& in : tc.inputs) bytes += in.size();
    for (const auto& out : tc.expectedOutputs) bytes += out.size();
    return bytes;
}

// For every (operation, input type) of a vector the NPU takes whole (loopback's
// getSupportedOperations), the cheapest such vector of the vendored CTS: a subset covering
// every operation type the NPU claims, chosen from what it answers rather than from a list.
std::map<Claim, framework::TestCase> cheapestClaimedVectors(hal::IDevice& npu) {
    std::vector<std::string> files;
    for (const auto& entry : std::filesystem::directory_iterator(framework::ctsDataDir())) {
        if (entry.path().string().ends_with(".jsonl.gz")) files.push_back(entry.path().string());
    }
    std::sort(files.begin(), files.end());
    REQUIRE_FALSE(files.empty());
    std::map<Claim, framework::TestCase> chosen;
    for (const auto& file : files) {
        auto reader = framework::CtsReader::open(file);
        REQUIRE(reader.has_value());
        for (;;) {
            auto next = (*reader)->next();
            REQUIRE(next.has_value());
            if (!next->has_value()) break;
            framework::TestCase& tc = **next;
            if (tc.expectFailure || tc.model.main.operations.empty()) continue;
            auto supported = npu.getSupportedOperations(tc.model);
            if (!supported || std::find(supported->begin(), supported->end(), false) != supported->end())
                continue;
            for (const auto& op : tc.model.main.operations) {
                const Claim claim{op.type, tc.model.main.operands[op.inputs.at(0)].type};
                auto it = chosen.find(claim);
                if (it == chosen.end() || cost(tc) < cost(it->second)) chosen.insert_or_assign(claim, tc);
            }
        }
    }
    return chosen;
}

}  // namespace

TEST_CASE(
    "qemu: the cheapest CTS vector of every operation type the NPU claims gives loopback's bytes and cycles",
    "[shim][qemu]") {
    QemuDevice q = openQemu();
    Loopback loopback = openLoopback();
    const auto chosen = cheapestClaimedVectors(*loopback.device);
    std::set<hal::OperationType> operations;
    for (const auto& [claim, tc] : chosen) operations.insert(claim.operation);
    // The NPU claims the convolutions, the vector-unit and the copy operations (docs/conformance.md):
    // far more than a handful. An empty or tiny set would mean the selection, not the NPU, failed.
    REQUIRE(operations.size() >= 20);
    for (const auto& [claim, tc] : chosen) {
        INFO(describe(claim) << ": " << tc.name);
        const Outcome onQemu = runOnce(*q.device, tc);
        const Outcome onLoopback = runOnce(*loopback.device, tc);
        CHECK(onQemu.outputs == onLoopback.outputs);
        CHECK(onQemu.cycles == onLoopback.cycles);
        CHECK(onQemu.operationCycles == onLoopback.operationCycles);
        CHECK(onQemu.tuningTrials == onLoopback.tuningTrials);
    }
    auto counters = shim::queryFirmwareCounters(*q.device);
    REQUIRE(counters.has_value());
    CHECK((*counters)["qemu.mailbox_failures"] == 0);
    std::string covered;
    for (const auto& [claim, tc] : chosen) covered += describe(claim) + " (" + tc.name + ")\n";
    std::printf("qemu CTS subset: %zu vectors, %zu operation types:\n%s", chosen.size(), operations.size(),
                covered.c_str());
}

TEST_CASE("qemu: two emulators started one after the other in one process each execute a model many times",
          "[shim][qemu]") {
    // npu bench rpc's sequence: one emulator for the Pings, then a second for the executions.
    // Each execution makes ~31 register accesses through the mailbox, each timed by the
    // firmware's SysTick clock; a clock that stepped back made one of them time out at once.
    auto tc = framework::findTestCase(framework::ctsDataDir() + "/V1_0.jsonl.gz", "conv_quant8");
    REQUIRE(tc.has_value());
    Loopback loopback = openLoopback();
    const Outcome expected = runOnce(*loopback.device, *tc);
    for (int emulator = 0; emulator < 2; ++emulator) {
        INFO("emulator " << emulator);
        QemuDevice q = openQemu();
        auto prepared = q.device->prepareModel(tc->model);
        REQUIRE(prepared.has_value());
        auto request = framework::makeRequest(*tc);
        REQUIRE(request.has_value());
        for (int i = 0; i < 150; ++i) {
            auto r = (*prepared)->executeSynchronously(request->request, hal::MeasureTiming::YES,
                                                       std::nullopt, std::nullopt);
            INFO("execution " << i << ": " << (r ? std::string("ok") : r.error().message));
            REQUIRE(r.has_value());
            REQUIRE(r->deviceCycles == expected.cycles);
            REQUIRE(framework::readOutputs(*request) == expected.outputs);
        }
        // The firmware's own account: no register access failed, the clock never stepped back.
        auto counters = shim::queryFirmwareCounters(*q.device);
        REQUIRE(counters.has_value());
        CHECK((*counters)["qemu.mailbox_round_trips"] >= 150 * 10);
        CHECK((*counters)["qemu.mailbox_failures"] == 0);
        CHECK((*counters)["qemu.clock_backsteps"] == 0);
    }
}

TEST_CASE("qemu: asynchronous, fenced and burst executions on the emulated core give the synchronous bytes",
          "[shim][qemu]") {
    QemuDevice q = openQemu();
    auto tc = framework::findTestCase(framework::ctsDataDir() + "/V1_0.jsonl.gz", "conv_quant8");
    REQUIRE(tc.has_value());
    auto prepared = q.device->prepareModel(tc->model);
    REQUIRE(prepared.has_value());
    auto run = [&](const std::function<bool(const hal::Request&)>& execute) {
        auto request = framework::makeRequest(*tc);
        REQUIRE(request.has_value());
        REQUIRE(execute(request->request));
        return framework::readOutputs(*request);
    };
    const auto sync = run([&](const hal::Request& r) {
        return (*prepared)
            ->executeSynchronously(r, hal::MeasureTiming::NO, std::nullopt, std::nullopt)
            .has_value();
    });
    const auto async = run([&](const hal::Request& r) {
        auto callback = std::make_shared<hal::ExecutionCallback>();
        return (*prepared)
                   ->execute(r, hal::MeasureTiming::NO, std::nullopt, std::nullopt, callback)
                   .has_value() &&
               callback->wait(60s).has_value();
    });
    const auto fenced = run([&](const hal::Request& r) {
        auto f = (*prepared)->executeFenced(r, {}, hal::MeasureTiming::YES, std::nullopt, std::nullopt,
                                            std::nullopt);
        if (!f) return false;
        auto signalled = hal::waitForSyncFence(f->syncFence, 60s);
        close(f->syncFence);
        auto info = f->callback->getExecutionInfo();
        return signalled && *signalled && info && info->status == hal::ErrorStatus::NONE;
    });
    auto burst = (*prepared)->configureExecutionBurst();
    REQUIRE(burst.has_value());
    const auto bursted = run([&](const hal::Request& r) {
        for (int i = 0; i < 3; ++i) {
            if (!(*burst)->executeSynchronously(r, {0}, hal::MeasureTiming::NO, std::nullopt, std::nullopt))
                return false;
        }
        return true;
    });
    CHECK_FALSE(framework::compareOutputs(*tc, sync, {}).has_value());
    CHECK(async == sync);
    CHECK(fenced == sync);
    CHECK(bursted == sync);
    // The image shares no memory with its client: the burst took the connection.
    auto counters = shim::queryNpuCounters(*q.device);
    REQUIRE(counters.has_value());
    CHECK(counters->burstChannelsOpened == 0);
}

// The watchdog, reset, restart and replay of the shim (docs/reliability.md): one test per
// recovery path, each checking the answer against the CPU reference and the counters.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>
#include <thread>

#include "../../../tools/npu/demo_network.h"
#include "npu.pb.h"
#include "npu/framework/cts_loader.h"
#include "npu/fw/platform/host/firmware_host.h"
#include "npu/protocol/frame.h"
#include "npu/ref/reference_device.h"
#include "npu/shim/npu_device.h"

namespace {

using namespace npu;
using namespace std::chrono_literals;

// The demo network with its input, and the reference's answer for it.
struct Workload {
    tools::DemoNetwork net = tools::makeDemoNetwork();
    std::vector<uint8_t> expected;
    Workload() {
        ref::ReferenceDevice reference;
        auto prepared = prepare(reference);
        expected = run(*prepared).value();
    }
    std::shared_ptr<hal::IPreparedModel> prepare(hal::IDevice& device) const {
        auto p = device.prepareModel(net.model, hal::ExecutionPreference::FAST_SINGLE_ANSWER,
                                     hal::Priority::MEDIUM, {}, {}, {}, {});
        REQUIRE(p.has_value());
        return *p;
    }
    Result<std::vector<uint8_t>> run(hal::IPreparedModel& prepared) const {
        size_t outBytes = 1;
        for (uint32_t d : net.outputDims) outBytes *= d;
        std::shared_ptr<hal::Memory> pool(hal::Memory::create(net.input.size() + outBytes));
        std::memcpy(pool->data(), net.input.data(), net.input.size());
        hal::Request request;
        request.pools.push_back(pool);
        request.inputs.push_back({false, {0, 0, static_cast<uint32_t>(net.input.size())}, {}});
        request.outputs.push_back(
            {false, {0, static_cast<uint32_t>(net.input.size()), static_cast<uint32_t>(outBytes)}, {}});
        NPU_TRY(prepared.executeSynchronously(request, hal::MeasureTiming::NO, {}, {}));
        return std::vector<uint8_t>(pool->data() + net.input.size(),
                                    pool->data() + net.input.size() + outBytes);
    }
};

const Workload& workload() {
    static Workload w;
    return w;
}

shim::ShimOptions quickOptions() {
    shim::ShimOptions o;
    o.autotune = false;
    o.recovery.watchdogPeriod = 0ms;  // the tests drive recovery through their calls
    return o;
}

std::shared_ptr<hal::IDevice> openLoopback(const shim::ShimOptions& options = quickOptions()) {
    fw::host::FirmwareHostConfig config;
    config.faultInjection = true;
    auto device = shim::createNpuDevice(
        shim::TransportFactory([config] { return fw::host::startLoopbackTransport(config); }), options);
    REQUIRE(device.has_value());
    return *device;
}

shim::NpuCounters counters(hal::IDevice& device) {
    auto c = shim::queryNpuCounters(device);
    REQUIRE(c.has_value());
    return *c;
}

uint64_t firmwareCounter(const shim::NpuCounters& c, const std::string& name) {
    for (const auto& [n, v] : c.firmware) {
        if (n == name) return v;
    }
    return 0;
}

// A transport that passes everything to `inner_`; the link faults below override a part.
class ForwardingTransport : public proto::Transport {
public:
    explicit ForwardingTransport(std::unique_ptr<proto::Transport> inner) : inner_(std::move(inner)) {}
    proto::Result<void> write(std::span<const uint8_t> bytes, std::span<const int> fds) override {
        return inner_->write(bytes, fds);
    }
    proto::Result<size_t> read(std::span<uint8_t> buffer, std::vector<proto::UniqueFd>* fds,
                               std::chrono::milliseconds timeout) override {
        return inner_->read(buffer, fds, timeout);
    }
    void shutdown() override { inner_->shutdown(); }
    std::string describe() const override { return "test link to " + inner_->describe(); }

protected:
    std::unique_ptr<proto::Transport> inner_;
};

// Makes the firmware host die 1 ms after the call (npu-fwd exits, a loopback thread ends) and
// waits past the host loop's poll interval, so that the next call meets a dropped connection.
void crashHost(hal::IDevice& device, bool wait = true) {
    shim::NpuFaultPlan crash;
    crash.crashAfterMs = 1;
    REQUIRE(shim::injectNpuFaults(device, crash).has_value());
    if (wait) std::this_thread::sleep_for(200ms);
}

}  // namespace

TEST_CASE("an NPU hang: the firmware resets the NPU, the shim replays, the answer is right and single") {
    auto device = openLoopback();
    auto prepared = workload().prepare(*device);
    shim::NpuFaultPlan plan;
    plan.hangAtCommand = 2;
    REQUIRE(shim::injectNpuFaults(*device, plan).has_value());
    auto out = workload().run(*prepared);
    REQUIRE(out.has_value());
    CHECK(*out == workload().expected);
    const auto c = counters(*device);
    CHECK(c.npuHangs == 1);
    CHECK(c.requestsReplayed == 1);
    CHECK(c.requestsFailed == 0);
    CHECK(firmwareCounter(c, "npu.hangs") == 1);
    // The fault fired once: the next request runs clean.
    CHECK(workload().run(*prepared).value() == workload().expected);
    CHECK(counters(*device).requestsReplayed == 1);
}

TEST_CASE("a data fault (DMA error, SRAM ECC) fails the request with a clear error, never a wrong answer") {
    auto device = openLoopback();
    auto prepared = workload().prepare(*device);
    shim::NpuFaultPlan dma;
    dma.dmaErrorAtTransfer = 1;
    shim::NpuFaultPlan flip;
    flip.sramFlipAfterCommand = 1;
    flip.sramFlipAddress = 5;
    flip.sramFlipBit = 3;
    flip.sramEcc = true;
    for (const auto& plan : {dma, flip}) {
        REQUIRE(shim::injectNpuFaults(*device, plan).has_value());
        auto out = workload().run(*prepared);
        REQUIRE_FALSE(out.has_value());
        CHECK(out.error().status == hal::ErrorStatus::GENERAL_FAILURE);
        CHECK_THAT(out.error().message, Catch::Contains("data fault") && Catch::Contains("not returned"));
        CHECK(workload().run(*prepared).value() == workload().expected);
    }
    const auto c = counters(*device);
    CHECK(c.dataFaults == 2);
    CHECK(c.requestsReplayed == 0);
    CHECK(firmwareCounter(c, "npu.data_faults") == 2);
}

TEST_CASE("fault injection is refused by a firmware host that does not allow it") {
    auto loop = fw::host::startLoopbackTransport({});
    REQUIRE(loop.has_value());
    auto device = shim::createNpuDevice(std::move(*loop), quickOptions());
    REQUIRE(device.has_value());
    auto r = shim::injectNpuFaults(**device, shim::NpuFaultPlan{1, 0, 0, 0, 0, false, 0});
    REQUIRE_FALSE(r.has_value());
    CHECK_THAT(r.error().message, Catch::Contains("--fault-injection"));
}

TEST_CASE("a crashed loopback firmware is restarted, the model restored, the request replayed") {
    auto device = openLoopback();
    auto prepared = workload().prepare(*device);
    crashHost(*device);
    auto out = workload().run(*prepared);
    REQUIRE(out.has_value());
    CHECK(*out == workload().expected);
    const auto c = counters(*device);
    CHECK(c.restarts == 1);
    CHECK(c.modelsRestored == 1);
    CHECK(c.requestsReplayed == 1);
    CHECK(c.requestsFailed == 0);
}

TEST_CASE("the watchdog finds a dead firmware while idle and restores the models before the next request") {
    auto options = quickOptions();
    options.recovery.watchdogPeriod = 50ms;
    auto device = openLoopback(options);
    auto prepared = workload().prepare(*device);
    crashHost(*device, false);
    // Bounded wait for the watchdog's restart (no timed assertion: the loop ends on the counter).
    for (int i = 0; i < 200 && counters(*device).restarts == 0; ++i) std::this_thread::sleep_for(25ms);
    const auto before = counters(*device);
    CHECK(before.restarts == 1);
    CHECK(before.modelsRestored == 1);
    CHECK(before.pings >= 1);
    CHECK(workload().run(*prepared).value() == workload().expected);
    CHECK(counters(*device).requestsReplayed == 0);  // restored before the request came
}

namespace {
// A transport that can be made deaf: it then swallows every write and never delivers a byte, as
// a hung firmware host would. Made by the factory below; only the first one is frozen.
class FreezableTransport final : public ForwardingTransport {
public:
    FreezableTransport(std::unique_ptr<proto::Transport> inner, std::shared_ptr<std::atomic<bool>> frozen)
        : ForwardingTransport(std::move(inner)), frozen_(std::move(frozen)) {}
    proto::Result<void> write(std::span<const uint8_t> bytes, std::span<const int> fds) override {
        if (frozen_->load()) return {};
        return inner_->write(bytes, fds);
    }
    proto::Result<size_t> read(std::span<uint8_t> buffer, std::vector<proto::UniqueFd>* fds,
                               std::chrono::milliseconds timeout) override {
        if (frozen_->load()) {
            std::this_thread::sleep_for(std::min(timeout, std::chrono::milliseconds(20)));
            return proto::fail(proto::Error::Kind::kTimeout, "frozen");
        }
        return inner_->read(buffer, fds, timeout);
    }

private:
    std::shared_ptr<std::atomic<bool>> frozen_;
};
}  // namespace

TEST_CASE("a hung firmware host: the call times out, ping and Reset go unanswered, the host is restarted") {
    auto frozen = std::make_shared<std::atomic<bool>>(false);
    auto made = std::make_shared<int>(0);
    shim::TransportFactory factory = [frozen, made]() -> proto::Result<std::unique_ptr<proto::Transport>> {
        auto t = fw::host::startLoopbackTransport({});
        if (!t) return std::unexpected(t.error());
        // Only the first host hangs; the restarted one gets a flag of its own.
        auto flag = (*made)++ == 0 ? frozen : std::make_shared<std::atomic<bool>>(false);
        return std::unique_ptr<proto::Transport>(new FreezableTransport(std::move(*t), flag));
    };
    auto options = quickOptions();
    options.executeTimeout = 300ms;
    options.recovery.pingTimeout = 100ms;
    options.recovery.resetTimeout = 100ms;
    auto device = shim::createNpuDevice(std::move(factory), options);
    REQUIRE(device.has_value());
    auto prepared = workload().prepare(**device);
    frozen->store(true);
    auto out = workload().run(*prepared);
    REQUIRE(out.has_value());
    CHECK(*out == workload().expected);
    const auto c = counters(**device);
    CHECK(c.callTimeouts == 1);
    CHECK(c.pingFailures == 1);
    CHECK(c.resets == 0);
    CHECK(c.restarts == 1);
    CHECK(c.modelsRestored == 1);
    CHECK(c.requestsReplayed == 1);
}

TEST_CASE("a device opened on a single transport cannot restart: the request fails, it is not lost") {
    auto loop = fw::host::startLoopbackFirmware({});
    REQUIRE(loop.has_value());
    auto device = shim::createNpuDevice(std::move(loop->hostEnd), quickOptions());
    REQUIRE(device.has_value());
    auto prepared = workload().prepare(**device);
    loop->firmware.reset();  // the firmware thread ends: the connection drops
    auto out = workload().run(*prepared);
    REQUIRE_FALSE(out.has_value());
    CHECK(out.error().status == hal::ErrorStatus::DEVICE_UNAVAILABLE);
    CHECK_THAT(out.error().message, Catch::Contains("could not be recovered"));
    CHECK(counters(**device).requestsFailed == 1);
}

namespace {
// A private socket directory and the options of an npu-fwd with fault injection that the shim
// starts there; the directory goes with it.
struct TestDaemon {
    std::string dir;
    shim::DaemonOptions options;
    TestDaemon(const std::string& name, const shim::ShimOptions& shim) {
        dir = std::filesystem::temp_directory_path() / (name + "-" + std::to_string(getpid()));
        std::filesystem::create_directories(dir);
        std::filesystem::permissions(dir, std::filesystem::perms::owner_all);
        options.socketPath = dir + "/npu-fwd.sock";
        options.daemonPath = NPU_FWD_TEST_PATH;
        options.faultInjection = true;
        options.idleExitSeconds = 5;
        options.shim = shim;
    }
    ~TestDaemon() { std::filesystem::remove_all(dir); }
};
}  // namespace

TEST_CASE("a killed npu-fwd is started again, the model restored, the request replayed") {
    TestDaemon daemon("npu-recovery", quickOptions());
    auto device = shim::connectNpuDaemon(daemon.options);
    REQUIRE(device.has_value());
    auto prepared = workload().prepare(**device);
    // Kill the daemon for real: a crash injected through it exits the process (status 70).
    crashHost(**device);
    auto out = workload().run(*prepared);
    REQUIRE(out.has_value());
    CHECK(*out == workload().expected);
    const auto c = counters(**device);
    CHECK(c.restarts == 1);
    CHECK(c.modelsRestored == 1);
    CHECK(c.requestsReplayed == 1);
    device->reset();
    prepared.reset();
}

namespace {
// A loopback transport that drops its connection at its N-th write (0: never), as a firmware
// host crashing in the middle of the restore would.
class DyingTransport final : public ForwardingTransport {
public:
    DyingTransport(std::unique_ptr<proto::Transport> inner, int dieAtWrite)
        : ForwardingTransport(std::move(inner)), dieAt_(dieAtWrite) {}
    proto::Result<void> write(std::span<const uint8_t> bytes, std::span<const int> fds) override {
        if (dieAt_ > 0 && ++writes_ >= dieAt_) {
            inner_->shutdown();
            return proto::fail(proto::Error::Kind::kDisconnected, "died");
        }
        return inner_->write(bytes, fds);
    }

private:
    int dieAt_;
    int writes_ = 0;
};
}  // namespace

TEST_CASE(
    "a firmware lost again during the restore: every model is restored on the last one, no stale handle") {
    // Transport 1 serves the prepares and is crashed; transport 2 dies at its 3rd write (after
    // the handshake and the first model's restore); transport 3 is healthy.
    auto made = std::make_shared<int>(0);
    fw::host::FirmwareHostConfig config;
    config.faultInjection = true;
    shim::TransportFactory factory = [made, config]() -> proto::Result<std::unique_ptr<proto::Transport>> {
        auto t = fw::host::startLoopbackTransport(config);
        if (!t) return std::unexpected(t.error());
        const int n = ++*made;
        return std::unique_ptr<proto::Transport>(new DyingTransport(std::move(*t), n == 2 ? 3 : 0));
    };
    auto device = shim::createNpuDevice(std::move(factory), quickOptions());
    REQUIRE(device.has_value());
    auto demo = workload().prepare(**device);  // restored first (registered first)
    auto relu = framework::findTestCase(framework::ctsDataDir() + "/V1_0.jsonl.gz", "relu_quant8_1");
    REQUIRE(relu.has_value());
    auto reluPrepared = (**device).prepareModel(relu->model, hal::ExecutionPreference::FAST_SINGLE_ANSWER,
                                                hal::Priority::MEDIUM, {}, {}, {}, {});
    REQUIRE(reluPrepared.has_value());
    crashHost(**device);
    // With a stale handle the demo request would run the relu model (its output fits the demo's).
    auto out = workload().run(*demo);
    REQUIRE(out.has_value());
    CHECK(*out == workload().expected);
    const auto c = counters(**device);
    CHECK(c.restarts == 2);
    CHECK(c.modelsRestored == 3);  // demo on transport 2, then demo and relu on transport 3
    CHECK(c.modelsLost == 0);
    auto request = framework::makeRequest(*relu);
    REQUIRE(request.has_value());
    REQUIRE(
        (*reluPrepared)->executeSynchronously(request->request, hal::MeasureTiming::NO, {}, {}).has_value());
    CHECK_FALSE(framework::compareOutputs(*relu, framework::readOutputs(*request), {}).has_value());
}

namespace {
// Loses the first frame of each method in `drop` on the way to the firmware, as a flaky link
// would: the call then gets no answer.
class DroppingTransport final : public ForwardingTransport {
public:
    DroppingTransport(std::unique_ptr<proto::Transport> inner, std::vector<uint8_t> drop)
        : ForwardingTransport(std::move(inner)), drop_(std::move(drop)) {}
    proto::Result<void> write(std::span<const uint8_t> bytes, std::span<const int> fds) override {
        proto::FrameHeader h;
        if (bytes.size() >= proto::kFrameHeaderSize && proto::parseFrameHeader(bytes.data(), &h)) {
            auto it = std::find(drop_.begin(), drop_.end(), h.type);
            if (it != drop_.end()) {
                drop_.erase(it);
                return {};
            }
        }
        return inner_->write(bytes, fds);
    }
    void arm(std::vector<uint8_t> drop) { drop_ = std::move(drop); }

private:
    std::vector<uint8_t> drop_;
};
}  // namespace

TEST_CASE(
    "an execution and the ping after it are lost: Reset answers, the model is restored, the request "
    "replayed") {
    // A single transport (no restart), whose drop list is armed once the model is prepared.
    auto loop = fw::host::startLoopbackTransport({});
    REQUIRE(loop.has_value());
    auto dropping = std::make_unique<DroppingTransport>(std::move(*loop), std::vector<uint8_t>{});
    DroppingTransport* link = dropping.get();
    auto options = quickOptions();
    options.executeTimeout = 300ms;
    options.recovery.pingTimeout = 100ms;
    auto device = shim::createNpuDevice(std::move(dropping), options);
    REQUIRE(device.has_value());
    auto prepared = workload().prepare(**device);
    link->arm({static_cast<uint8_t>(proto::METHOD_EXECUTE), static_cast<uint8_t>(proto::METHOD_PING)});
    auto out = workload().run(*prepared);
    REQUIRE(out.has_value());
    CHECK(*out == workload().expected);
    const auto c = counters(**device);
    CHECK(c.callTimeouts == 1);
    CHECK(c.pingFailures == 1);
    CHECK(c.resets == 1);
    CHECK(c.restarts == 0);
    CHECK(c.modelsRestored == 1);
    CHECK(c.requestsReplayed == 1);
    CHECK(firmwareCounter(c, "rpc.resets") == 1);
}

namespace {
// Options for the wedge tests: a short execute timeout and stall window (pings 100 ms apart);
// pings and Reset keep their default time to answer, so that a loaded machine does not turn an
// answer into a silence.
shim::ShimOptions wedgeOptions() {
    auto options = quickOptions();
    options.executeTimeout = 300ms;
    options.recovery.stallWindow = 200ms;
    return options;
}

void wedge(hal::IDevice& device, uint32_t mode) {
    shim::NpuFaultPlan plan;
    plan.wedge = mode;
    REQUIRE(shim::injectNpuFaults(device, plan).has_value());
}

// Wedges the device's firmware host (InjectFaultsRequest.wedge `mode`) and runs the workload
// through it: the answer must be right. Then one stall must have been seen and got past with
// `resets` Resets and `restarts` restarts, the model restored and the request replayed once.
shim::NpuCounters runWedged(hal::IDevice& device, hal::IPreparedModel& prepared, uint32_t mode,
                            uint64_t resets, uint64_t restarts) {
    wedge(device, mode);
    auto out = workload().run(prepared);
    REQUIRE(out.has_value());
    CHECK(*out == workload().expected);
    const auto c = counters(device);
    CHECK(c.stalls == 1);
    CHECK(c.resets == resets);
    CHECK(c.restarts == restarts);
    CHECK(c.modelsRestored == 1);
    CHECK(c.requestsReplayed == 1);
    CHECK(c.requestsFailed == 0);
    return c;
}
}  // namespace

TEST_CASE(
    "a wedged firmware host that answers pings: the stall is seen, Reset frees it, the request replayed") {
    auto device = openLoopback(wedgeOptions());
    auto prepared = workload().prepare(*device);
    const auto c = runWedged(*device, *prepared, 1, 1, 0);
    CHECK(c.callTimeouts == 1);
    CHECK(c.pingFailures == 0);  // every ping was answered, on arrival, while the item was stuck
    CHECK(firmwareCounter(c, "rpc.resets") == 1);
    CHECK(firmwareCounter(c, "rpc.pings_on_arrival") >= 2);
    // The wedge fired once: the next request runs clean.
    CHECK(workload().run(*prepared).value() == workload().expected);
    CHECK(counters(*device).requestsReplayed == 1);
}

TEST_CASE("a wedge that Reset does not free: Reset goes unanswered, the loopback host is restarted") {
    auto device = openLoopback(wedgeOptions());
    auto prepared = workload().prepare(*device);
    (void)runWedged(*device, *prepared, 2, 0, 1);
}

TEST_CASE("a wedged npu-fwd that answers pings: Reset frees it over unix, the request replayed") {
    TestDaemon daemon("npu-wedge", wedgeOptions());
    auto device = shim::connectNpuDaemon(daemon.options);
    REQUIRE(device.has_value());
    auto prepared = workload().prepare(**device);
    const auto c = runWedged(**device, *prepared, 1, 1, 0);
    CHECK(c.callTimeouts == 1);
    CHECK(c.pingFailures == 0);
    CHECK(firmwareCounter(c, "rpc.resets") == 1);
    CHECK(workload().run(*prepared).value() == workload().expected);
    device->reset();
    prepared.reset();
}

TEST_CASE(
    "a wedged npu-fwd that Reset does not free: the shim kills the daemon it started and starts another") {
    TestDaemon daemon("npu-wedge2", wedgeOptions());
    auto device = shim::connectNpuDaemon(daemon.options);
    REQUIRE(device.has_value());
    auto prepared = workload().prepare(**device);
    const auto c = runWedged(**device, *prepared, 2, 0, 1);
    CHECK(firmwareCounter(c, "rpc.resets") == 0);  // a new daemon's firmware
    CHECK(workload().run(*prepared).value() == workload().expected);
    device->reset();
    prepared.reset();
}

TEST_CASE("wedge injection: an unknown mode is refused naming the modes") {
    auto device = openLoopback();
    shim::NpuFaultPlan plan;
    plan.wedge = 4;
    auto r = shim::injectNpuFaults(*device, plan);
    REQUIRE_FALSE(r.has_value());
    CHECK_THAT(r.error().message, Catch::Contains("wedge 4") && Catch::Contains("until a Reset"));
}

namespace {
// Answers every Ping itself, as a hostile (or broken) firmware would, with the largest values
// there are: an item running forever, a progress counter at its top, 2^32-1 requests queued.
class HostilePingTransport final : public ForwardingTransport {
public:
    using ForwardingTransport::ForwardingTransport;
    proto::Result<void> write(std::span<const uint8_t> bytes, std::span<const int> fds) override {
        proto::FrameHeader h;
        if (bytes.size() < proto::kFrameHeaderSize || !proto::parseFrameHeader(bytes.data(), &h) ||
            h.type != proto::METHOD_PING || bytes.size() < proto::kFrameHeaderSize + h.length) {
            return inner_->write(bytes, fds);
        }
        proto::PingRequest request;
        REQUIRE(request.ParseFromArray(bytes.data() + proto::kFrameHeaderSize, static_cast<int>(h.length)));
        proto::PingReply reply;
        reply.set_nonce(request.nonce());
        reply.set_answered_on_arrival(true);
        reply.set_item_running(true);
        reply.set_item_running_us(UINT64_MAX);
        reply.set_progress(UINT64_MAX);
        reply.set_session_queued(UINT32_MAX);
        reply.set_item_is_mine(true);
        const std::string payload = reply.SerializeAsString();
        proto::FrameHeader out;
        out.type = proto::METHOD_PING;
        out.flags = proto::kFlagResponse;
        out.callId = h.callId;
        out.length = static_cast<uint32_t>(payload.size());
        std::vector<uint8_t> frame(proto::kFrameHeaderSize);
        proto::encodeFrameHeader(out, reinterpret_cast<const uint8_t*>(payload.data()), frame.data());
        frame.insert(frame.end(), payload.begin(), payload.end());
        std::lock_guard lock(mutex_);
        pending_.insert(pending_.end(), frame.begin(), frame.end());
        return {};
    }
    proto::Result<size_t> read(std::span<uint8_t> buffer, std::vector<proto::UniqueFd>* fds,
                               std::chrono::milliseconds timeout) override {
        const auto deadline = std::chrono::steady_clock::now() + timeout;
        for (;;) {
            {
                std::lock_guard lock(mutex_);
                if (!pending_.empty()) {
                    const size_t n = std::min(buffer.size(), pending_.size());
                    std::copy_n(pending_.begin(), n, buffer.begin());
                    pending_.erase(pending_.begin(), pending_.begin() + static_cast<std::ptrdiff_t>(n));
                    return n;
                }
            }
            const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                deadline - std::chrono::steady_clock::now());
            auto r = inner_->read(buffer, fds, std::clamp(left, 0ms, 10ms));
            if (r || r.error().kind != proto::Error::Kind::kTimeout || left <= 0ms) return r;
        }
    }

private:
    std::mutex mutex_;
    std::vector<uint8_t> pending_;
};
}  // namespace

TEST_CASE(
    "a hostile PingReply (huge values, a counter at its top) is no progress: the shim resets, the answer is "
    "right") {
    fw::host::FirmwareHostConfig config;
    config.faultInjection = true;
    shim::TransportFactory factory = [config]() -> proto::Result<std::unique_ptr<proto::Transport>> {
        auto t = fw::host::startLoopbackTransport(config);
        if (!t) return std::unexpected(t.error());
        return std::unique_ptr<proto::Transport>(new HostilePingTransport(std::move(*t)));
    };
    auto device = shim::createNpuDevice(std::move(factory), wedgeOptions());
    REQUIRE(device.has_value());
    auto prepared = workload().prepare(**device);
    const auto c = runWedged(**device, *prepared, 1, 1, 0);
    CHECK(firmwareCounter(c, "rpc.pings_on_arrival") == 0);  // none reached the firmware
}

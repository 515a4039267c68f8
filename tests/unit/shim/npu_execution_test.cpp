// Every execution mode, QoS, memory domains and asynchronous preparation on the NPU, over
// loopback and over the unix socket to npu-fwd (the whole execution suite; asynchronous
// preparation a subset): the same suites the CPU reference runs (tests/unit/hal/
// execution_suite.h, prepare_suite.h).
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <functional>
#include <future>

#include "../hal/execution_suite.h"
#include "../hal/model_builder.h"
#include "../hal/prepare_suite.h"
#include "chain_model.h"
#include "loopback_device.h"
#include "npu/fw/platform/host/firmware_host.h"
#include "npu/shim/npu_device.h"

using namespace npu;
using namespace npu::hal::test;
using namespace npu::shim::test;

namespace {

// Two clients of one npu-fwd the first one starts (and stops when it goes).
struct UnixClients {
    std::string socket;
    std::shared_ptr<hal::IDevice> first, second;
    ~UnixClients() {
        second.reset();
        first.reset();
        std::filesystem::remove(socket);
    }
};

std::unique_ptr<UnixClients> openUnix(const char* tag) {
    auto c = std::make_unique<UnixClients>();
    c->socket = (std::filesystem::temp_directory_path() /
                 (std::string("npu-exec-") + tag + "-" + std::to_string(getpid()) + ".sock"))
                    .string();
    shim::DaemonOptions options;
    options.socketPath = c->socket;
    options.daemonPath = NPU_FWD_TEST_PATH;
    auto first = shim::connectNpuDaemon(options);
    INFO((first ? std::string() : first.error().message));
    REQUIRE(first.has_value());
    options.spawnIfAbsent = false;
    auto second = shim::connectNpuDaemon(options);
    REQUIRE(second.has_value());
    c->first = *first;
    c->second = *second;
    return c;
}

// The npu-fwd of one test case of the execution suite: the first device opened starts it, the
// next (the case's `other`) connects to it as a second client of the same NPU; it stops when the
// last device of the case goes.
struct UnixDaemon {
    std::string socket;
    std::shared_ptr<hal::IDevice> starter;
    ~UnixDaemon() {
        starter.reset();
        std::filesystem::remove(socket);
    }
};

struct UnixDevice {
    std::shared_ptr<UnixDaemon> daemon;
    std::shared_ptr<hal::IDevice> device;
};

UnixDevice openUnixDevice() {
    static std::weak_ptr<UnixDaemon> current;  // the case's daemon while one of its devices lives
    static int started = 0;
    UnixDevice u;
    u.daemon = current.lock();
    shim::DaemonOptions options;
    options.daemonPath = NPU_FWD_TEST_PATH;
    if (u.daemon) {
        options.socketPath = u.daemon->socket;
        options.spawnIfAbsent = false;
        auto next = shim::connectNpuDaemon(options);
        INFO((next ? std::string() : next.error().message));
        REQUIRE(next.has_value());
        u.device = *next;
        return u;
    }
    u.daemon = std::make_shared<UnixDaemon>();
    u.daemon->socket =
        (std::filesystem::temp_directory_path() /
         ("npu-exec-suite-" + std::to_string(getpid()) + "-" + std::to_string(++started) + ".sock"))
            .string();
    options.socketPath = u.daemon->socket;
    auto first = shim::connectNpuDaemon(options);
    INFO((first ? std::string() : first.error().message));
    REQUIRE(first.has_value());
    u.daemon->starter = *first;
    u.device = *first;
    current = u.daemon;
    return u;
}

}  // namespace

#define OPEN_DEVICE openLoopback
NPU_HAL_EXECUTION_SUITE("npu loopback", "[shim][execution]")
NPU_HAL_PREPARE_SUITE("npu loopback", "[shim][prepare]")
#undef OPEN_DEVICE

// Every case of the suite applies over unix too: `other` is a second client of the same npu-fwd,
// so the cross-client cases (a prepared model or buffer token of another client) meet the
// firmware's session checks as well as the HAL's.
#define OPEN_DEVICE openUnixDevice
NPU_HAL_EXECUTION_SUITE("npu unix", "[shim][execution][unix]")
#undef OPEN_DEVICE

TEST_CASE("npu loopback: asynchronous prepare to and from cache files", "[shim][prepare][caching]") {
    const auto dir =
        std::filesystem::temp_directory_path() / ("npu-async-prepare-" + std::to_string(getpid()));
    std::filesystem::create_directories(dir);
    struct RemoveDir {
        std::filesystem::path path;
        ~RemoveDir() {
            std::error_code ignored;
            std::filesystem::remove_all(path, ignored);
        }
    } removeDir{dir};
    auto loop = fw::host::startLoopbackFirmware();
    REQUIRE(loop.has_value());
    shim::ShimOptions options;
    options.cacheStateDirectory = (dir / "state").string();
    auto device = shim::createNpuDevice(std::move(loop->hostEnd), options);
    REQUIRE(device.has_value());
    checkAsyncPrepareFromCache(**device, dir);
    device->reset();  // before its firmware
}

TEST_CASE("npu unix: asynchronous prepare", "[shim][prepare]") {
    auto c = openUnix("prepare");
    checkAsyncPrepare(*c->first);
    checkAsyncPrepareQualityOfService(*c->first);
    checkManyAsyncPrepares(*c->first);
    checkAsyncPrepareLimit(*c->first, hal::DeviceBase::kMaxAsyncPrepares);
    checkPrepareCallbackTimeout(*c->first);
    checkDeviceDestroyedWithPreparesInFlight(std::move(c->first));
}

TEST_CASE("npu unix: asynchronous prepare, argument errors at launch", "[shim][prepare]") {
    auto c = openUnix("prepare-launch");
    checkAsyncPrepareRefusedAtLaunch(*c->first);
}

// The NPU runs tensors of fixed shapes (docs/execution.md "On the NPU"): a model with an unknown
// dimension is reported unsupported and refused at prepare, naming the operation, the operand and
// the dimension; so every buffer's dimensions come fully known from its roles (dynamic-shape
// buffers, checkDynamicBuffer, run on the reference).
TEST_CASE("npu loopback: MemoryDomain dynamic shapes: a model of unknown dimensions is refused as documented",
          "[shim][memory-domain]") {
    auto l = openLoopback();
    const hal::Model dynamic = addModel({0, 4});
    auto support = shim::querySupportedOperations(*l.device, dynamic);
    INFO((support ? std::string() : support.error().message));
    REQUIRE(support.has_value());
    REQUIRE(support->supported.size() == 1);
    CHECK_FALSE(support->supported[0]);
    REQUIRE(support->reasons.size() == 1);
    CHECK_THAT(support->reasons[0], Catch::Contains("dimension 0 is unknown; fully specified shapes only"));

    auto prepared = l.device->prepareModel(dynamic);
    REQUIRE_FALSE(prepared.has_value());
    CHECK(prepared.error().status == hal::ErrorStatus::INVALID_ARGUMENT);
    CHECK_THAT(prepared.error().message,
               Catch::Contains("operation 0 (ADD): input1 (operand 0) dimension 0 is unknown; "
                               "fully specified shapes only"));

    // A descriptor of unknown dimensions takes them from the roles, which are fully known.
    auto fixed = prepare(*l.device);
    auto buffer = l.device->allocate({{0, 4}}, {fixed}, {role(0)}, {});
    INFO((buffer ? std::string() : buffer.error().message));
    REQUIRE(buffer.has_value());
    auto rows = buffer->buffer->copyFrom(*bytes(std::vector<uint8_t>(12, 1)), {3, 4});
    REQUIRE_FALSE(rows.has_value());
    CHECK(rows.error().status == hal::ErrorStatus::INVALID_ARGUMENT);  // conflicts with [1, 4]
    CHECK_THAT(rows.error().message, Catch::Contains("[3, 4] conflict with"));
    REQUIRE(buffer->buffer->copyFrom(*bytes({1, 2, 3, 4}), {}).has_value());
}

TEST_CASE("npu loopback: MemoryDomain buffers live in firmware memory, freed on release",
          "[shim][memory-domain]") {
    auto l = openLoopback();
    hal::IDevice& device = *l.device;
    auto prepared = prepare(device);
    const uint64_t dramBefore = firmwareCounter(device, "runtime.dram_bytes_in_use");
    auto in = device.allocate({}, {prepared}, {role(0)}, {});
    auto out = device.allocate({}, {prepared}, {}, {role(0)});
    REQUIRE(in.has_value());
    REQUIRE(out.has_value());
    CHECK(firmwareCounter(device, "runtime.buffers") == 2);
    CHECK(firmwareCounter(device, "runtime.buffer_bytes") == 8);
    CHECK(firmwareCounter(device, "runtime.dram_bytes_in_use") > dramBefore);

    // copyFrom moves 4 bytes in; the execution stages only its shared-memory input (4 bytes):
    // the buffers are read and written in place.
    const uint64_t copied = firmwareCounter(device, "runtime.copied_bytes");
    REQUIRE(in->buffer->copyFrom(*bytes({1, 2, 3, 4}), {}).has_value());
    CHECK(firmwareCounter(device, "runtime.copied_bytes") - copied == 4);
    auto r = prepared->executeSynchronously(bufferRequest(in->token, out->token, bytes({5, 5, 5, 5})),
                                            hal::MeasureTiming::NO, std::nullopt, std::nullopt);
    INFO((r ? std::string() : r.error().message));
    REQUIRE(r.has_value());
    CHECK(firmwareCounter(device, "runtime.copied_bytes") - copied == 8);
    auto read = hal::Memory::create(4);
    REQUIRE(out->buffer->copyTo(*read).has_value());
    CHECK(contents(*read) == std::vector<uint8_t>{6, 7, 8, 9});

    in->buffer.reset();
    CHECK(firmwareCounter(device, "runtime.buffers") == 1);
    out->buffer.reset();
    CHECK(firmwareCounter(device, "runtime.buffers") == 0);
    CHECK(firmwareCounter(device, "runtime.buffer_bytes") == 0);
    CHECK(firmwareCounter(device, "runtime.dram_bytes_in_use") == dramBefore);
}

namespace {

// Runs `f` on a thread of its own; the future is ready once it returned. The thread is detached,
// so that a test whose `f` never returns fails at its bounded wait instead of hanging in a join.
std::future<void> onItsOwnThread(std::function<void()> f) {
    auto done = std::make_shared<std::promise<void>>();
    std::future<void> future = done->get_future();
    std::thread([f = std::move(f), done] {
        f();
        done->set_value();
    }).detach();
    return future;
}

}  // namespace

// docs/execution.md "Memory model": releasing a prepared model while executions are in flight is
// safe, and the release frees the firmware's memory. The firmware's work is held, so every
// execution is still queued there (or waiting for its fence) when the model is dropped.
TEST_CASE("npu loopback: a prepared model dropped while asynchronous and fenced executions are pending",
          "[shim][execution][lifetime]") {
    auto l = openLoopback();
    hal::IDevice& device = *l.device;
    const uint64_t modelsBefore = firmwareCounter(device, "runtime.loaded_models");
    const uint64_t dramBefore = firmwareCounter(device, "runtime.dram_bytes_in_use");
    auto prepared = prepare(device);
    CHECK(firmwareCounter(device, "runtime.loaded_models") == modelsBefore + 1);
    CHECK(firmwareCounter(device, "runtime.dram_bytes_in_use") > dramBefore);

    l.firmware->holdWork(true);
    constexpr int kEach = 3;
    std::vector<AddRequest> asyncRequests, fencedRequests;
    std::vector<std::shared_ptr<hal::ExecutionCallback>> callbacks;
    std::vector<hal::FencedResult> fenced;
    for (int i = 0; i < kEach; ++i) {
        asyncRequests.push_back(addRequest(static_cast<uint8_t>(i), 10));
        callbacks.push_back(std::make_shared<hal::ExecutionCallback>());
        REQUIRE(prepared
                    ->execute(asyncRequests.back().request, hal::MeasureTiming::NO, std::nullopt,
                              std::nullopt, callbacks.back())
                    .has_value());
        fencedRequests.push_back(addRequest(static_cast<uint8_t>(i), 20));
        auto f = prepared->executeFenced(fencedRequests.back().request, {}, hal::MeasureTiming::NO,
                                         std::nullopt, std::nullopt, std::nullopt);
        REQUIRE(f.has_value());
        fenced.push_back(*f);
    }
    // One more waits for a fence nobody signals: the release ends its wait.
    auto never = addRequest(1, 1);
    EventFd gate;
    auto waiting = prepared->executeFenced(never.request, {gate.fd}, hal::MeasureTiming::NO, std::nullopt,
                                           std::nullopt, std::nullopt);
    REQUIRE(waiting.has_value());
    REQUIRE(waitFirmwareCounter(device, "sched.queued_now", [](uint64_t v) { return v >= 2 * kEach; }) ==
            2 * kEach);

    // The last reference goes on another thread: the release waits for the executions in flight.
    auto released = onItsOwnThread([p = std::move(prepared)]() mutable { p.reset(); });
    CHECK(released.wait_for(std::chrono::milliseconds(50)) == std::future_status::timeout);
    CHECK(firmwareCounter(device, "runtime.loaded_models") == modelsBefore + 1);  // still in use
    l.firmware->holdWork(false);
    REQUIRE(released.wait_for(kWait) == std::future_status::ready);

    for (int i = 0; i < kEach; ++i) {
        INFO("execution " << i);
        auto done = callbacks[i]->wait(kWait);
        INFO((done ? std::string() : done.error().message));
        REQUIRE(done.has_value());
        CHECK(asyncRequests[i].output() == std::vector<uint8_t>(4, static_cast<uint8_t>(i + 10)));
        const auto info = finishedInfo(fenced[i]);
        INFO(info.message);
        CHECK(info.status == hal::ErrorStatus::NONE);
        CHECK(fencedRequests[i].output() == std::vector<uint8_t>(4, static_cast<uint8_t>(i + 20)));
    }
    const auto cancelled = finishedInfo(*waiting);
    CHECK(cancelled.status == hal::ErrorStatus::GENERAL_FAILURE);
    CHECK_THAT(cancelled.message, Catch::Contains("cancelled"));
    CHECK(never.output() == std::vector<uint8_t>(4, 0));  // it never ran

    CHECK(firmwareCounter(device, "runtime.loaded_models") == modelsBefore);
    CHECK(firmwareCounter(device, "runtime.dram_bytes_in_use") == dramBefore);
    CHECK(firmwareCounter(device, "sched.queued_now") == 0);
}

// An IBuffer dropped while executions that use it are pending: one queued in the firmware, one
// waiting for its fence. Both run on the buffer's contents; the firmware frees it afterwards.
TEST_CASE("npu loopback: MemoryDomain buffer dropped while executions that use it are pending",
          "[shim][memory-domain][lifetime]") {
    auto l = openLoopback();
    hal::IDevice& device = *l.device;
    auto prepared = prepare(device);
    const uint64_t dramBefore = firmwareCounter(device, "runtime.dram_bytes_in_use");
    auto in = device.allocate({}, {prepared}, {role(0)}, {});
    auto out = device.allocate({}, {prepared}, {}, {role(0)});
    REQUIRE(in.has_value());
    REQUIRE(out.has_value());
    REQUIRE(in->buffer->copyFrom(*bytes({1, 2, 3, 4}), {}).has_value());
    CHECK(firmwareCounter(device, "runtime.buffers") == 2);

    l.firmware->holdWork(true);
    // Queued in the firmware: input 0 from `in`, the output into `out`.
    auto callback = std::make_shared<hal::ExecutionCallback>();
    REQUIRE(prepared->execute(bufferRequest(in->token, out->token, bytes({1, 1, 1, 1})),
                              hal::MeasureTiming::NO, std::nullopt, std::nullopt, callback));
    REQUIRE(waitFirmwareCounter(device, "sched.queued_now", [](uint64_t v) { return v >= 1; }) == 1);
    // Waiting for its fence: input 0 from `in`, the output into shared memory.
    hal::Request toShared = bufferRequest(in->token, out->token, bytes({2, 2, 2, 2}));
    std::shared_ptr<hal::Memory> sharedOut = hal::Memory::create(4);
    REQUIRE(sharedOut != nullptr);
    toShared.pools[2] = sharedOut;
    toShared.outputs[0].location = {2, 0, 4, 0};
    EventFd gate;
    auto fenced = prepared->executeFenced(toShared, {gate.fd}, hal::MeasureTiming::NO, std::nullopt,
                                          std::nullopt, std::nullopt);
    REQUIRE(fenced.has_value());

    in->buffer.reset();  // the client lets go of the input buffer while both are pending
    l.firmware->holdWork(false);
    auto done = callback->wait(kWait);
    INFO((done ? std::string() : done.error().message));
    REQUIRE(done.has_value());
    // The fenced execution, launched with the buffer, still holds it: the firmware keeps it.
    CHECK(firmwareCounter(device, "runtime.buffers") == 2);
    gate.signal();
    const auto info = finishedInfo(*fenced);
    INFO(info.message);
    CHECK(info.status == hal::ErrorStatus::NONE);
    CHECK(contents(*sharedOut) == std::vector<uint8_t>{3, 4, 5, 6});
    auto read = hal::Memory::create(4);
    REQUIRE(out->buffer->copyTo(*read).has_value());
    CHECK(contents(*read) == std::vector<uint8_t>{2, 3, 4, 5});

    // The executions held the input buffer; it goes once the last of them has ended.
    CHECK(waitFirmwareCounter(device, "runtime.buffers", [](uint64_t v) { return v == 1; }) == 1);
    out->buffer.reset();
    CHECK(firmwareCounter(device, "runtime.buffers") == 0);
    CHECK(firmwareCounter(device, "runtime.buffer_bytes") == 0);
    CHECK(firmwareCounter(device, "runtime.dram_bytes_in_use") == dramBefore);
}

TEST_CASE("npu loopback: the firmware counts tensor bytes staged through the host window",
          "[shim][execution]") {
    auto l = openLoopback();
    auto prepared = prepare(*l.device);
    auto r = addRequest(1, 2);
    const uint64_t before = firmwareCounter(*l.device, "runtime.copied_bytes");
    REQUIRE(prepared->executeSynchronously(r.request, hal::MeasureTiming::NO, std::nullopt, std::nullopt));
    CHECK(firmwareCounter(*l.device, "runtime.copied_bytes") - before == 3 * 4);  // a, b in; out back
}

TEST_CASE("npu loopback: two fresh firmwares answer the same measured capabilities", "[shim][capabilities]") {
    auto capabilities = [] {
        auto l = openLoopback();
        auto caps = l.device->getCapabilities();
        REQUIRE(caps.has_value());
        return *caps;
    };
    const hal::Capabilities a = capabilities(), b = capabilities();
    auto same = [](const hal::PerformanceInfo& x, const hal::PerformanceInfo& y) {
        return x.execTime == y.execTime && x.powerUsage == y.powerUsage;
    };
    REQUIRE(a.operandPerformance.size() == b.operandPerformance.size());
    bool measured = false;
    for (size_t i = 0; i < a.operandPerformance.size(); ++i) {
        CHECK(a.operandPerformance[i].type == b.operandPerformance[i].type);
        CHECK(same(a.operandPerformance[i].info, b.operandPerformance[i].info));
        measured = measured || a.operandPerformance[i].info.execTime < 1.0f;
    }
    CHECK(measured);
    CHECK(same(a.relaxedFloat32toFloat16PerformanceTensor, b.relaxedFloat32toFloat16PerformanceTensor));
    CHECK(same(a.ifPerformance, b.ifPerformance));
    CHECK(same(a.whilePerformance, b.whilePerformance));
}

TEST_CASE("npu loopback: the execution preference reaches the firmware's tiling choice",
          "[shim][preference]") {
    // CONV 24x24x16 -> 64 (3x3, stride 2) + FC -> 32 on a 32 KiB scratchpad: a model whose
    // fewest-cycles tiling is not its least-traffic one (tests/unit/firmware/preference_test.cpp).
    hal::Model model;
    hal::SubgraphBuilder b(model, model.main);
    const auto q8 = hal::OperandType::TENSOR_QUANT8_ASYMM;
    const uint32_t x = b.input(q8, {1, 24, 24, 16}, 0.05f, 128);
    const uint32_t f = b.constant(q8, {64, 3, 3, 16}, 0.01f, 120);
    const uint32_t bias = b.constant(hal::OperandType::TENSOR_INT32, {64}, 0.0005f);
    const uint32_t y = b.temp(q8, {1, 12, 12, 64}, 0.05f, 128);
    b.operation(hal::OperationType::CONV_2D, {x, f, bias, b.scalar(1), b.scalar(2), b.scalar(2), b.scalar(1)},
                {y});
    const uint32_t f2 = b.constant(q8, {32, 12 * 12 * 64}, 0.01f, 120);
    const uint32_t bias2 = b.constant(hal::OperandType::TENSOR_INT32, {32}, 0.0005f);
    const uint32_t out = b.output(q8, {1, 32}, 0.05f, 128);
    b.operation(hal::OperationType::FULLY_CONNECTED, {y, f2, bias2, b.scalar(0)}, {out});

    auto compiled = [&](hal::ExecutionPreference preference) {
        fw::host::FirmwareHostConfig config;
        config.hw.scratchpadBytes = 32 << 10;
        config.hw.accumulatorBytes = 8 << 10;
        auto loop = fw::host::startLoopbackFirmware(config);
        REQUIRE(loop.has_value());
        auto device = shim::createNpuDevice(std::move(loop->hostEnd));
        REQUIRE(device.has_value());
        auto prepared = (*device)->prepareModel(model, preference, hal::Priority::MEDIUM, std::nullopt, {},
                                                {}, hal::CacheToken{});
        INFO((prepared ? std::string() : prepared.error().message));
        REQUIRE(prepared.has_value());
        auto info = shim::queryCompileInfo(**prepared);
        REQUIRE(info.has_value());
        return *info;
    };
    const shim::NpuCompileInfo fast = compiled(hal::ExecutionPreference::FAST_SINGLE_ANSWER);
    const shim::NpuCompileInfo sustained = compiled(hal::ExecutionPreference::SUSTAINED_SPEED);
    CHECK(fast.tuningTrials > 1);
    CHECK(fast.greedyCycles == sustained.greedyCycles);
    CHECK(fast.tunedCycles < sustained.tunedCycles);  // SUSTAINED_SPEED chose by DRAM traffic
}

TEST_CASE("npu loopback: a firmware with a short request queue gets no more calls than it holds",
          "[shim][execution]") {
    // HelloReply.queue_depth 4: the shim keeps 4 places for its watchdog and recovery and still
    // lets kWindowDepth (2) calls through, so 16 asynchronous executions wait in the shim instead
    // of being refused by the firmware with "queue full" (as they were with a fixed bound of 12).
    fw::host::FirmwareHostConfig config;
    config.queueDepth = 4;
    auto loop = fw::host::startLoopbackFirmware(config);
    REQUIRE(loop.has_value());
    auto device = shim::createNpuDevice(std::move(loop->hostEnd));
    REQUIRE(device.has_value());
    auto prepared = prepare(**device);
    std::vector<AddRequest> requests;
    std::vector<std::shared_ptr<hal::ExecutionCallback>> callbacks;
    for (uint8_t i = 0; i < 16; ++i) {
        requests.push_back(addRequest(i, 3));
        callbacks.push_back(std::make_shared<hal::ExecutionCallback>());
        REQUIRE(prepared
                    ->execute(requests.back().request, hal::MeasureTiming::NO, std::nullopt, std::nullopt,
                              callbacks.back())
                    .has_value());
    }
    for (size_t i = 0; i < callbacks.size(); ++i) {
        auto done = callbacks[i]->wait(kWait);
        INFO("execution " << i << ": " << (done ? std::string() : done.error().message));
        REQUIRE(done.has_value());
        CHECK(requests[i].output() == std::vector<uint8_t>(4, static_cast<uint8_t>(i + 3)));
    }
    prepared.reset();
    device->reset();
    loop->firmware.reset();
}

// docs/execution.md "Deadlines of running work", through the HAL: the firmware stops the
// execution at an operation boundary, the caller gets MISSED_DEADLINE_* and no timing (the seeds:
// on an error the durations are UINT64_MAX), and the next execution runs normally.
TEST_CASE("NPU: a deadline that passes while the execution runs: MISSED_DEADLINE, no timing, then it runs",
          "[shim][deadline]") {
    Loopback l = openLoopback();
    constexpr uint32_t kN = 64 * 1024;
    auto prepared = prepare(*l.device, chainModel(200, kN));
    hal::Request request;
    std::shared_ptr<hal::Memory> pool = hal::Memory::create(2 * kN);
    REQUIRE(pool != nullptr);
    std::memset(pool->data(), 1, kN);
    request.inputs = {{false, {0, 0, kN, 0}, {}}};
    request.outputs = {{false, {0, kN, kN, 0}, {}}};
    request.pools = {pool};

    // Whether the deadline passes while the execution waits, runs or after it ended depends on
    // timing: double the budget from 100 us until the firmware stopped it running.
    std::string stopped;
    for (auto budget = std::chrono::microseconds(100); budget <= 4s && stopped.empty(); budget *= 2) {
        auto fenced = prepared->executeFenced(request, {}, hal::MeasureTiming::YES, Clock::now() + budget,
                                              std::nullopt, std::nullopt);
        REQUIRE(fenced.has_value());
        const auto info = finishedInfo(*fenced);
        if (info.message.find("stopped before operation") == std::string::npos) continue;
        stopped = info.message;
        CHECK(missedDeadline(info.status));
        CHECK(info.timingLaunched.timeOnDeviceUs == hal::kNoTiming);
        CHECK(info.timingLaunched.timeInDriverUs == hal::kNoTiming);
        CHECK(info.timingFenced.timeOnDeviceUs == hal::kNoTiming);
        CHECK(info.timingFenced.timeInDriverUs == hal::kNoTiming);
    }
    INFO(stopped);
    REQUIRE_FALSE(stopped.empty());
    CHECK_THAT(stopped, Catch::Contains("missed deadline"));
    CHECK(firmwareCounter(*l.device, "sched.missed_running") >= 1);

    auto ran = prepared->executeSynchronously(request, hal::MeasureTiming::YES, std::nullopt, std::nullopt);
    INFO((ran ? std::string() : ran.error().message));
    REQUIRE(ran.has_value());
    CHECK(pool->data()[kN] == 201);  // a + a + ... : 200 additions of 1 to 1
    checkTiming(ran->timing);
}

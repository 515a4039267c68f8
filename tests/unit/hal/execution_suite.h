#pragma once
// One suite of execution-mode checks that runs on any hal::IDevice (the CPU reference and the
// NPU over each transport): asynchronous execution, fenced execution, bursts, reusable
// executions, QoS deadlines, output shapes and timing, and memory domains, after the VTS
// categories (MemoryDomainTests, QualityOfServiceTests, burst and fenced validation).
// The model is one quantized ADD (scale 1, zero point 0: out = a + b, saturating at 255).

#include <fcntl.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "npu/hal/device.h"
#include "npu/hal/execution_callback.h"
#include "npu/hal/prepared_model_base.h"
#include "npu/hal/sync_fence.h"

namespace npu::hal::test {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// Bounds of the test's own waits (never timing assertions: a healthy run takes milliseconds).
inline constexpr auto kWait = 20s;

// out = a + b over `dims` (0 = unknown; inputs and output alike), of `type`, every tensor with
// zero point `zeroPoint`.
inline Model addModel(std::vector<uint32_t> dims = {1, 4}, float outScale = 1.0f,
                      OperandType type = OperandType::TENSOR_QUANT8_ASYMM, int32_t zeroPoint = 0) {
    Model m;
    auto tensor = [&](OperandLifeTime lifetime, float scale) {
        Operand o;
        o.type = type;
        o.dimensions = dims;
        o.scale = scale;
        o.zeroPoint = zeroPoint;
        o.lifetime = lifetime;
        m.main.operands.push_back(o);
    };
    tensor(OperandLifeTime::SUBGRAPH_INPUT, 1.0f);
    tensor(OperandLifeTime::SUBGRAPH_INPUT, 1.0f);
    Operand act;
    act.type = OperandType::INT32;
    act.lifetime = OperandLifeTime::CONSTANT_COPY;
    act.location = {0, 0, 4, 0};
    m.main.operands.push_back(act);
    m.operandValues.assign(4, 0);
    tensor(OperandLifeTime::SUBGRAPH_OUTPUT, outScale);
    m.main.operations.push_back({OperationType::ADD, {0, 1, 2}, {3}});
    m.main.inputIndexes = {0, 1};
    m.main.outputIndexes = {3};
    return m;
}

// Inputs a and b and the output, one after the other in one memfd pool.
struct AddRequest {
    Request request;
    std::shared_ptr<Memory> pool;
    uint32_t n = 4;
    std::vector<uint8_t> output() const {
        return {pool->data() + 2 * n, pool->data() + 2 * n + request.outputs[0].location.length};
    }
    void setInputs(uint8_t a, uint8_t b) {
        std::memset(pool->data(), a, n);
        std::memset(pool->data() + n, b, n);
    }
};

inline AddRequest addRequest(uint8_t a, uint8_t b, uint32_t n = 4, uint32_t outLength = 0) {
    AddRequest r;
    r.n = n;
    r.pool = Memory::create(3 * n);
    REQUIRE(r.pool != nullptr);
    r.setInputs(a, b);
    r.request.inputs = {{false, {0, 0, n, 0}, {}}, {false, {0, n, n, 0}, {}}};
    r.request.outputs = {{false, {0, 2 * n, outLength ? outLength : n, 0}, {}}};
    r.request.pools = {r.pool};
    return r;
}

inline std::shared_ptr<IPreparedModel> prepare(IDevice& device, const Model& model = addModel()) {
    auto prepared = device.prepareModel(model);
    INFO((prepared ? std::string() : prepared.error().message));
    REQUIRE(prepared.has_value());
    return *prepared;
}

inline bool missedDeadline(ErrorStatus s) {
    return s == ErrorStatus::MISSED_DEADLINE_TRANSIENT || s == ErrorStatus::MISSED_DEADLINE_PERSISTENT;
}

inline void checkTiming(const Timing& t) {
    CHECK(t.timeInDriverUs != kNoTiming);
    if (t.timeOnDeviceUs != kNoTiming) CHECK(t.timeOnDeviceUs <= t.timeInDriverUs);
}

inline int closedFd() {
    const int fd = eventfd(0, EFD_CLOEXEC);
    REQUIRE(fd >= 0);
    close(fd);
    return fd;
}

// An fd that is open but cannot be polled: a memfd is a regular file.
struct RegularFile {
    int fd = memfd_create("not-a-fence", MFD_CLOEXEC);
    ~RegularFile() { close(fd); }
};

struct EventFd {
    int fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    ~EventFd() { close(fd); }
    void signal() { REQUIRE(signalSyncFence(fd).has_value()); }
};

inline FencedExecutionInfo finishedInfo(const FencedResult& fenced) {
    REQUIRE(fenced.syncFence >= 0);
    auto signalled = waitForSyncFence(fenced.syncFence, kWait);
    close(fenced.syncFence);
    REQUIRE(signalled.has_value());
    REQUIRE(*signalled);
    auto info = fenced.callback->getExecutionInfo();
    REQUIRE(info.has_value());
    return *info;
}

// ---- asynchronous execution ------------------------------------------------------------------

inline void checkAsyncExecution(IDevice& device) {
    auto prepared = prepare(device);
    auto r = addRequest(3, 4);
    auto callback = std::make_shared<ExecutionCallback>();
    REQUIRE(
        prepared->execute(r.request, MeasureTiming::YES, std::nullopt, std::nullopt, callback).has_value());
    auto result = callback->wait(kWait);
    INFO((result ? std::string() : result.error().message));
    REQUIRE(result.has_value());
    CHECK(r.output() == std::vector<uint8_t>(4, 7));
    REQUIRE(result->outputShapes.size() == 1);
    CHECK(result->outputShapes[0].dimensions == std::vector<uint32_t>{1, 4});
    checkTiming(result->timing);

    // Invalid launches are refused at once, and (NN HAL 1.3) the callback is notified with the
    // same error before the call returns.
    auto bad = r.request;
    bad.inputs.pop_back();
    auto badCallback = std::make_shared<ExecutionCallback>();
    auto refused = prepared->execute(bad, MeasureTiming::NO, std::nullopt, std::nullopt, badCallback);
    REQUIRE_FALSE(refused.has_value());
    CHECK(refused.error().status == ErrorStatus::INVALID_ARGUMENT);
    auto notified = badCallback->wait(std::chrono::milliseconds(0));
    REQUIRE_FALSE(notified.has_value());
    CHECK(notified.error().status == ErrorStatus::INVALID_ARGUMENT);
    CHECK(notified.error().message == refused.error().message);
    auto noCallback = prepared->execute(r.request, MeasureTiming::NO, std::nullopt, std::nullopt, nullptr);
    REQUIRE_FALSE(noCallback.has_value());
    CHECK(noCallback.error().status == ErrorStatus::INVALID_ARGUMENT);

    // Several in flight at once, then the prepared model released while they may still run:
    // every callback is called, with the right outputs.
    std::vector<AddRequest> requests;
    std::vector<std::shared_ptr<ExecutionCallback>> callbacks;
    for (uint8_t i = 0; i < 6; ++i) {
        requests.push_back(addRequest(i, 10));
        callbacks.push_back(std::make_shared<ExecutionCallback>());
        REQUIRE(prepared
                    ->execute(requests.back().request, MeasureTiming::NO, std::nullopt, std::nullopt,
                              callbacks.back())
                    .has_value());
    }
    prepared.reset();
    for (size_t i = 0; i < callbacks.size(); ++i) {
        auto done = callbacks[i]->wait(kWait);
        REQUIRE(done.has_value());
        CHECK(done->timing.timeInDriverUs == kNoTiming);
        CHECK(requests[i].output() == std::vector<uint8_t>(4, static_cast<uint8_t>(i + 10)));
    }
}

// ---- fenced execution ------------------------------------------------------------------------

inline void checkFencedExecution(IDevice& device) {
    auto prepared = prepare(device);
    SECTION("no fences: runs and signals its fence, with both timings") {
        auto r = addRequest(1, 2);
        auto fenced = prepared->executeFenced(r.request, {}, MeasureTiming::YES, std::nullopt, std::nullopt,
                                              std::nullopt);
        REQUIRE(fenced.has_value());
        auto info = finishedInfo(*fenced);
        CHECK(info.status == ErrorStatus::NONE);
        CHECK(r.output() == std::vector<uint8_t>(4, 3));
        checkTiming(info.timingLaunched);
        checkTiming(info.timingFenced);
        CHECK(info.timingLaunched.timeInDriverUs >= info.timingFenced.timeInDriverUs);
    }
    SECTION("waits for its fences: nothing runs before the last one signals") {
        auto r = addRequest(5, 6);
        EventFd a, b;
        auto fenced = prepared->executeFenced(r.request, {a.fd, b.fd}, MeasureTiming::NO, std::nullopt,
                                              std::nullopt, std::nullopt);
        REQUIRE(fenced.has_value());
        a.signal();
        auto early = waitForSyncFence(fenced->syncFence, 0ms);
        REQUIRE(early.has_value());
        CHECK_FALSE(*early);
        auto unfinished = fenced->callback->getExecutionInfo();
        REQUIRE_FALSE(unfinished.has_value());
        CHECK(unfinished.error().status == ErrorStatus::GENERAL_FAILURE);
        b.signal();
        auto info = finishedInfo(*fenced);
        CHECK(info.status == ErrorStatus::NONE);
        CHECK(info.timingLaunched.timeInDriverUs == kNoTiming);
        CHECK(r.output() == std::vector<uint8_t>(4, 11));
    }
    SECTION("invalid fences are INVALID_ARGUMENT: closed, not pollable, negative") {
        auto r = addRequest(1, 1);
        RegularFile file;
        for (int fd : {closedFd(), file.fd, -1}) {
            INFO("fd " << fd);
            auto fenced = prepared->executeFenced(r.request, {fd}, MeasureTiming::NO, std::nullopt,
                                                  std::nullopt, std::nullopt);
            REQUIRE_FALSE(fenced.has_value());
            CHECK(fenced.error().status == ErrorStatus::INVALID_ARGUMENT);
        }
        auto negative = prepared->executeFenced(r.request, {}, MeasureTiming::NO, std::nullopt, std::nullopt,
                                                std::chrono::nanoseconds(-1));
        REQUIRE_FALSE(negative.has_value());
        CHECK(negative.error().status == ErrorStatus::INVALID_ARGUMENT);
    }
    SECTION("a fence never signalled ends at the deadline with MISSED_DEADLINE") {
        auto r = addRequest(1, 1);
        EventFd never;
        auto fenced = prepared->executeFenced(r.request, {never.fd}, MeasureTiming::YES, Clock::now() + 200ms,
                                              std::nullopt, std::nullopt);
        REQUIRE(fenced.has_value());
        auto info = finishedInfo(*fenced);
        CHECK(missedDeadline(info.status));
        CHECK(info.timingLaunched.timeInDriverUs == kNoTiming);
        CHECK_THAT(info.message, Catch::Contains("fence 0"));
    }
    SECTION("a fence never signalled and no deadline: releasing the model ends the wait") {
        auto r = addRequest(1, 1);
        EventFd never;
        auto fenced = prepared->executeFenced(r.request, {never.fd}, MeasureTiming::NO, std::nullopt,
                                              std::nullopt, std::nullopt);
        REQUIRE(fenced.has_value());
        prepared.reset();
        auto info = finishedInfo(*fenced);
        CHECK(info.status == ErrorStatus::GENERAL_FAILURE);
        CHECK_THAT(info.message, Catch::Contains("cancelled"));
    }
}

// ---- bursts ----------------------------------------------------------------------------------

inline void checkBurst(IDevice& device) {
    auto prepared = prepare(device);
    auto burst = prepared->configureExecutionBurst();
    REQUIRE(burst.has_value());
    auto r = addRequest(2, 3);
    auto first =
        (*burst)->executeSynchronously(r.request, {5}, MeasureTiming::YES, std::nullopt, std::nullopt);
    REQUIRE(first.has_value());
    checkTiming(first->timing);
    CHECK(r.output() == std::vector<uint8_t>(4, 5));

    // The cached pool is reused when the request passes none.
    r.setInputs(20, 30);
    Request cachedOnly = r.request;
    cachedOnly.pools = {std::shared_ptr<Memory>()};
    auto again =
        (*burst)->executeSynchronously(cachedOnly, {5}, MeasureTiming::NO, std::nullopt, std::nullopt);
    REQUIRE(again.has_value());
    CHECK(r.output() == std::vector<uint8_t>(4, 50));

    auto expectInvalid = [&](const Request& request, std::vector<int64_t> tokens, const char* why) {
        INFO(why);
        auto e =
            (*burst)->executeSynchronously(request, tokens, MeasureTiming::NO, std::nullopt, std::nullopt);
        REQUIRE_FALSE(e.has_value());
        CHECK(e.error().status == ErrorStatus::INVALID_ARGUMENT);
    };
    auto other = addRequest(1, 1);
    expectInvalid(other.request, {5}, "token cached for another memory");
    expectInvalid(r.request, {-2}, "negative token other than -1");
    expectInvalid(r.request, {}, "no token for the pool");
    expectInvalid(cachedOnly, {7}, "null pool with a token never cached");
    expectInvalid(cachedOnly, {-1}, "null pool without a token");

    CHECK((*burst)->releaseMemoryResource(5).has_value());
    for (int64_t token : {int64_t{5}, int64_t{99}, int64_t{-1}}) {
        INFO("release " << token);
        auto twice = (*burst)->releaseMemoryResource(token);
        REQUIRE_FALSE(twice.has_value());
        CHECK(twice.error().status == ErrorStatus::INVALID_ARGUMENT);
    }
    expectInvalid(cachedOnly, {5}, "released token");
    // The burst keeps the prepared model alive.
    prepared.reset();
    REQUIRE(
        (*burst)->executeSynchronously(other.request, {-1}, MeasureTiming::NO, std::nullopt, std::nullopt));
    CHECK(other.output() == std::vector<uint8_t>(4, 2));
}

inline void checkReusableExecution(IDevice& device) {
    auto prepared = prepare(device);
    auto r = addRequest(4, 4);
    auto execution = prepared->createReusableExecution(r.request, MeasureTiming::NO, std::nullopt);
    REQUIRE(execution.has_value());
    for (uint8_t v : {1, 9}) {
        r.setInputs(v, v);
        REQUIRE((*execution)->executeSynchronously(std::nullopt).has_value());
        CHECK(r.output() == std::vector<uint8_t>(4, static_cast<uint8_t>(2 * v)));
    }
    auto fenced = (*execution)->executeFenced({}, std::nullopt, std::nullopt);
    REQUIRE(fenced.has_value());
    CHECK(finishedInfo(*fenced).status == ErrorStatus::NONE);
    auto bad = r.request;
    bad.outputs.clear();
    auto refused = prepared->createReusableExecution(bad, MeasureTiming::NO, std::nullopt);
    REQUIRE_FALSE(refused.has_value());
    CHECK(refused.error().status == ErrorStatus::INVALID_ARGUMENT);
}

// ---- quality of service ----------------------------------------------------------------------

enum class DeadlineKind { NOW, UNLIMITED, SHORT };

inline Deadline makeDeadline(DeadlineKind kind) {
    switch (kind) {
        case DeadlineKind::NOW:
            return Clock::now();
        case DeadlineKind::SHORT:
            return Clock::now() + 5ms;
        default:
            return std::nullopt;
    }
}

// NOW must miss, UNLIMITED must succeed, SHORT may do either (as in the VTS).
inline void checkDeadlineOutcome(DeadlineKind kind, bool ok, ErrorStatus status) {
    if (kind == DeadlineKind::NOW) {
        CHECK_FALSE(ok);
        CHECK(missedDeadline(status));
    } else if (kind == DeadlineKind::UNLIMITED) {
        CHECK(ok);
    } else {
        CHECK((ok || missedDeadline(status)));
    }
}

inline void checkQualityOfService(IDevice& device) {
    const Model model = addModel();
    for (auto kind : {DeadlineKind::NOW, DeadlineKind::UNLIMITED, DeadlineKind::SHORT}) {
        INFO("deadline kind " << static_cast<int>(kind));
        for (auto priority : {Priority::LOW, Priority::MEDIUM, Priority::HIGH}) {
            auto p = device.prepareModel(model, ExecutionPreference::SUSTAINED_SPEED, priority,
                                         makeDeadline(kind), {}, {}, CacheToken{});
            checkDeadlineOutcome(kind, p.has_value(), p ? ErrorStatus::NONE : p.error().status);
        }
        auto prepared = prepare(device, model);
        auto r = addRequest(1, 1);
        auto sync =
            prepared->executeSynchronously(r.request, MeasureTiming::NO, makeDeadline(kind), std::nullopt);
        checkDeadlineOutcome(kind, sync.has_value(), sync ? ErrorStatus::NONE : sync.error().status);

        auto callback = std::make_shared<ExecutionCallback>();
        auto launched =
            prepared->execute(r.request, MeasureTiming::NO, makeDeadline(kind), std::nullopt, callback);
        auto async =
            launched ? callback->wait(kWait) : Result<ExecutionResult>(std::unexpected(launched.error()));
        checkDeadlineOutcome(kind, async.has_value(), async ? ErrorStatus::NONE : async.error().status);

        auto fenced = prepared->executeFenced(r.request, {}, MeasureTiming::NO, makeDeadline(kind),
                                              std::nullopt, std::nullopt);
        const ErrorStatus fencedStatus = fenced ? finishedInfo(*fenced).status : fenced.error().status;
        checkDeadlineOutcome(kind, fencedStatus == ErrorStatus::NONE, fencedStatus);

        auto burst = prepared->configureExecutionBurst();
        REQUIRE(burst.has_value());
        auto b = (*burst)->executeSynchronously(r.request, {-1}, MeasureTiming::NO, makeDeadline(kind),
                                                std::nullopt);
        checkDeadlineOutcome(kind, b.has_value(), b ? ErrorStatus::NONE : b.error().status);
    }
    auto badPriority = device.prepareModel(model, ExecutionPreference::FAST_SINGLE_ANSWER,
                                           static_cast<Priority>(7), std::nullopt, {}, {}, CacheToken{});
    REQUIRE_FALSE(badPriority.has_value());
    CHECK(badPriority.error().status == ErrorStatus::INVALID_ARGUMENT);
    auto badPreference = device.prepareModel(model, static_cast<ExecutionPreference>(-1), Priority::LOW,
                                             std::nullopt, {}, {}, CacheToken{});
    REQUIRE_FALSE(badPreference.has_value());
    CHECK(badPreference.error().status == ErrorStatus::INVALID_ARGUMENT);
}

// ---- output shapes and timing ----------------------------------------------------------------

inline void checkShapesAndTiming(IDevice& device) {
    auto prepared = prepare(device);
    auto small = addRequest(1, 1, 4, 2);  // the output needs 4 bytes, gets 2
    auto r = prepared->executeSynchronously(small.request, MeasureTiming::YES, std::nullopt, std::nullopt);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().status == ErrorStatus::OUTPUT_INSUFFICIENT_SIZE);
    REQUIRE(r.error().outputShapes.size() == 1);
    CHECK(r.error().outputShapes[0].dimensions == std::vector<uint32_t>{1, 4});
    CHECK_FALSE(r.error().outputShapes[0].isSufficient);
    // The same through the asynchronous path.
    auto callback = std::make_shared<ExecutionCallback>();
    REQUIRE(prepared->execute(small.request, MeasureTiming::YES, std::nullopt, std::nullopt, callback));
    auto async = callback->wait(kWait);
    REQUIRE_FALSE(async.has_value());
    CHECK(async.error().status == ErrorStatus::OUTPUT_INSUFFICIENT_SIZE);
    CHECK(async.error().outputShapes.size() == 1);

    auto ok = addRequest(1, 1);
    auto timed = prepared->executeSynchronously(ok.request, MeasureTiming::YES, std::nullopt, std::nullopt);
    REQUIRE(timed.has_value());
    checkTiming(timed->timing);
    auto untimed = prepared->executeSynchronously(ok.request, MeasureTiming::NO, std::nullopt, std::nullopt);
    REQUIRE(untimed.has_value());
    CHECK(untimed->timing.timeOnDeviceUs == kNoTiming);
    CHECK(untimed->timing.timeInDriverUs == kNoTiming);
    auto badMeasure =
        prepared->executeSynchronously(ok.request, static_cast<MeasureTiming>(3), std::nullopt, std::nullopt);
    REQUIRE_FALSE(badMeasure.has_value());
    CHECK(badMeasure.error().status == ErrorStatus::INVALID_ARGUMENT);
}

// Two outputs (a + b twice): an OUTPUT_INSUFFICIENT_SIZE names the needed shape of every output.
inline void checkEveryOutputShape(IDevice& device) {
    Model model = addModel();
    Operand second = model.main.operands[3];
    model.main.operands.push_back(second);
    model.main.operations.push_back({OperationType::ADD, {0, 1, 2}, {4}});
    model.main.outputIndexes = {3, 4};
    auto prepared = prepare(device, model);
    auto r = addRequest(2, 2);
    auto out2 = Memory::create(2);  // the second output needs 4 bytes
    r.request.pools.push_back(std::shared_ptr<Memory>(std::move(out2)));
    r.request.outputs.push_back({false, {1, 0, 2, 0}, {}});
    auto result = prepared->executeSynchronously(r.request, MeasureTiming::YES, std::nullopt, std::nullopt);
    REQUIRE_FALSE(result.has_value());
    CHECK(result.error().status == ErrorStatus::OUTPUT_INSUFFICIENT_SIZE);
    REQUIRE(result.error().outputShapes.size() == 2);
    for (const auto& shape : result.error().outputShapes)
        CHECK(shape.dimensions == std::vector<uint32_t>{1, 4});
    CHECK(result.error().outputShapes[0].isSufficient);
    CHECK_FALSE(result.error().outputShapes[1].isSufficient);
}

// The asynchronous executions in flight per prepared model are bounded: fenced executions held
// by a fence fill every place, one more is RESOURCE_EXHAUSTED_TRANSIENT, and all finish once the
// fence signals.
inline void checkInFlightLimit(IDevice& device, size_t limit) {
    auto prepared = prepare(device);
    auto r = addRequest(1, 1);
    EventFd gate;
    std::vector<FencedResult> held;
    for (size_t i = 0; i < limit; ++i) {
        auto fenced = prepared->executeFenced(r.request, {gate.fd}, MeasureTiming::NO, std::nullopt,
                                              std::nullopt, std::nullopt);
        REQUIRE(fenced.has_value());
        held.push_back(*fenced);
    }
    auto callback = std::make_shared<ExecutionCallback>();
    auto refused = prepared->execute(r.request, MeasureTiming::NO, std::nullopt, std::nullopt, callback);
    REQUIRE_FALSE(refused.has_value());
    CHECK(refused.error().status == ErrorStatus::RESOURCE_EXHAUSTED_TRANSIENT);
    auto told = callback->wait(std::chrono::milliseconds(0));  // notified with it, at once
    REQUIRE_FALSE(told.has_value());
    CHECK(told.error().status == ErrorStatus::RESOURCE_EXHAUSTED_TRANSIENT);
    gate.signal();
    for (const auto& f : held) {
        const auto info = finishedInfo(f);
        INFO(info.message);
        CHECK(info.status == ErrorStatus::NONE);
    }
    auto next = std::make_shared<ExecutionCallback>();
    REQUIRE(prepared->execute(r.request, MeasureTiming::NO, std::nullopt, std::nullopt, next).has_value());
    CHECK(next->wait(kWait).has_value());
}

// ---- memory domains --------------------------------------------------------------------------

inline BufferRole role(uint32_t ioIndex, uint32_t modelIndex = 0, float probability = 1.0f) {
    return {modelIndex, ioIndex, probability};
}

inline void expectAllocateInvalid(IDevice& device, const BufferDesc& desc,
                                  const std::vector<std::shared_ptr<IPreparedModel>>& models,
                                  const std::vector<BufferRole>& inputs,
                                  const std::vector<BufferRole>& outputs, const char* why) {
    INFO(why);
    auto b = device.allocate(desc, models, inputs, outputs);
    REQUIRE_FALSE(b.has_value());
    CHECK(b.error().status == ErrorStatus::INVALID_ARGUMENT);
}

inline std::shared_ptr<Memory> bytes(std::vector<uint8_t> values) {
    std::shared_ptr<Memory> m = Memory::create(values.size());
    REQUIRE(m != nullptr);
    std::memcpy(m->data(), values.data(), values.size());
    return m;
}

inline std::vector<uint8_t> contents(const Memory& m) {
    return {m.data(), m.data() + m.size()};
}

// VTS MemoryDomainTests: allocation arguments that must be refused.
inline void checkAllocateValidation(IDevice& device, IDevice& otherDevice) {
    auto prepared = prepare(device);
    auto otherModel = prepare(device, addModel({1, 4}, 2.0f));  // output scale 2: another operand
    auto foreign = prepare(otherDevice);
    const std::vector<std::shared_ptr<IPreparedModel>> one = {prepared};
    expectAllocateInvalid(device, {}, one, {}, {}, "empty roles");
    expectAllocateInvalid(device, {}, {}, {role(0)}, {}, "no prepared model");
    expectAllocateInvalid(device, {}, {nullptr}, {role(0)}, {}, "null prepared model");
    expectAllocateInvalid(device, {}, {foreign}, {role(0)}, {}, "prepared model of another device");
    expectAllocateInvalid(device, {}, one, {role(0, 1)}, {}, "invalid model index");
    expectAllocateInvalid(device, {}, one, {role(2)}, {}, "invalid input index");
    expectAllocateInvalid(device, {}, one, {}, {role(1)}, "invalid output index");
    for (float p : {0.0f, -0.5f, 1.5f, std::numeric_limits<float>::quiet_NaN()}) {
        expectAllocateInvalid(device, {}, one, {role(0, 0, p)}, {}, "invalid frequency");
    }
    expectAllocateInvalid(device, {}, one, {role(0), role(0)}, {}, "the same role twice");
    expectAllocateInvalid(device, {{1, 5}}, one, {role(0)}, {}, "dimensions conflict with the descriptor");
    expectAllocateInvalid(device, {{1, 4, 1}}, one, {role(0)}, {}, "rank conflicts with the descriptor");
    expectAllocateInvalid(device, {}, {prepared, otherModel}, {role(0, 0)}, {role(0, 1)},
                          "conflicting roles: the output of the second model has another scale");
    auto fine = device.allocate({{1, 4}}, {prepared, otherModel}, {role(0, 0), role(1, 1)}, {role(0, 0)});
    INFO((fine ? std::string() : fine.error().message));
    REQUIRE(fine.has_value());
    CHECK(fine->token > 0);
}

// VTS MemoryDomainAllocateTest: roles of two prepared models that disagree on the operand type,
// the zero point, the rank or the dimensions.
inline void checkAllocateConflicts(IDevice& device) {
    auto base = prepare(device);
    const std::pair<Model, const char*> others[] = {
        {addModel({1, 4}, 1.0f, OperandType::TENSOR_QUANT8_ASYMM_SIGNED), "operand type"},
        {addModel({1, 4}, 1.0f, OperandType::TENSOR_QUANT8_ASYMM, 3), "zero point"},
        {addModel({4}), "rank"},
        {addModel({2, 4}), "dimensions"},
    };
    for (const auto& [model, why] : others) {
        auto other = prepare(device, model);
        expectAllocateInvalid(device, {}, {base, other}, {role(0, 0), role(0, 1)}, {}, why);
        expectAllocateInvalid(device, {}, {base, other}, {role(0, 0)}, {role(0, 1)}, why);
    }
}

// IBuffer::copyTo / copyFrom with a memfd and with a mappable file.
inline void checkBufferCopies(IDevice& device) {
    auto prepared = prepare(device);
    auto allocated = device.allocate({}, {prepared}, {role(0), role(1)}, {});
    REQUIRE(allocated.has_value());
    IBuffer& buffer = *allocated->buffer;
    auto out = Memory::create(4);
    auto uninitialized = buffer.copyTo(*out);
    REQUIRE_FALSE(uninitialized.has_value());
    CHECK(uninitialized.error().status == ErrorStatus::GENERAL_FAILURE);

    auto wrongSize = buffer.copyFrom(*bytes({1, 2, 3}), {});
    REQUIRE_FALSE(wrongSize.has_value());
    CHECK(wrongSize.error().status == ErrorStatus::INVALID_ARGUMENT);
    auto wrongDims = buffer.copyFrom(*bytes({1, 2, 3, 4}), {2, 2});
    REQUIRE_FALSE(wrongDims.has_value());
    CHECK(wrongDims.error().status == ErrorStatus::INVALID_ARGUMENT);

    REQUIRE(buffer.copyFrom(*bytes({1, 2, 3, 4}), {1, 4}).has_value());
    REQUIRE(buffer.copyTo(*out).has_value());
    CHECK(contents(*out) == std::vector<uint8_t>{1, 2, 3, 4});
    auto big = Memory::create(8);
    auto tooBig = buffer.copyTo(*big);
    REQUIRE_FALSE(tooBig.has_value());
    CHECK(tooBig.error().status == ErrorStatus::INVALID_ARGUMENT);

    // A mappable file: fd + offset + length.
    const auto path = std::filesystem::temp_directory_path() / ("npu-buffer-" + std::to_string(getpid()));
    {
        std::ofstream f(path, std::ios::binary);
        std::vector<char> page(4096 + 4, 0);
        page[4096] = 9, page[4097] = 8, page[4098] = 7, page[4099] = 6;
        f.write(page.data(), static_cast<std::streamsize>(page.size()));
    }
    const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
    REQUIRE(fd >= 0);
    auto file = Memory::mapFd(fd, 4096, 4, PROT_READ | PROT_WRITE);
    ::close(fd);
    std::filesystem::remove(path);
    REQUIRE(file != nullptr);
    REQUIRE(buffer.copyFrom(*file, {}).has_value());
    REQUIRE(buffer.copyTo(*out).has_value());
    CHECK(contents(*out) == std::vector<uint8_t>{9, 8, 7, 6});
    REQUIRE(buffer.copyFrom(*bytes({5, 5, 5, 5}), {}).has_value());
    REQUIRE(buffer.copyTo(*file).has_value());
    CHECK(contents(*file) == std::vector<uint8_t>{5, 5, 5, 5});
}

// A request whose input 0 and output come from device buffers (token pools) and whose input 1 is
// shared memory.
inline Request bufferRequest(uint32_t inputToken, uint32_t outputToken, const std::shared_ptr<Memory>& b) {
    Request r;
    r.pools = {inputToken, b, outputToken};
    r.inputs = {{false, {0, 0, 0, 0}, {}}, {false, {1, 0, static_cast<uint32_t>(b->size()), 0}, {}}};
    r.outputs = {{false, {2, 0, 0, 0}, {}}};
    return r;
}

// Execution with device memory: a chain through two buffers, every use checked against roles.
inline void checkExecutionWithDeviceMemory(IDevice& device, IDevice& otherDevice) {
    auto prepared = prepare(device);
    auto a = device.allocate({}, {prepared}, {role(0)}, {role(0)});
    auto c = device.allocate({}, {prepared}, {role(0)}, {role(0)});
    REQUIRE(a.has_value());
    REQUIRE(c.has_value());
    auto ones = bytes({1, 1, 1, 1});
    // Uninitialized as an input: GENERAL_FAILURE, as in the VTS.
    auto early = prepared->executeSynchronously(bufferRequest(a->token, c->token, ones), MeasureTiming::NO,
                                                std::nullopt, std::nullopt);
    REQUIRE_FALSE(early.has_value());
    CHECK(early.error().status == ErrorStatus::GENERAL_FAILURE);

    REQUIRE(a->buffer->copyFrom(*bytes({10, 20, 30, 40}), {}).has_value());
    auto r = prepared->executeSynchronously(bufferRequest(a->token, c->token, ones), MeasureTiming::YES,
                                            std::nullopt, std::nullopt);
    INFO((r ? std::string() : r.error().message));
    REQUIRE(r.has_value());
    auto out = Memory::create(4);
    REQUIRE(c->buffer->copyTo(*out).has_value());
    CHECK(contents(*out) == std::vector<uint8_t>{11, 21, 31, 41});
    // c feeds the next execution (through a burst: buffer pools take token -1), into a.
    auto burst = prepared->configureExecutionBurst();
    REQUIRE(burst.has_value());
    REQUIRE((*burst)->executeSynchronously(bufferRequest(c->token, a->token, ones), {-1, -1, -1},
                                           MeasureTiming::NO, std::nullopt, std::nullopt));
    REQUIRE(a->buffer->copyTo(*out).has_value());
    CHECK(contents(*out) == std::vector<uint8_t>{12, 22, 32, 42});
    // ... and through the asynchronous and fenced paths.
    auto callback = std::make_shared<ExecutionCallback>();
    REQUIRE(prepared->execute(bufferRequest(a->token, c->token, ones), MeasureTiming::NO, std::nullopt,
                              std::nullopt, callback));
    REQUIRE(callback->wait(kWait).has_value());
    auto fenced = prepared->executeFenced(bufferRequest(c->token, a->token, ones), {}, MeasureTiming::NO,
                                          std::nullopt, std::nullopt, std::nullopt);
    REQUIRE(fenced.has_value());
    CHECK(finishedInfo(*fenced).status == ErrorStatus::NONE);
    REQUIRE(a->buffer->copyTo(*out).has_value());
    CHECK(contents(*out) == std::vector<uint8_t>{14, 24, 34, 44});

    auto expectRefused = [&](const Request& request, ErrorStatus status, const char* why) {
        INFO(why);
        auto e = prepared->executeSynchronously(request, MeasureTiming::NO, std::nullopt, std::nullopt);
        REQUIRE_FALSE(e.has_value());
        CHECK(e.error().status == status);
    };
    // Roles: `in` may only be input 0 of `prepared`.
    auto in = device.allocate({}, {prepared}, {role(0)}, {});
    REQUIRE(in.has_value());
    REQUIRE(in->buffer->copyFrom(*bytes({1, 2, 3, 4}), {}).has_value());
    expectRefused(bufferRequest(a->token, in->token, ones), ErrorStatus::INVALID_ARGUMENT,
                  "input-only as output");
    Request swapped = bufferRequest(a->token, c->token, ones);
    swapped.pools[1] = in->token;
    swapped.inputs[1].location = {1, 0, 0, 0};
    swapped.pools[0] = ones;
    swapped.inputs[0].location = {0, 0, 4, 0};
    expectRefused(swapped, ErrorStatus::INVALID_ARGUMENT, "input-0 buffer used as input 1");
    expectRefused(bufferRequest(999, c->token, ones), ErrorStatus::INVALID_ARGUMENT, "unknown token");
    expectRefused(bufferRequest(a->token, a->token, ones), ErrorStatus::INVALID_ARGUMENT,
                  "input and output at once");
    auto other = prepare(device);
    auto elsewhere = other->executeSynchronously(bufferRequest(a->token, c->token, ones), MeasureTiming::NO,
                                                 std::nullopt, std::nullopt);
    REQUIRE_FALSE(elsewhere.has_value());
    CHECK(elsewhere.error().status == ErrorStatus::INVALID_ARGUMENT);  // roles name `prepared` only
    // The owner: another device (another client) does not know these tokens.
    auto foreignModel = prepare(otherDevice);
    auto foreign = foreignModel->executeSynchronously(bufferRequest(a->token, c->token, ones),
                                                      MeasureTiming::NO, std::nullopt, std::nullopt);
    REQUIRE_FALSE(foreign.has_value());
    CHECK(foreign.error().status == ErrorStatus::INVALID_ARGUMENT);
    // A released buffer's token is gone.
    const uint32_t released = in->token;
    in->buffer.reset();
    Request gone = swapped;
    gone.pools[1] = released;
    expectRefused(gone, ErrorStatus::INVALID_ARGUMENT, "released token");
}

// VTS MemoryDomainExecutionTest: dimensions of a request that conflict with a buffer's are
// INVALID_ARGUMENT; one buffer may serve several inputs of one request (SameRequestMultipleRoles).
inline void checkBufferRequestDimensions(IDevice& device) {
    auto prepared = prepare(device);
    auto in = device.allocate({}, {prepared}, {role(0), role(1)}, {});
    auto out = device.allocate({}, {prepared}, {}, {role(0)});
    REQUIRE(in.has_value());
    REQUIRE(out.has_value());
    REQUIRE(in->buffer->copyFrom(*bytes({1, 2, 3, 4}), {}).has_value());
    auto ones = bytes({1, 1, 1, 1});
    for (const bool input : {true, false}) {
        INFO((input ? "input" : "output") << " dimensions [2, 2]");
        Request r = bufferRequest(in->token, out->token, ones);
        (input ? r.inputs[0] : r.outputs[0]).dimensions = {2, 2};
        auto e = prepared->executeSynchronously(r, MeasureTiming::NO, std::nullopt, std::nullopt);
        REQUIRE_FALSE(e.has_value());
        CHECK(e.error().status == ErrorStatus::INVALID_ARGUMENT);
    }
    Request both = bufferRequest(in->token, out->token, ones);
    both.pools[1] = in->token;
    both.inputs[1].location = {1, 0, 0, 0};
    auto twice = prepared->executeSynchronously(both, MeasureTiming::NO, std::nullopt, std::nullopt);
    INFO((twice ? std::string() : twice.error().message));
    REQUIRE(twice.has_value());
    auto read = Memory::create(4);
    REQUIRE(out->buffer->copyTo(*read).has_value());
    CHECK(contents(*read) == std::vector<uint8_t>{2, 4, 6, 8});
}

// Concurrent reads work (readers alone: every one of them, copies and executions reading the
// buffer); with writers among them, writes may fail, never crash or hang.
inline void checkConcurrentBufferAccess(IDevice& device) {
    auto prepared = prepare(device);
    auto allocated = device.allocate({}, {prepared}, {role(0)}, {});
    REQUIRE(allocated.has_value());
    auto buffer = allocated->buffer;
    REQUIRE(buffer->copyFrom(*bytes({7, 7, 7, 7}), {}).has_value());

    // Readers only: copies out and executions reading the buffer as input 0, all at once.
    std::atomic<int> readerFailures{0}, wrongBytes{0};
    std::string firstFailure;
    std::mutex failureMutex;
    auto failed = [&](const std::string& why) {
        std::lock_guard lock(failureMutex);
        if (readerFailures++ == 0) firstFailure = why;
    };
    std::vector<std::thread> readers;
    for (int t = 0; t < 6; ++t) {
        readers.emplace_back([&, t] {
            auto mine = Memory::create(4);
            auto b = bytes(std::vector<uint8_t>(4, static_cast<uint8_t>(t)));
            Request r = bufferRequest(allocated->token, 0, b);
            std::shared_ptr<Memory> out = Memory::create(4);
            r.pools[2] = out;
            r.outputs[0].location = {2, 0, 4, 0};
            for (int i = 0; i < (t < 3 ? 200 : 20); ++i) {
                if (t < 3) {  // copyTo
                    auto c = buffer->copyTo(*mine);
                    if (!c) failed("copyTo: " + c.error().message);
                    if (c && contents(*mine) != std::vector<uint8_t>(4, 7)) wrongBytes++;
                } else {  // an execution reading the buffer
                    std::memset(out->data(), 0, 4);
                    auto e = prepared->executeSynchronously(r, MeasureTiming::NO, std::nullopt, std::nullopt);
                    if (!e) failed("execution: " + e.error().message);
                    if (e && contents(*out) != std::vector<uint8_t>(4, static_cast<uint8_t>(7 + t)))
                        wrongBytes++;
                }
            }
        });
    }
    for (auto& t : readers) t.join();
    INFO(firstFailure);
    CHECK(readerFailures.load() == 0);
    CHECK(wrongBytes.load() == 0);

    // Readers and writers.
    std::atomic<int> readFailures{0}, writeOk{0}, badStatus{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 6; ++t) {
        threads.emplace_back([&, t] {
            auto mine = Memory::create(4);
            for (int i = 0; i < 200; ++i) {
                if (t < 4) {
                    auto r = buffer->copyTo(*mine);
                    if (!r) readFailures++;
                    if (r && contents(*mine) != std::vector<uint8_t>(4, 7)) badStatus++;
                } else {
                    auto w = buffer->copyFrom(*bytes({7, 7, 7, 7}), {});
                    if (w) writeOk++;
                    if (!w && w.error().status != ErrorStatus::GENERAL_FAILURE) badStatus++;
                }
            }
        });
    }
    for (auto& t : threads) t.join();
    CHECK(badStatus.load() == 0);
    CHECK(writeOk.load() > 0);
    INFO("reads refused while a write held the buffer: " << readFailures.load());
    auto out = Memory::create(4);
    REQUIRE(buffer->copyTo(*out).has_value());
}

// Buffers of unknown dimensions: sized by copyFrom, or grown by an execution's output.
inline void checkDynamicBuffer(IDevice& device) {
    auto prepared = prepare(device, addModel({0, 4}));
    auto in = device.allocate({}, {prepared}, {role(0)}, {});
    auto out = device.allocate({}, {prepared}, {}, {role(0)});
    REQUIRE(in.has_value());
    REQUIRE(out.has_value());
    auto unknown = in->buffer->copyFrom(*bytes({1, 2, 3, 4}), {});
    REQUIRE_FALSE(unknown.has_value());  // no dimensions known: copyFrom must give them
    CHECK(unknown.error().status == ErrorStatus::INVALID_ARGUMENT);
    for (uint32_t rows : {1u, 3u}) {
        INFO(rows << " rows");
        std::vector<uint8_t> values(4 * rows);
        for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<uint8_t>(i);
        REQUIRE(in->buffer->copyFrom(*bytes(values), {rows, 4}).has_value());
        auto ones = bytes(std::vector<uint8_t>(4 * rows, 1));
        Request r = bufferRequest(in->token, out->token, ones);
        r.inputs[1].dimensions = {rows, 4};
        auto result = prepared->executeSynchronously(r, MeasureTiming::NO, std::nullopt, std::nullopt);
        INFO((result ? std::string() : result.error().message));
        REQUIRE(result.has_value());
        CHECK(result->outputShapes[0].dimensions == std::vector<uint32_t>{rows, 4});
        auto read = Memory::create(4 * rows);
        REQUIRE(out->buffer->copyTo(*read).has_value());
        for (size_t i = 0; i < values.size(); ++i) CHECK(read->data()[i] == values[i] + 1);
    }
}

}  // namespace npu::hal::test

// The suite as Catch2 test cases named "PREFIX: ...", each on fresh devices from OPEN(), a function
// returning an object whose `device` member (a std::shared_ptr<hal::IDevice>) stays usable while
// the object lives. Dynamic-shape buffers (checkDynamicBuffer) are left to each device's file.
#define NPU_HAL_EXECUTION_CASE(PREFIX, NAME, TAGS, CHECK_CALL) \
    TEST_CASE(PREFIX ": " NAME, TAGS) {                        \
        auto d = OPEN_DEVICE();                                \
        auto other = OPEN_DEVICE();                            \
        (void)other;                                           \
        CHECK_CALL;                                            \
    }
#define NPU_HAL_EXECUTION_SUITE(PREFIX, TAGS)                                                               \
    NPU_HAL_EXECUTION_CASE(PREFIX, "asynchronous execution reports through its callback", TAGS,             \
                           npu::hal::test::checkAsyncExecution(*d.device))                                  \
    NPU_HAL_EXECUTION_CASE(PREFIX, "fenced execution", TAGS,                                                \
                           npu::hal::test::checkFencedExecution(*d.device))                                 \
    NPU_HAL_EXECUTION_CASE(PREFIX, "burst tokens, bad tokens and double release", TAGS,                     \
                           npu::hal::test::checkBurst(*d.device))                                           \
    NPU_HAL_EXECUTION_CASE(PREFIX, "reusable execution", TAGS,                                              \
                           npu::hal::test::checkReusableExecution(*d.device))                               \
    NPU_HAL_EXECUTION_CASE(PREFIX,                                                                          \
                           "QualityOfService deadlines NOW, UNLIMITED, SHORT on prepare and execute", TAGS, \
                           npu::hal::test::checkQualityOfService(*d.device))                                \
    NPU_HAL_EXECUTION_CASE(PREFIX, "OUTPUT_INSUFFICIENT_SIZE names every output's shape", TAGS,             \
                           npu::hal::test::checkEveryOutputShape(*d.device))                                \
    NPU_HAL_EXECUTION_CASE(                                                                                 \
        PREFIX, "asynchronous executions in flight are bounded", TAGS,                                      \
        npu::hal::test::checkInFlightLimit(*d.device, npu::hal::PreparedModelBase::kMaxAsyncExecutions))    \
    NPU_HAL_EXECUTION_CASE(PREFIX, "OUTPUT_INSUFFICIENT_SIZE shapes and timing", TAGS,                      \
                           npu::hal::test::checkShapesAndTiming(*d.device))                                 \
    NPU_HAL_EXECUTION_CASE(PREFIX, "MemoryDomain allocation validation", TAGS,                              \
                           npu::hal::test::checkAllocateValidation(*d.device, *other.device))               \
    NPU_HAL_EXECUTION_CASE(PREFIX, "MemoryDomain copies with shared memory and mappable files", TAGS,       \
                           npu::hal::test::checkBufferCopies(*d.device))                                    \
    NPU_HAL_EXECUTION_CASE(PREFIX, "MemoryDomain execution with device memory", TAGS,                       \
                           npu::hal::test::checkExecutionWithDeviceMemory(*d.device, *other.device))        \
    NPU_HAL_EXECUTION_CASE(PREFIX, "MemoryDomain concurrent reads and writes", TAGS,                        \
                           npu::hal::test::checkConcurrentBufferAccess(*d.device))                          \
    NPU_HAL_EXECUTION_CASE(PREFIX, "MemoryDomain roles that conflict across prepared models", TAGS,         \
                           npu::hal::test::checkAllocateConflicts(*d.device))                               \
    NPU_HAL_EXECUTION_CASE(PREFIX, "MemoryDomain request dimensions and one buffer in two roles", TAGS,     \
                           npu::hal::test::checkBufferRequestDimensions(*d.device))

#pragma once
// Asynchronous preparation on any hal::IDevice (the CPU reference and the NPU over each
// transport): IDevice::prepareModelAsync / prepareModelFromCacheAsync, the prepareModel_1_3 and
// prepareModelFromCache_1_3 analogues with an IPreparedModelCallback (docs/execution.md,
// "Asynchronous preparation"). The model is execution_suite.h's quantized ADD.

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "execution_suite.h"
#include "npu/hal/device.h"
#include "npu/hal/device_base.h"
#include "npu/hal/prepared_model_callback.h"

namespace npu::hal::test {

// Opened once by the test; a wait for it is bounded by kWait.
class Gate {
public:
    void open() {
        {
            std::lock_guard lock(mutex_);
            open_ = true;
        }
        opened_.notify_all();
    }
    bool wait() {
        std::unique_lock lock(mutex_);
        return opened_.wait_for(lock, kWait, [&] { return open_; });
    }

private:
    std::mutex mutex_;
    std::condition_variable opened_;
    bool open_ = false;
};

// Counts notify calls (the HAL: exactly once) and hands the result to a waitable callback. With a
// gate, notify first holds the device's thread until the gate opens: the preparation stays in
// flight (its callback unnotified, its place in the device taken) for as long as the test needs.
// No Catch2 assertion here: notify runs on the device's thread.
class TestCallback final : public IPreparedModelCallback {
public:
    explicit TestCallback(std::shared_ptr<Gate> gate = nullptr) : gate_(std::move(gate)) {}
    void notify(Result<std::shared_ptr<IPreparedModel>> result) override {
        ++calls;
        entered.open();
        if (gate_) (void)gate_->wait();
        waitable.notify(std::move(result));
    }
    std::atomic<int> calls{0};
    Gate entered;  // opened when notify is called (before the gate)
    PreparedModelCallback waitable;

private:
    std::shared_ptr<Gate> gate_;
};

inline Status launchPrepare(IDevice& device, const Model& model,
                            const std::shared_ptr<TestCallback>& callback,
                            const Deadline& deadline = std::nullopt, Priority priority = Priority::MEDIUM,
                            ExecutionPreference preference = ExecutionPreference::FAST_SINGLE_ANSWER) {
    return device.prepareModelAsync(model, preference, priority, deadline, {}, {}, CacheToken{}, callback);
}

// What the callback of a launched (or refused) preparation was notified with. A launch error
// must be the callback's too, already notified when the launch returned (the HAL's rule).
inline Result<std::shared_ptr<IPreparedModel>> notifiedResult(const Status& launched,
                                                              TestCallback& callback) {
    if (!launched) {
        INFO(launched.error().message);
        REQUIRE(callback.waitable.notified());
    }
    auto result = callback.waitable.wait(kWait);
    REQUIRE(callback.waitable.notified());
    CHECK(callback.calls == 1);
    if (!launched) {
        REQUIRE_FALSE(result.has_value());
        CHECK(result.error().status == launched.error().status);
        CHECK(result.error().message == launched.error().message);
    }
    if (result) CHECK(*result != nullptr);
    return result;
}

inline void checkAddExecutes(IPreparedModel& prepared, uint8_t a, uint8_t b) {
    auto r = addRequest(a, b);
    auto ran = prepared.executeSynchronously(r.request, MeasureTiming::NO, std::nullopt, std::nullopt);
    INFO((ran ? std::string() : ran.error().message));
    REQUIRE(ran.has_value());
    CHECK(r.output() == std::vector<uint8_t>(4, static_cast<uint8_t>(a + b)));
}

// REQUIREs a prepared model; the error message when there is none.
inline void requirePrepared(const Result<std::shared_ptr<IPreparedModel>>& r) {
    INFO((r ? std::string("prepared") : r.error().message));
    REQUIRE(r.has_value());
}

// ---- success ---------------------------------------------------------------------------------

inline void checkAsyncPrepare(IDevice& device) {
    auto callback = std::make_shared<TestCallback>();
    const Status launched = launchPrepare(device, addModel(), callback, std::nullopt, Priority::HIGH,
                                          ExecutionPreference::SUSTAINED_SPEED);
    INFO((launched ? std::string() : launched.error().message));
    REQUIRE(launched.has_value());
    auto prepared = notifiedResult(launched, *callback);
    requirePrepared(prepared);
    checkAddExecutes(**prepared, 3, 4);
    // The callback keeps its result: a second wait gives the same prepared model.
    auto again = callback->waitable.wait(kWait);
    REQUIRE(again.has_value());
    CHECK(*again == *prepared);
    // The prepared model's other modes work as for one prepared synchronously.
    auto r = addRequest(10, 20);
    auto executed = std::make_shared<ExecutionCallback>();
    REQUIRE(
        (*prepared)->execute(r.request, MeasureTiming::NO, std::nullopt, std::nullopt, executed).has_value());
    REQUIRE(executed->wait(kWait).has_value());
    CHECK(r.output() == std::vector<uint8_t>(4, 30));
}

// ---- launch errors ---------------------------------------------------------------------------

inline void expectRefusedAtLaunch(const Status& launched, TestCallback& callback, ErrorStatus status) {
    REQUIRE_FALSE(launched.has_value());
    INFO(launched.error().message);
    CHECK(launched.error().status == status);
    auto notified = notifiedResult(launched, callback);
    CHECK_FALSE(notified.has_value());
}

inline void checkAsyncPrepareRefusedAtLaunch(IDevice& device) {
    SECTION("an invalid model is INVALID_ARGUMENT at launch, and the callback is notified with it") {
        Model model = addModel();
        model.main.operations[0].inputs[0] = 99;  // no such operand
        auto callback = std::make_shared<TestCallback>();
        const Status launched = launchPrepare(device, model, callback);
        expectRefusedAtLaunch(launched, *callback, ErrorStatus::INVALID_ARGUMENT);
        CHECK_THAT(launched.error().message, Catch::Contains("prepareModelAsync") && Catch::Contains("99"));
        // As the synchronous call says.
        auto sync = device.prepareModel(model);
        REQUIRE_FALSE(sync.has_value());
        CHECK(sync.error().status == ErrorStatus::INVALID_ARGUMENT);
    }
    SECTION("a priority or preference out of range is INVALID_ARGUMENT at launch") {
        auto badPriority = std::make_shared<TestCallback>();
        expectRefusedAtLaunch(
            launchPrepare(device, addModel(), badPriority, std::nullopt, static_cast<Priority>(7)),
            *badPriority, ErrorStatus::INVALID_ARGUMENT);
        auto badPreference = std::make_shared<TestCallback>();
        expectRefusedAtLaunch(launchPrepare(device, addModel(), badPreference, std::nullopt, Priority::LOW,
                                            static_cast<ExecutionPreference>(-1)),
                              *badPreference, ErrorStatus::INVALID_ARGUMENT);
    }
    SECTION("a null callback is INVALID_ARGUMENT (there is nobody to notify)") {
        auto launched =
            device.prepareModelAsync(addModel(), ExecutionPreference::FAST_SINGLE_ANSWER, Priority::MEDIUM,
                                     std::nullopt, {}, {}, CacheToken{}, nullptr);
        REQUIRE_FALSE(launched.has_value());
        CHECK(launched.error().status == ErrorStatus::INVALID_ARGUMENT);
        auto fromCache = device.prepareModelFromCacheAsync(std::nullopt, {}, {}, CacheToken{}, nullptr);
        REQUIRE_FALSE(fromCache.has_value());
        CHECK(fromCache.error().status == ErrorStatus::INVALID_ARGUMENT);
    }
    SECTION("prepareModelFromCacheAsync: no caching, wrong file counts or negative fds at launch") {
        auto needed = device.getNumberOfCacheFilesNeeded();
        REQUIRE(needed.has_value());
        auto callback = std::make_shared<TestCallback>();
        if (needed->numModelCache == 0 && needed->numDataCache == 0) {
            expectRefusedAtLaunch(
                device.prepareModelFromCacheAsync(std::nullopt, {}, {}, CacheToken{}, callback), *callback,
                ErrorStatus::GENERAL_FAILURE);
            return;
        }
        const std::vector<int> one(needed->numModelCache + 1, 0);
        expectRefusedAtLaunch(
            device.prepareModelFromCacheAsync(std::nullopt, one, {}, CacheToken{}, callback), *callback,
            ErrorStatus::INVALID_ARGUMENT);
        auto negative = std::make_shared<TestCallback>();
        expectRefusedAtLaunch(device.prepareModelFromCacheAsync(
                                  std::nullopt, std::vector<int>(needed->numModelCache, -1),
                                  std::vector<int>(needed->numDataCache, -1), CacheToken{}, negative),
                              *negative, ErrorStatus::INVALID_ARGUMENT);
    }
}

// ---- quality of service ----------------------------------------------------------------------

// Deadlines NOW (must miss), UNLIMITED (must succeed) and SHORT (either) on the asynchronous
// prepare, at every priority: the outcome comes through the callback as the synchronous
// prepare's would.
inline void checkAsyncPrepareQualityOfService(IDevice& device) {
    for (auto kind : {DeadlineKind::NOW, DeadlineKind::UNLIMITED, DeadlineKind::SHORT}) {
        for (auto priority : {Priority::LOW, Priority::MEDIUM, Priority::HIGH}) {
            INFO("deadline kind " << static_cast<int>(kind) << ", priority " << static_cast<int>(priority));
            auto callback = std::make_shared<TestCallback>();
            const Status launched = launchPrepare(device, addModel(), callback, makeDeadline(kind), priority,
                                                  ExecutionPreference::SUSTAINED_SPEED);
            auto result = notifiedResult(launched, *callback);
            INFO((result ? std::string() : result.error().message));
            checkDeadlineOutcome(kind, result.has_value(),
                                 result ? ErrorStatus::NONE : result.error().status);
            if (result) checkAddExecutes(**result, 1, 2);
        }
    }
}

// ---- many in flight --------------------------------------------------------------------------

inline void checkManyAsyncPrepares(IDevice& device) {
    constexpr size_t kPrepares = 16;
    std::vector<std::shared_ptr<TestCallback>> callbacks;
    for (size_t i = 0; i < kPrepares; ++i) {
        callbacks.push_back(std::make_shared<TestCallback>());
        const auto priority = static_cast<Priority>(i % 3);
        const Status launched = launchPrepare(device, addModel(), callbacks.back(), std::nullopt, priority);
        INFO("prepare " << i << ": " << (launched ? std::string() : launched.error().message));
        REQUIRE(launched.has_value());
    }
    std::vector<std::shared_ptr<IPreparedModel>> prepared;
    for (size_t i = 0; i < kPrepares; ++i) {
        INFO("prepare " << i);
        auto result = notifiedResult({}, *callbacks[i]);
        requirePrepared(result);
        for (const auto& p : prepared) CHECK(p != *result);
        prepared.push_back(*result);
    }
    for (size_t i = 0; i < kPrepares; ++i) checkAddExecutes(*prepared[i], static_cast<uint8_t>(i), 5);
}

// The preparations in flight per device are bounded: preparations held in their callbacks fill
// every place, one more is RESOURCE_EXHAUSTED_TRANSIENT (returned and notified), and all finish
// once the callbacks let go.
inline void checkAsyncPrepareLimit(IDevice& device, size_t limit) {
    auto gate = std::make_shared<Gate>();
    std::vector<std::shared_ptr<TestCallback>> held;
    for (size_t i = 0; i < limit; ++i) {
        held.push_back(std::make_shared<TestCallback>(gate));
        const Status launched = launchPrepare(device, addModel(), held.back());
        if (!launched) gate->open();  // let the others go before the failure ends the test
        INFO("prepare " << i << ": " << (launched ? std::string() : launched.error().message));
        REQUIRE(launched.has_value());
    }
    auto refused = std::make_shared<TestCallback>();
    const Status launched = launchPrepare(device, addModel(), refused);
    gate->open();
    expectRefusedAtLaunch(launched, *refused, ErrorStatus::RESOURCE_EXHAUSTED_TRANSIENT);
    for (auto& callback : held) requirePrepared(notifiedResult({}, *callback));
    auto after = std::make_shared<TestCallback>();
    const Status relaunched = launchPrepare(device, addModel(), after);
    REQUIRE(relaunched.has_value());
    requirePrepared(notifiedResult(relaunched, *after));
}

// ---- waits with a timeout --------------------------------------------------------------------

// A wait that times out says so (GENERAL_FAILURE naming the timeout, notified() false) and spoils
// nothing: the same callback is notified later and a later wait gets the prepared model.
inline void checkPrepareCallbackTimeout(IDevice& device) {
    auto gate = std::make_shared<Gate>();
    auto callback = std::make_shared<TestCallback>(gate);
    const Status launched = launchPrepare(device, addModel(), callback);
    if (!launched) gate->open();
    REQUIRE(launched.has_value());
    auto early = callback->waitable.wait(std::chrono::milliseconds(1));  // held in notify by the gate
    const bool notifiedEarly = callback->waitable.notified();
    gate->open();
    REQUIRE_FALSE(early.has_value());
    CHECK(early.error().status == ErrorStatus::GENERAL_FAILURE);
    CHECK_THAT(early.error().message, Catch::Contains("no result within 1 ms"));
    CHECK_FALSE(notifiedEarly);
    auto prepared = notifiedResult(launched, *callback);
    requirePrepared(prepared);
    checkAddExecutes(**prepared, 7, 8);
}

// ---- device lifetime -------------------------------------------------------------------------

// The device's last reference goes while preparations are in flight: some held in their
// callbacks (prepared, their threads busy), others just launched (running or queued).
// Destruction neither crashes nor hangs; when it returns every callback has been notified (a
// prepared model, or DEVICE_UNAVAILABLE for one that had not started), and a prepared model
// outlives its device.
inline void checkDeviceDestroyedWithPreparesInFlight(std::shared_ptr<IDevice> device) {
    REQUIRE(device.use_count() == 1);  // the caller handed over its reference
    constexpr size_t kHeld = 4, kFree = 12;
    auto gate = std::make_shared<Gate>();
    std::vector<std::shared_ptr<TestCallback>> callbacks;
    for (size_t i = 0; i < kHeld + kFree; ++i) {
        callbacks.push_back(std::make_shared<TestCallback>(i < kHeld ? gate : nullptr));
        const Status launched = launchPrepare(*device, addModel(), callbacks.back());
        if (!launched) gate->open();
        INFO("prepare " << i << ": " << (launched ? std::string() : launched.error().message));
        REQUIRE(launched.has_value());
    }
    for (size_t i = 0; i < kHeld; ++i) {
        INFO("held prepare " << i);
        REQUIRE(callbacks[i]->entered.wait());
    }
    // The held preparations keep the device's threads busy until the gate opens, which is after
    // the destruction began unless this thread is very slow (then the case is merely weaker).
    std::thread opener([gate] {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        gate->open();
    });
    device.reset();
    opener.join();
    std::shared_ptr<IPreparedModel> survivor;
    size_t prepared = 0, unavailable = 0;
    for (size_t i = 0; i < callbacks.size(); ++i) {
        INFO("prepare " << i);
        REQUIRE(callbacks[i]->waitable.notified());  // before the destructor returned
        auto result = notifiedResult({}, *callbacks[i]);
        if (result) {
            ++prepared;
            survivor = *result;
        } else {
            INFO(result.error().message);
            CHECK(result.error().status == ErrorStatus::DEVICE_UNAVAILABLE);
            ++unavailable;
        }
        if (i < kHeld) CHECK(result.has_value());  // they were in their callbacks
    }
    INFO(prepared << " prepared, " << unavailable << " refused as the device went");
    REQUIRE(survivor != nullptr);
    checkAddExecutes(*survivor, 2, 9);
}

// ---- from cache ------------------------------------------------------------------------------

// For a device that caches (getNumberOfCacheFilesNeeded not 0): an asynchronous prepare that
// saves to cache files in `dir`, an asynchronous load from them that executes, and a load with
// another token that fails through the callback (the cache's contents are checked on the
// device's thread, not at launch).
inline void checkAsyncPrepareFromCache(IDevice& device, const std::filesystem::path& dir) {
    auto needed = device.getNumberOfCacheFilesNeeded();
    REQUIRE(needed.has_value());
    REQUIRE(needed->numModelCache + needed->numDataCache > 0);
    std::vector<int> modelCache, dataCache;
    auto open = [&](const std::string& name) {
        const int fd = ::open((dir / name).c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
        REQUIRE(fd >= 0);
        return fd;
    };
    for (uint32_t i = 0; i < needed->numModelCache; ++i)
        modelCache.push_back(open("model" + std::to_string(i)));
    for (uint32_t i = 0; i < needed->numDataCache; ++i) dataCache.push_back(open("data" + std::to_string(i)));
    struct CloseAll {
        std::vector<int>& a;
        std::vector<int>& b;
        ~CloseAll() {
            for (int fd : a) ::close(fd);
            for (int fd : b) ::close(fd);
        }
    } closeAll{modelCache, dataCache};
    CacheToken token{};
    for (size_t i = 0; i < token.size(); ++i) token[i] = static_cast<uint8_t>(3 * i + 1);

    auto saved = std::make_shared<TestCallback>();
    const Status launched =
        device.prepareModelAsync(addModel(), ExecutionPreference::FAST_SINGLE_ANSWER, Priority::MEDIUM,
                                 std::nullopt, modelCache, dataCache, token, saved);
    REQUIRE(launched.has_value());
    requirePrepared(notifiedResult(launched, *saved));

    auto loaded = std::make_shared<TestCallback>();
    const Status loading =
        device.prepareModelFromCacheAsync(std::nullopt, modelCache, dataCache, token, loaded);
    INFO((loading ? std::string() : loading.error().message));
    REQUIRE(loading.has_value());
    auto fromCache = notifiedResult(loading, *loaded);
    requirePrepared(fromCache);
    checkAddExecutes(**fromCache, 4, 5);

    CacheToken other = token;
    other[0] ^= 0xff;
    auto wrong = std::make_shared<TestCallback>();
    const Status wrongLaunch =
        device.prepareModelFromCacheAsync(std::nullopt, modelCache, dataCache, other, wrong);
    REQUIRE(wrongLaunch.has_value());
    auto refused = notifiedResult(wrongLaunch, *wrong);
    REQUIRE_FALSE(refused.has_value());
    CHECK(refused.error().status == ErrorStatus::GENERAL_FAILURE);

    auto late = std::make_shared<TestCallback>();
    const Status lateLaunch = device.prepareModelFromCacheAsync(std::chrono::steady_clock::now(), modelCache,
                                                                dataCache, token, late);
    auto missed = notifiedResult(lateLaunch, *late);
    REQUIRE_FALSE(missed.has_value());
    CHECK(missedDeadline(missed.error().status));
}

}  // namespace npu::hal::test

// The suite as Catch2 test cases named "PREFIX: ...", each on a fresh device from OPEN_DEVICE(),
// as NPU_HAL_EXECUTION_SUITE does (execution_suite.h). Loading from cache files needs a device
// that caches into a directory of the test's: each device's file calls checkAsyncPrepareFromCache.
#define NPU_HAL_PREPARE_CASE(PREFIX, NAME, TAGS, CHECK_CALL) \
    TEST_CASE(PREFIX ": " NAME, TAGS) {                      \
        auto d = OPEN_DEVICE();                              \
        CHECK_CALL;                                          \
    }
#define NPU_HAL_PREPARE_SUITE(PREFIX, TAGS)                                                                  \
    NPU_HAL_PREPARE_CASE(PREFIX, "asynchronous prepare notifies its callback with the prepared model", TAGS, \
                         npu::hal::test::checkAsyncPrepare(*d.device))                                       \
    NPU_HAL_PREPARE_CASE(PREFIX, "asynchronous prepare: argument errors at launch, notified too", TAGS,      \
                         npu::hal::test::checkAsyncPrepareRefusedAtLaunch(*d.device))                        \
    NPU_HAL_PREPARE_CASE(PREFIX, "QualityOfService deadlines NOW, UNLIMITED, SHORT on asynchronous prepare", \
                         TAGS, npu::hal::test::checkAsyncPrepareQualityOfService(*d.device))                 \
    NPU_HAL_PREPARE_CASE(PREFIX, "many asynchronous prepares in flight at once", TAGS,                       \
                         npu::hal::test::checkManyAsyncPrepares(*d.device))                                  \
    NPU_HAL_PREPARE_CASE(                                                                                    \
        PREFIX, "asynchronous prepares in flight are bounded", TAGS,                                         \
        npu::hal::test::checkAsyncPrepareLimit(*d.device, npu::hal::DeviceBase::kMaxAsyncPrepares))          \
    NPU_HAL_PREPARE_CASE(PREFIX, "a prepare callback waited on with a timeout that passes", TAGS,            \
                         npu::hal::test::checkPrepareCallbackTimeout(*d.device))                             \
    NPU_HAL_PREPARE_CASE(PREFIX, "the device destroyed with asynchronous prepares in flight", TAGS,          \
                         npu::hal::test::checkDeviceDestroyedWithPreparesInFlight(std::move(d.device)))

#pragma once
// The driver interfaces, with NN HAL 1.3 / AIDL semantics, as abstract C++ classes.
// Both the NPU shim and the CPU reference implement them, so one conformance suite runs
// against both. Errors are returned as values (npu::Result), never thrown.

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "npu/hal/result.h"
#include "npu/hal/types.h"

namespace npu::hal {

class IBurst;
class IExecution;
class IPreparedModel;

// Completion of an asynchronous execution (the HAL 1.3 IExecutionCallback): notify() is called
// exactly once, from a driver thread, with the outputs' shapes and timing, or with the error
// (OUTPUT_INSUFFICIENT_SIZE carries every output's needed shape in Error::outputShapes).
class IExecutionCallback {
public:
    virtual ~IExecutionCallback() = default;
    virtual void notify(Result<ExecutionResult> result) = 0;
};

// Completion of an asynchronous preparation (the HAL 1.3 IPreparedModelCallback): notify() is
// called exactly once, with the prepared model or the error (then no prepared model), also when
// the preparation was refused at launch (IDevice::prepareModelAsync).
class IPreparedModelCallback {
public:
    virtual ~IPreparedModelCallback() = default;
    virtual void notify(Result<std::shared_ptr<IPreparedModel>> result) = 0;
};

// What a fenced execution reports once its sync fence has signalled (IFencedExecutionCallback).
struct FencedExecutionInfo {
    Timing timingLaunched;  // from the executeFenced call until the returned fence signalled
    Timing timingFenced;    // from the last waitFor fence signalling until the returned one did
    ErrorStatus status = ErrorStatus::NONE;
    std::string message;  // why, when status is not NONE
};
class IFencedExecutionCallback {
public:
    virtual ~IFencedExecutionCallback() = default;
    // GENERAL_FAILURE while the execution has not finished (its sync fence has not signalled).
    virtual Result<FencedExecutionInfo> getExecutionInfo() = 0;
};

// A fenced execution's handles: a sync fence fd (owned by the caller; readable once the
// execution has finished, successfully or not) and the callback that reports how it went.
struct FencedResult {
    int syncFence = -1;
    std::shared_ptr<IFencedExecutionCallback> callback;
};

// A model prepared for execution. Its lifetime is shared (HAL semantics): it lives while any
// client or burst holds it; its device resources are released when the last holder lets go.
// docs/execution.md describes every execution mode.
class IPreparedModel {
public:
    virtual ~IPreparedModel() = default;

    // loopTimeout: the WHILE loop timeout; nullopt = the default (2 s), capped at 15 s.
    virtual Result<ExecutionResult> executeSynchronously(
        const Request& request, MeasureTiming measure, const Deadline& deadline,
        std::optional<std::chrono::nanoseconds> loopTimeout) = 0;

    // Asynchronous execution (execute_1_3): validates, returns at once, and reports the result
    // through `callback`. An error returned here means the callback will not be called.
    virtual Status execute(const Request& request, MeasureTiming measure, const Deadline& deadline,
                           std::optional<std::chrono::nanoseconds> loopTimeout,
                           std::shared_ptr<IExecutionCallback> callback);

    // Fenced execution: waits (asynchronously) for every fd of waitFor to become readable (sync
    // fences: pollable fds, e.g. eventfds; a closed or unpollable fd is INVALID_ARGUMENT), runs,
    // and signals the returned fence. timeoutAfterFence bounds the run after the fences.
    virtual Result<FencedResult> executeFenced(const Request& request, const std::vector<int>& waitFor,
                                               MeasureTiming measure, const Deadline& deadline,
                                               std::optional<std::chrono::nanoseconds> loopTimeout,
                                               std::optional<std::chrono::nanoseconds> timeoutAfterFence);

    virtual Result<std::shared_ptr<IBurst>> configureExecutionBurst();

    // A request bound to this model once, run any number of times (one run at a time).
    virtual Result<std::shared_ptr<IExecution>> createReusableExecution(
        const Request& request, MeasureTiming measure, std::optional<std::chrono::nanoseconds> loopTimeout);
};

// A burst: a sequence of executions of one prepared model with cached memory identifiers.
// memoryIdentifierTokens has one entry per request pool: -1 = not cached; a token >= 0 caches
// the pool under it on first use, and a later request may then pass a null pool for it.
class IBurst {
public:
    virtual ~IBurst() = default;
    virtual Result<ExecutionResult> executeSynchronously(
        const Request& request, const std::vector<int64_t>& memoryIdentifierTokens, MeasureTiming measure,
        const Deadline& deadline, std::optional<std::chrono::nanoseconds> loopTimeout) = 0;
    // INVALID_ARGUMENT for a token that is not cached (never used, or released already).
    virtual Status releaseMemoryResource(int64_t memoryIdentifierToken) = 0;
};

// A reusable execution (AIDL IExecution): INVALID_ARGUMENT when started while it still runs.
class IExecution {
public:
    virtual ~IExecution() = default;
    virtual Result<ExecutionResult> executeSynchronously(const Deadline& deadline) = 0;
    virtual Result<FencedResult> executeFenced(const std::vector<int>& waitFor, const Deadline& deadline,
                                               std::optional<std::chrono::nanoseconds> timeoutAfterFence) = 0;
};

// A driver-managed buffer (memory domains). copyTo: the buffer's bytes into `dst`, which must be
// exactly as large (GENERAL_FAILURE while the buffer holds no data yet). copyFrom: sets the
// contents and the dimensions (empty = the ones known at allocation, which must then be full).
class IBuffer {
public:
    virtual ~IBuffer() = default;
    virtual Status copyTo(Memory& dst) = 0;
    virtual Status copyFrom(const Memory& src, const std::vector<uint32_t>& dimensions) = 0;
};

struct NumberOfCacheFiles {
    uint32_t numModelCache = 0;
    uint32_t numDataCache = 0;
};

struct DeviceBuffer {
    std::shared_ptr<IBuffer> buffer;
    uint32_t token = 0;
};

class IDevice {
public:
    virtual ~IDevice() = default;

    virtual std::string getVersionString() const = 0;
    virtual DeviceType getType() const = 0;
    virtual Result<Capabilities> getCapabilities() = 0;
    virtual Result<std::vector<std::string>> getSupportedExtensions() { return std::vector<std::string>{}; }
    virtual Result<NumberOfCacheFiles> getNumberOfCacheFilesNeeded() { return NumberOfCacheFiles{}; }

    // One bool per operation of model.main, in order: true iff this device will run it.
    virtual Result<std::vector<bool>> getSupportedOperations(const Model& model) = 0;

    // modelCache / dataCache: borrowed fds (the caller keeps ownership); empty when the caller
    // does not cache. token: meaningful only when cache fds are given.
    virtual Result<std::shared_ptr<IPreparedModel>> prepareModel(
        const Model& model, ExecutionPreference preference, Priority priority, const Deadline& deadline,
        const std::vector<int>& modelCache, const std::vector<int>& dataCache, const CacheToken& token) = 0;

    virtual Result<std::shared_ptr<IPreparedModel>> prepareModelFromCache(const Deadline& deadline,
                                                                          const std::vector<int>& modelCache,
                                                                          const std::vector<int>& dataCache,
                                                                          const CacheToken& token);

    // Asynchronous preparation (prepareModel_1_3 / prepareModelFromCache_1_3 with an
    // IPreparedModelCallback; docs/execution.md "Asynchronous preparation"). The arguments are
    // checked at launch; an error there is returned AND notified to `callback` (the HAL's rule:
    // notify is called exactly once, so a caller waiting on the callback never hangs). Otherwise
    // the call returns at once and `callback` is notified later with what the synchronous call
    // would have returned (MISSED_DEADLINE_* included). A null callback is INVALID_ARGUMENT.
    // The cache fds are borrowed: the caller keeps them open until the callback is notified.
    // hal::DeviceBase implements both over the synchronous calls; here they are GENERAL_FAILURE.
    virtual Status prepareModelAsync(const Model& model, ExecutionPreference preference, Priority priority,
                                     const Deadline& deadline, const std::vector<int>& modelCache,
                                     const std::vector<int>& dataCache, const CacheToken& token,
                                     std::shared_ptr<IPreparedModelCallback> callback);
    virtual Status prepareModelFromCacheAsync(const Deadline& deadline, const std::vector<int>& modelCache,
                                              const std::vector<int>& dataCache, const CacheToken& token,
                                              std::shared_ptr<IPreparedModelCallback> callback);

    virtual Result<DeviceBuffer> allocate(const BufferDesc& desc,
                                          const std::vector<std::shared_ptr<IPreparedModel>>& preparedModels,
                                          const std::vector<BufferRole>& inputRoles,
                                          const std::vector<BufferRole>& outputRoles);

    // Convenience: prepare without caching, default preference and priority, no deadline.
    Result<std::shared_ptr<IPreparedModel>> prepareModel(const Model& model) {
        return prepareModel(model, ExecutionPreference::FAST_SINGLE_ANSWER, Priority::MEDIUM, std::nullopt,
                            {}, {}, CacheToken{});
    }
};

}  // namespace npu::hal

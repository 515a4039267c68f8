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

// A model prepared for execution. Its lifetime is shared (HAL semantics): it lives while any
// client or burst holds it; its device resources are released when the last holder lets go.
class IPreparedModel {
public:
    virtual ~IPreparedModel() = default;

    // loopTimeout: the WHILE loop timeout; nullopt = the default (2 s), capped at 15 s.
    virtual Result<ExecutionResult> executeSynchronously(
        const Request& request, MeasureTiming measure, const Deadline& deadline,
        std::optional<std::chrono::nanoseconds> loopTimeout) = 0;

    // Fenced execution: waits for the sync fds in waitFor (pollable fds), runs, and returns a
    // sync fd (owned by the caller) that becomes readable when the execution completes, plus
    // the result. The default runs synchronously after the fences have signalled.
    struct FencedResult {
        int syncFence = -1;  // -1: already complete
        ExecutionResult result;
    };
    virtual Result<FencedResult> executeFenced(const Request& request, const std::vector<int>& waitFor,
                                               MeasureTiming measure, const Deadline& deadline,
                                               std::optional<std::chrono::nanoseconds> loopTimeout,
                                               std::optional<std::chrono::nanoseconds> timeoutAfterFence);

    virtual Result<std::shared_ptr<IBurst>> configureExecutionBurst();
};

// A burst: a sequence of executions of one prepared model with cached memory identifiers.
class IBurst {
public:
    virtual ~IBurst() = default;
    virtual Result<ExecutionResult> executeSynchronously(
        const Request& request, const std::vector<int64_t>& memoryIdentifierTokens, MeasureTiming measure,
        const Deadline& deadline, std::optional<std::chrono::nanoseconds> loopTimeout) = 0;
    virtual Status releaseMemoryResource(int64_t memoryIdentifierToken) = 0;
};

// A driver-managed buffer (memory domains).
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

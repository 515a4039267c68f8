#pragma once
// Asynchronous preparation (prepareModel_1_3 and prepareModelFromCache_1_3 with an
// IPreparedModelCallback) on top of a device's synchronous prepareModel and
// prepareModelFromCache, so the NPU shim and the CPU reference behave alike (docs/execution.md,
// "Asynchronous preparation"), as hal::PreparedModelBase does for the execution modes.

#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>

#include "npu/hal/device.h"

namespace npu::hal {

class WorkerThreads;

class DeviceBase : public IDevice {
public:
    // Preparations queued or running per device; one more is RESOURCE_EXHAUSTED_TRANSIENT.
    static constexpr size_t kMaxAsyncPrepares = 32;

    DeviceBase();
    ~DeviceBase() override;
    DeviceBase(const DeviceBase&) = delete;
    DeviceBase& operator=(const DeviceBase&) = delete;

    // At launch: the callback (null: INVALID_ARGUMENT, nobody to notify), the model
    // (hal::validateModel), the preference and the priority: INVALID_ARGUMENT, returned and
    // notified. Then prepareModel runs on a thread of this device and notifies its result. The
    // deadline is judged there, as by a synchronous call (MISSED_DEADLINE_* through the callback).
    Status prepareModelAsync(const Model& model, ExecutionPreference preference, Priority priority,
                             const Deadline& deadline, const std::vector<int>& modelCache,
                             const std::vector<int>& dataCache, const CacheToken& token,
                             std::shared_ptr<IPreparedModelCallback> callback) final;
    // At launch: the callback, caching support (getNumberOfCacheFilesNeeded all 0:
    // GENERAL_FAILURE), the number of cache fds and that none is negative (INVALID_ARGUMENT).
    // The cache's contents (token, hash) are checked by prepareModelFromCache on the thread.
    Status prepareModelFromCacheAsync(const Deadline& deadline, const std::vector<int>& modelCache,
                                      const std::vector<int>& dataCache, const CacheToken& token,
                                      std::shared_ptr<IPreparedModelCallback> callback) final;

protected:
    // Joins the threads of asynchronous preparations: those running finish and notify their
    // callbacks; those still queued are notified DEVICE_UNAVAILABLE without running. When it
    // returns, every callback handed to this device has been notified. A derived destructor
    // calls it first, before it releases anything prepareModel or prepareModelFromCache uses
    // (the threads call them on the derived object).
    void stopAsyncPrepares();

private:
    using Prepare = std::function<Result<std::shared_ptr<IPreparedModel>>()>;
    Status launch(const char* what, std::shared_ptr<IPreparedModelCallback> callback, Prepare prepare);

    // Shared with the tasks: when the last reference to the device is dropped on one of its own
    // threads (in a callback), that thread is detached and outlives the device.
    std::shared_ptr<std::atomic<bool>> stopping_;
    std::unique_ptr<WorkerThreads> workers_;
};

}  // namespace npu::hal

#include "npu/hal/device_base.h"

#include <string>
#include <utility>

#include "npu/hal/validation.h"
#include "worker_threads.h"

namespace npu::hal {
namespace {

// The HAL's launch rule (prepareModel_1_3, prepareModelFromCache_1_3): an error at launch is
// returned and also notified to the callback, with no prepared model, so notify is called
// exactly once whatever happens.
Status refuse(IPreparedModelCallback& callback, const char* what, Error error) {
    error.message = std::string(what) + ": " + error.message;
    callback.notify(std::unexpected(error));
    return std::unexpected(std::move(error));
}

Status validateCacheFds(const std::vector<int>& fds, const char* which) {
    for (size_t i = 0; i < fds.size(); ++i) {
        if (fds[i] < 0) {
            return invalidArgument(std::string(which) + "[" + std::to_string(i) + "] is fd " +
                                   std::to_string(fds[i]) + " (negative)");
        }
    }
    return {};
}

}  // namespace

DeviceBase::DeviceBase()
    : stopping_(std::make_shared<std::atomic<bool>>(false)),
      workers_(std::make_unique<WorkerThreads>(kMaxAsyncPrepares, "device", "asynchronous preparations")) {}

DeviceBase::~DeviceBase() {
    stopAsyncPrepares();
}

void DeviceBase::stopAsyncPrepares() {
    stopping_->store(true);
    workers_->stop();
}

Status DeviceBase::prepareModelAsync(const Model& model, ExecutionPreference preference, Priority priority,
                                     const Deadline& deadline, const std::vector<int>& modelCache,
                                     const std::vector<int>& dataCache, const CacheToken& token,
                                     std::shared_ptr<IPreparedModelCallback> callback) {
    const char* what = "prepareModelAsync";
    if (!callback) return invalidArgument(std::string(what) + ": the callback is null");
    // Cache fds are not checked here: the HAL says a caching argument must never fail the
    // preparation (prepareModel then just does not save).
    Status valid = validateModel(model);
    if (valid) valid = validateExecutionPreference(preference);
    if (valid) valid = validatePriority(priority);
    if (!valid) return refuse(*callback, what, std::move(valid).error());
    return launch(what, std::move(callback),
                  [this, model, preference, priority, deadline, modelCache, dataCache, token] {
                      return prepareModel(model, preference, priority, deadline, modelCache, dataCache,
                                          token);
                  });
}

Status DeviceBase::prepareModelFromCacheAsync(const Deadline& deadline, const std::vector<int>& modelCache,
                                              const std::vector<int>& dataCache, const CacheToken& token,
                                              std::shared_ptr<IPreparedModelCallback> callback) {
    const char* what = "prepareModelFromCacheAsync";
    if (!callback) return invalidArgument(std::string(what) + ": the callback is null");
    auto needed = getNumberOfCacheFilesNeeded();
    if (!needed) return refuse(*callback, what, std::move(needed).error());
    Status valid;
    if (needed->numModelCache == 0 && needed->numDataCache == 0) {
        valid = generalFailure("this device does not support compilation caching (it needs no cache files)");
    } else if (modelCache.size() != needed->numModelCache || dataCache.size() != needed->numDataCache) {
        valid = invalidArgument(
            std::to_string(modelCache.size()) + " model-cache and " + std::to_string(dataCache.size()) +
            " data-cache fds given; the device needs " + std::to_string(needed->numModelCache) + " and " +
            std::to_string(needed->numDataCache));
    } else {
        valid = validateCacheFds(modelCache, "modelCache");
        if (valid) valid = validateCacheFds(dataCache, "dataCache");
    }
    if (!valid) return refuse(*callback, what, std::move(valid).error());
    return launch(what, std::move(callback), [this, deadline, modelCache, dataCache, token] {
        return prepareModelFromCache(deadline, modelCache, dataCache, token);
    });
}

Status DeviceBase::launch(const char* what, std::shared_ptr<IPreparedModelCallback> callback,
                          Prepare prepare) {
    auto task = [what, callback, prepare = std::move(prepare), stopping = stopping_] {
        // Moved into notify: the driver keeps no reference to the prepared model once it is
        // handed over (the HAL's rule, so releasing it is the client's alone).
        Result<std::shared_ptr<IPreparedModel>> result =
            stopping->load()
                ? fail(ErrorStatus::DEVICE_UNAVAILABLE,
                       std::string(what) + ": the device was released before the preparation started")
                : prepare();
        callback->notify(std::move(result));
    };
    Status submitted = workers_->submit(std::move(task));
    if (!submitted) return refuse(*callback, what, std::move(submitted).error());
    return {};
}

}  // namespace npu::hal

#pragma once
// A waitable IPreparedModelCallback for clients of IDevice::prepareModelAsync and
// prepareModelFromCacheAsync (the framework side of the HAL's PreparedModelCallback).

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "npu/hal/device.h"

namespace npu::hal {

class PreparedModelCallback final : public IPreparedModelCallback {
public:
    void notify(Result<std::shared_ptr<IPreparedModel>> result) override {
        {
            std::lock_guard lock(mutex_);
            if (result_) return;  // the HAL calls notify once; a second call is ignored
            result_ = std::move(result);
        }
        done_.notify_all();
    }
    // The prepared model, or the preparation's error; GENERAL_FAILURE when the callback has not
    // been notified within `timeout` (notified() tells that apart from a failed preparation).
    // It may be called again, and by several threads: each gets the one result.
    Result<std::shared_ptr<IPreparedModel>> wait(std::chrono::milliseconds timeout) {
        std::unique_lock lock(mutex_);
        if (!done_.wait_for(lock, timeout, [&] { return result_.has_value(); })) {
            return generalFailure("prepareModel: no result within " + std::to_string(timeout.count()) +
                                  " ms");
        }
        return *result_;
    }
    bool notified() {
        std::lock_guard lock(mutex_);
        return result_.has_value();
    }

private:
    std::mutex mutex_;
    std::condition_variable done_;
    std::optional<Result<std::shared_ptr<IPreparedModel>>> result_;
};

}  // namespace npu::hal

#pragma once
// A waitable IExecutionCallback for clients of IPreparedModel::execute (the framework side of
// the HAL's ExecutionCallback).

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>

#include "npu/hal/device.h"

namespace npu::hal {

class ExecutionCallback final : public IExecutionCallback {
public:
    void notify(Result<ExecutionResult> result) override {
        {
            std::lock_guard lock(mutex_);
            if (result_) return;  // the HAL calls notify once; a second call is ignored
            result_ = std::move(result);
        }
        done_.notify_all();
    }
    // The execution's result; GENERAL_FAILURE when it has not completed within `timeout`.
    Result<ExecutionResult> wait(std::chrono::milliseconds timeout) {
        std::unique_lock lock(mutex_);
        if (!done_.wait_for(lock, timeout, [&] { return result_.has_value(); })) {
            return generalFailure("execute: no result within " + std::to_string(timeout.count()) + " ms");
        }
        return *result_;
    }

private:
    std::mutex mutex_;
    std::condition_variable done_;
    std::optional<Result<ExecutionResult>> result_;
};

}  // namespace npu::hal

// Default implementations of the optional parts of the HAL interfaces. A device that does not
// offer a capability answers GENERAL_FAILURE with a message saying so; a device deriving from
// hal::PreparedModelBase (prepared_model_base.h) gets every execution mode from there, and a
// device deriving from hal::DeviceBase (device_base.h) gets asynchronous preparation.
#include "npu/hal/device.h"

namespace npu::hal {

Status IPreparedModel::execute(const Request&, MeasureTiming, const Deadline&,
                               std::optional<std::chrono::nanoseconds>, std::shared_ptr<IExecutionCallback>) {
    return generalFailure("execute: asynchronous execution is not supported by this device");
}

Result<FencedResult> IPreparedModel::executeFenced(const Request&, const std::vector<int>&, MeasureTiming,
                                                   const Deadline&, std::optional<std::chrono::nanoseconds>,
                                                   std::optional<std::chrono::nanoseconds>) {
    return generalFailure("executeFenced: not supported by this device");
}

Result<std::shared_ptr<IBurst>> IPreparedModel::configureExecutionBurst() {
    return generalFailure("configureExecutionBurst: not supported by this device");
}

Result<std::shared_ptr<IExecution>> IPreparedModel::createReusableExecution(
    const Request&, MeasureTiming, std::optional<std::chrono::nanoseconds>) {
    return generalFailure("createReusableExecution: not supported by this device");
}

Result<std::shared_ptr<IPreparedModel>> IDevice::prepareModelFromCache(const Deadline&,
                                                                       const std::vector<int>&,
                                                                       const std::vector<int>&,
                                                                       const CacheToken&) {
    return generalFailure("prepareModelFromCache: this device does not support compilation caching yet");
}

namespace {

// A launch error is the callback's too (the HAL's rule for prepareModel_1_3).
Status refusePrepare(const std::shared_ptr<IPreparedModelCallback>& callback, const char* what) {
    if (!callback) return invalidArgument(std::string(what) + ": the callback is null");
    Error error{ErrorStatus::GENERAL_FAILURE,
                std::string(what) + ": asynchronous preparation is not supported by this device"};
    callback->notify(std::unexpected(error));
    return std::unexpected(std::move(error));
}

}  // namespace

Status IDevice::prepareModelAsync(const Model&, ExecutionPreference, Priority, const Deadline&,
                                  const std::vector<int>&, const std::vector<int>&, const CacheToken&,
                                  std::shared_ptr<IPreparedModelCallback> callback) {
    return refusePrepare(callback, "prepareModelAsync");
}

Status IDevice::prepareModelFromCacheAsync(const Deadline&, const std::vector<int>&, const std::vector<int>&,
                                           const CacheToken&,
                                           std::shared_ptr<IPreparedModelCallback> callback) {
    return refusePrepare(callback, "prepareModelFromCacheAsync");
}

Result<DeviceBuffer> IDevice::allocate(const BufferDesc&, const std::vector<std::shared_ptr<IPreparedModel>>&,
                                       const std::vector<BufferRole>&, const std::vector<BufferRole>&) {
    return generalFailure("allocate: memory domains are not supported by this device");
}

}  // namespace npu::hal

// Default implementations of the optional parts of the HAL interfaces. A device that does not
// offer a capability answers GENERAL_FAILURE with a message saying so; a device deriving from
// hal::PreparedModelBase (prepared_model_base.h) gets every execution mode from there.
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

Result<DeviceBuffer> IDevice::allocate(const BufferDesc&, const std::vector<std::shared_ptr<IPreparedModel>>&,
                                       const std::vector<BufferRole>&, const std::vector<BufferRole>&) {
    return generalFailure("allocate: memory domains are not supported by this device");
}

}  // namespace npu::hal

#pragma once
// The CPU reference device: every operation it claims computed with the NNAPI reference
// semantics (TFLite fixed-point requantization for quantized types). It is the accuracy oracle of
// the project and a hal::IDevice like the NPU, so the same conformance suite runs on both.

#include <memory>
#include <string>
#include <vector>

#include "npu/hal/device.h"
#include "npu/hal/device_base.h"
#include "npu/hal/prepared_model_base.h"

namespace npu::ref {

// Asynchronous preparation comes from hal::DeviceBase (prepare on a thread of the device).
class ReferenceDevice : public hal::DeviceBase {
public:
    ReferenceDevice() = default;
    ~ReferenceDevice() override { stopAsyncPrepares(); }  // before buffers_ goes

    std::string getVersionString() const override;
    hal::DeviceType getType() const override { return hal::DeviceType::CPU; }
    Result<hal::Capabilities> getCapabilities() override;
    // True for an operation iff its type and operand types are implemented here (see
    // reference/README.md); the answer never depends on the values.
    Result<std::vector<bool>> getSupportedOperations(const hal::Model& model) override;
    Result<std::shared_ptr<hal::IPreparedModel>> prepareModel(
        const hal::Model& model, hal::ExecutionPreference preference, hal::Priority priority,
        const hal::Deadline& deadline, const std::vector<int>& modelCache, const std::vector<int>& dataCache,
        const hal::CacheToken& token) override;
    using hal::IDevice::prepareModel;
    // Memory domains: buffers in host shared memory, usable by this device's prepared models.
    Result<hal::DeviceBuffer> allocate(
        const hal::BufferDesc& desc, const std::vector<std::shared_ptr<hal::IPreparedModel>>& preparedModels,
        const std::vector<hal::BufferRole>& inputRoles,
        const std::vector<hal::BufferRole>& outputRoles) override;

private:
    std::shared_ptr<hal::BufferRegistry> buffers_ = std::make_shared<hal::BufferRegistry>();
};

// The "operation type (input 0 type)" pairs this device implements, for documentation and tools.
std::vector<std::string> describeSupportedOperations();

}  // namespace npu::ref

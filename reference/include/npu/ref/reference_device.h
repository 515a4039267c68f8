#pragma once
// The CPU reference device: every operation it claims computed with the NNAPI reference
// semantics (TFLite fixed-point requantization for quantized types). It is the accuracy oracle of
// the project and a hal::IDevice like the NPU, so the same conformance suite runs on both.

#include <memory>
#include <string>
#include <vector>

#include "npu/hal/device.h"

namespace npu::ref {

class ReferenceDevice : public hal::IDevice {
public:
    ReferenceDevice() = default;

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
};

// The "operation type (input 0 type)" pairs this device implements, for documentation and tools.
std::vector<std::string> describeSupportedOperations();

}  // namespace npu::ref

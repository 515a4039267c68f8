#include "npu/ref/reference_device.h"

#include <set>

#include "npu/hal/validation.h"
#include "prepared_model.h"
#include "registry.h"

namespace npu::ref {

std::string ReferenceDevice::getVersionString() const {
    return "npu-reference 0.1.0 (CPU, NNAPI reference semantics)";
}

Result<hal::Capabilities> ReferenceDevice::getCapabilities() {
    hal::Capabilities caps;
    for (int32_t t = 0; t <= hal::kOperandTypeLast; ++t) {
        caps.operandPerformance.push_back({static_cast<hal::OperandType>(t), {1.0f, 1.0f}});
    }
    return caps;
}

Result<std::vector<bool>> ReferenceDevice::getSupportedOperations(const hal::Model& model) {
    // An invalid model is INVALID_ARGUMENT naming the operand or operation, never "unsupported":
    // validate first, then ask what is supported.
    if (auto valid = hal::validateModel(model); !valid) {
        return invalidArgument("getSupportedOperations: " + valid.error().message);
    }
    const auto& sg = model.main;
    std::vector<bool> supported;
    supported.reserve(sg.operations.size());
    for (const hal::Operation& op : sg.operations) {
        supported.push_back(isOperationSupported(model, sg, op));  // IF/WHILE: their subgraphs too
    }
    return supported;
}

Result<std::shared_ptr<hal::IPreparedModel>> ReferenceDevice::prepareModel(
    const hal::Model& model, hal::ExecutionPreference preference, hal::Priority priority,
    const hal::Deadline& deadline, const std::vector<int>&, const std::vector<int>&, const hal::CacheToken&) {
    // Preference and priority change nothing on the CPU, but invalid values are refused as on
    // every device.
    NPU_TRY(hal::validateExecutionPreference(preference));
    NPU_TRY(hal::validatePriority(priority));
    if (deadline && std::chrono::steady_clock::now() >= *deadline) {
        return fail(hal::ErrorStatus::MISSED_DEADLINE_PERSISTENT, "prepareModel: the deadline had passed");
    }
    auto prepared = NPU_TRY(ReferencePreparedModel::create(model, buffers_));
    return std::shared_ptr<hal::IPreparedModel>(std::move(prepared));
}

Result<hal::DeviceBuffer> ReferenceDevice::allocate(
    const hal::BufferDesc& desc, const std::vector<std::shared_ptr<hal::IPreparedModel>>& preparedModels,
    const std::vector<hal::BufferRole>& inputRoles, const std::vector<hal::BufferRole>& outputRoles) {
    return hal::allocateDeviceBuffer(buffers_, desc, preparedModels, inputRoles, outputRoles);
}

std::vector<std::string> describeSupportedOperations() {
    std::vector<std::string> out;
    for (const auto& r : allOperations()) out.emplace_back(hal::toString(r.type));
    return out;
}

}  // namespace npu::ref

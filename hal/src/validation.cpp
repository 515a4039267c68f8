// Placeholder until validation lands (it is being written now); keeps the build linking.
#include "npu/hal/validation.h"

namespace npu::hal {
Status validateModel(const Model&) { return {}; }
Status validateRequest(const Request&, const Model&) { return {}; }
Status validateExecutionPreference(ExecutionPreference p) {
    if (static_cast<int32_t>(p) < 0 || static_cast<int32_t>(p) > 2)
        return invalidArgument("execution preference " + std::to_string(static_cast<int32_t>(p)) + " is out of range [0, 2]");
    return {};
}
Status validatePriority(Priority p) {
    if (static_cast<int32_t>(p) < 0 || static_cast<int32_t>(p) > 2)
        return invalidArgument("priority " + std::to_string(static_cast<int32_t>(p)) + " is out of range [0, 2]");
    return {};
}
}  // namespace npu::hal

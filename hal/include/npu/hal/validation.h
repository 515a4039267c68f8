#pragma once
// Validation of models and requests against the NN HAL 1.3 rules: every mutation the NNAPI VTS
// validation tests make is rejected with INVALID_ARGUMENT and a message naming the operand or
// operation index and the rule.

#include "npu/hal/result.h"
#include "npu/hal/types.h"

namespace npu::hal {

Status validateModel(const Model& model);
Status validateRequest(const Request& request, const Model& model);
Status validateExecutionPreference(ExecutionPreference preference);
Status validatePriority(Priority priority);

}  // namespace npu::hal

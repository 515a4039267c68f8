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

// Memory domains (IDevice::allocate). `models[i]` is the model of the i-th prepared model (its
// main subgraph's inputs and outputs). Checks that there is at least one role, that every role
// names a model and an input or output that exist, with a probability in (0, 1], no role twice,
// and that all roles agree on type and quantization and, with desc, on dimensions. Returns the
// buffer's operand: the roles' type and quantization, the dimensions combined (0 = unknown).
Result<Operand> validateBufferRoles(const BufferDesc& desc, const std::vector<const Model*>& models,
                                    const std::vector<BufferRole>& inputRoles,
                                    const std::vector<BufferRole>& outputRoles);

// Two dimension lists merged (0 or an empty list = unknown); nullopt when they conflict.
std::optional<std::vector<uint32_t>> combineDimensions(const std::vector<uint32_t>& a,
                                                       const std::vector<uint32_t>& b);
// Bytes of a tensor of `type` and `dimensions`; nullopt when a dimension is unknown, the rank is
// unknown, or the size does not fit in 32 bits.
std::optional<uint64_t> tensorByteSize(OperandType type, const std::vector<uint32_t>& dimensions);

}  // namespace npu::hal

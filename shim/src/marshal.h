#pragma once
// HAL <-> wire conversions. Constant operand data is staged in the host window (device DRAM)
// and referenced by address: weights never ride inside protobuf messages.

#include <vector>

#include "host_window.h"
#include "npu.pb.h"
#include "npu/hal/result.h"
#include "npu/hal/types.h"

namespace npu::shim {

// Fills `out` from a validated model; the constants of every subgraph are copied into one
// window block, returned so the caller can free it once the firmware has taken them.
Result<WindowBlock> marshalModel(const hal::Model& model, HostWindow& window, proto::Model* out);

hal::Capabilities capabilitiesFromWire(const proto::CapabilitiesReply& reply);

}  // namespace npu::shim

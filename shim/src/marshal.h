#pragma once
// HAL <-> wire conversions. Constant operand data is staged in the host window (device DRAM)
// and referenced by address: weights never ride inside protobuf messages.

#include <cstdint>
#include <optional>
#include <vector>

#include "host_window.h"
#include "npu.pb.h"
#include "npu/hal/result.h"
#include "npu/hal/types.h"

namespace npu::shim {

// Device addresses of the model's pools the firmware mapped (zero copy, pool_maps.h): one per
// pool, nullopt for a pool to be staged. Empty: every constant is staged.
using PoolAddresses = std::vector<std::optional<uint64_t>>;

// Fills `out` from a validated model; the constants of every subgraph are copied into one
// window block, returned so the caller can free it once the firmware has taken them. A
// CONSTANT_REFERENCE in a mapped pool (`pools`) is named in place instead, when 16-byte aligned
// as the staged ones are.
Result<WindowBlock> marshalModel(const hal::Model& model, HostWindow& window, proto::Model* out,
                                 const PoolAddresses& pools = {});

hal::Capabilities capabilitiesFromWire(const proto::CapabilitiesReply& reply);

}  // namespace npu::shim

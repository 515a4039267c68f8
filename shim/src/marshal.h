#pragma once
// HAL <-> wire conversions. Small CONSTANT_COPY values ride inside the model message
// (Operand.value); every other constant is referenced by device address: in place in a pool the
// firmware mapped, or staged in the host window (device DRAM). docs/execution.md, "Memory model".

#include <cstdint>
#include <optional>
#include <vector>

#include "host_window.h"
#include "npu.pb.h"
#include "npu/hal/result.h"
#include "npu/hal/types.h"
#include "npu/protocol/constant_values.h"

namespace npu::shim {

// Device addresses of the model's pools the firmware mapped (zero copy, pool_maps.h): one per
// pool, nullopt for a pool to be staged. Empty: every constant is staged.
using PoolAddresses = std::vector<std::optional<uint64_t>>;

// Which CONSTANT_COPY values ride inside the message: each of at most maxValueBytes, taken in
// operand order (main subgraph first, then the referenced ones) while their total stays within
// maxModelBytes. The rest are staged in the host window.
struct InlineRule {
    uint32_t maxValueBytes = proto::kMaxInlineValueBytes;
    uint64_t maxModelBytes = proto::kMaxInlineModelBytes;
    // Nothing inside the message: a firmware before protocol 1.1 (proto::kInlineValuesMinor).
    static InlineRule none() { return {0, 0}; }
};

// The rule for the firmware that sent `hello`.
InlineRule inlineRuleFor(const proto::HelloReply& hello);

// Where a model's constants went (marshalModel).
struct ConstantPlacement {
    uint64_t inMessageCount = 0, inMessageBytes = 0;  // CONSTANT_COPY values inside the message
    uint64_t stagedCount = 0, stagedBytes = 0;        // copied into the host window
    uint64_t inPlaceCount = 0, inPlaceBytes = 0;      // CONSTANT_REFERENCE read in a mapped pool
};

// Fills `out` from a validated model. CONSTANT_COPY values go inside the message by `rule`; the
// other constants of every subgraph are copied into one window block, returned so the caller
// can free it once the firmware has taken them (an empty block when nothing is staged). A
// CONSTANT_REFERENCE in a mapped pool (`pools`) is named in place instead, when 16-byte aligned
// as the staged ones are. `placement`, when given, says where the constants went.
Result<WindowBlock> marshalModel(const hal::Model& model, HostWindow& window, proto::Model* out,
                                 const PoolAddresses& pools = {}, const InlineRule& rule = {},
                                 ConstantPlacement* placement = nullptr);

hal::Capabilities capabilitiesFromWire(const proto::CapabilitiesReply& reply);

}  // namespace npu::shim

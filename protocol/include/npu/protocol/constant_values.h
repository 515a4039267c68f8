#pragma once
// CONSTANT_COPY values inside the model messages (Operand.value of npu.proto): the limits both
// ends follow. Freestanding (the firmware includes it). docs/protocol.md, "Constants", and
// docs/execution.md, "Memory model", give the rule and the measurements behind the numbers.

#include <cstdint>

namespace npu::proto {

// The protocol minor version from which a firmware decodes Operand.value. The host puts values
// inside the message only for such a firmware; an older one gets every constant staged in the
// host window, as before.
inline constexpr uint32_t kInlineValuesMinor = 1;

// The largest CONSTANT_COPY value that rides inside PrepareModel / GetSupportedOperations: the
// NNAPI runtime's own limit for CONSTANT_COPY (ANEURALNETWORKS_MAX_SIZE_OF_IMMEDIATELY_COPIED_VALUES;
// it puts larger values in pools), and where a value inside the message stops being free on the
// emulated Cortex-M55 (past it each byte costs ~65 ns more there than a staged one, measured:
// docs/protocol.md). A larger
// value is staged in the host window and its address sent, as a CONSTANT_REFERENCE outside a
// mapped pool is. The firmware refuses a larger value inside the message with INVALID_ARGUMENT.
inline constexpr uint32_t kMaxInlineValueBytes = 128;

// The most value bytes one model carries inside the message, over all its subgraphs: the host
// puts values inside in operand order (main subgraph first) while the total stays within this,
// and stages the rest. So a model's message grows by at most this much (a model that fits the
// firmware's 4 MiB message limit without values still fits with them), and so does the firmware's
// request memory. The firmware refuses main-subgraph values past it with INVALID_ARGUMENT.
inline constexpr uint32_t kMaxInlineModelBytes = 64u << 10;

}  // namespace npu::proto

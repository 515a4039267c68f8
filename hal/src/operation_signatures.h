#pragma once
// The operand-type signatures of the NN HAL 1.3 operations (ADD .. RANK, except IF and WHILE,
// whose signatures depend on the subgraphs they call and are checked in validation.cpp).
//
// One SignatureRow per operation variant (e.g. CONV_2D with explicit padding, CONV_2D with
// implicit padding). A row is generic over a tensor type T: it lists the types T ranges over and,
// per input and output, a Slot that names either a fixed type or a type derived from T (the float
// scalar that goes with T, the bias type of T, ...). Optional trailing inputs are expressed by
// listing the longest input list and the input counts that are allowed.
// See docs/validation.md for how to add an operation or a variant.

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "npu/hal/result.h"
#include "npu/hal/types.h"

namespace npu::hal {

enum class SlotKind : uint8_t {
    Fixed,          // exactly `fixed`
    Tensor,         // T
    FloatParam,     // FLOAT16 when T is TENSOR_FLOAT16, FLOAT32 otherwise (betas, scales, clips)
    ElementScalar,  // the scalar of T's element: FLOAT16 / FLOAT32 / INT32 (quantized T: INT32)
    Bias,           // T for float T, TENSOR_INT32 for quantized T
    Box,            // T for float T, TENSOR_QUANT16_ASYMM for quantized T (ROI coordinates)
    Anchor,         // T for float T, TENSOR_QUANT16_SYMM for quantized T
    Filter,         // T for float T; T or TENSOR_QUANT8_SYMM_PER_CHANNEL for quantized T
    AnyOf,          // any type of `anyOf`
};

struct Slot {
    SlotKind kind = SlotKind::Fixed;
    OperandType fixed = OperandType::INT32;
    std::span<const OperandType> anyOf = {};
};

// How a row's operand list may grow beyond its listed slots.
enum class Variadic : uint8_t {
    None,
    LeadingInputs,    // inputs[0] repeats (>= 1 times) before the remaining slots: CONCATENATION
    TrailingOutputs,  // outputs[0] repeats (>= 1 times): SPLIT
};

// A rank the operation requires of one input when that input's rank is known (non-empty dims).
struct RankRule {
    uint8_t input = 0;
    uint8_t rank = 4;
    bool exact = false;  // true: rank must equal `rank`; false: rank must be <= `rank`
};

struct SignatureRow {
    OperationType type = OperationType::ADD;
    std::string_view variant;              // "" or e.g. "explicit padding"
    std::vector<OperandType> tensorTypes;  // what T ranges over; empty = the row has no T
    std::vector<Slot> inputs;              // the longest input list
    std::vector<uint32_t> inputCounts;     // allowed prefixes; empty = exactly inputs.size()
    std::vector<Slot> outputs;
    std::vector<uint32_t> outputCounts;  // allowed prefixes; empty = exactly outputs.size()
    Variadic variadic = Variadic::None;
    int32_t filterChannelDim = -1;  // required channelDim of a per-channel input 1
    std::vector<RankRule> ranks;    // checked once the types matched
};

// Every row of the table, in operation order.
const std::vector<SignatureRow>& signatureTable();

// The rows of one operation type (empty for IF, WHILE and unknown types).
std::span<const SignatureRow* const> signaturesOf(OperationType type);

// Checks the input and output count and types of `operation` against its signature rows. The
// message names the input or output position and operand index; the caller prefixes it with
// the subgraph and operation, e.g. "main subgraph: operation 2 (CONV_2D): ". The operation's
// operand indexes must already be known to be in range. Allocates only on failure.
Status validateOperationSignature(const Operation& operation, const std::vector<Operand>& operands);

// One concrete valid signature of a row (T = its first tensor type, the largest allowed counts),
// for tests and documentation.
struct ConcreteSignature {
    std::vector<OperandType> inputs;
    std::vector<OperandType> outputs;
};
ConcreteSignature exampleSignature(const SignatureRow& row);

}  // namespace npu::hal

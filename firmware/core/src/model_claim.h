#pragma once
// getSupportedOperations' whole-model rule: an operation is claimed only if the model made of
// the claimed operations prepares and runs (docs/firmware.md, "What is claimed"). Internal to
// firmware/core.

#include <cstdint>

#include "compiler.h"

namespace npu::fw {

// Where a claimed model must fit: the firmware's DRAM (blob + command queue + activations, with
// nothing else loaded) and, when given, the compiler's scratch arena (the blob is built there).
struct ClaimLimits {
    uint64_t firmwareDramBytes = 0;
    Arena* compileScratch = nullptr;  // null: the arena's size is not checked
};

// supported[i] for every operation of `model`: the per-operation checks (checkOperation), then
// a prefix (the longest a binary search finds; every claimed prefix is verified), in model
// order, of the operations those accept whose sub-model (the
// claimed operations, their boundary tensors as inputs and outputs) stays within the model-level
// limits: kMaxOperations operations, kMaxIo inputs and outputs, and the memory of `limits`.
// `scratch` holds the temporary tables (released before returning).
FwStatus claimOperations(const CompileTarget& target, const ModelDesc& model, const ClaimLimits& limits,
                         Arena& scratch, bool* supported);

// Why operation `op` is not claimed (`supported` as claimOperations left it): the status of its
// own check, or the whole-model limit that left it out of the claimed prefix. OK when it is
// claimed. Computes one operation's check: nothing is stored per operation.
FwStatus explainUnclaimed(const CompileTarget& target, const ModelDesc& model, const ClaimLimits& limits,
                          const bool* supported, uint32_t op);

}  // namespace npu::fw

#pragma once
// HAL model -> blob. The compiler supports exactly what operation_support.cpp accepts, and
// supportedOperations() answers from the same checks, so a claimed operation always compiles.

#include <cstdint>

#include "npu/fw/arena.h"
#include "npu/fw/runtime.h"

namespace npu::fw {

// The NPU the code is compiled for (read from HW_CONFIG) and where constants can be read.
struct CompileTarget {
    uint32_t arrayRows = 0, arrayCols = 0;
    uint32_t scratchpadBytes = 0, accumulatorBytes = 0;
    const uint8_t* dram = nullptr;
    uint64_t dramSize = 0;
    uint64_t hostWindowBase = 0;  // constants must lie in [hostWindowBase, dramSize)
    // Set for a prepare: asked between two operations planned (Platform::stopRequested) whether
    // the compile must stop (a Cancel, the prepare's deadline); null: it never stops.
    Platform* checkpoint = nullptr;
};

// OK iff operation `opIndex` of `model` compiles and runs bit-exact; otherwise the message names
// the operation, the operand and the rule it breaks.
FwStatus checkOperation(const CompileTarget& target, const ModelDesc& model, uint32_t opIndex);

// Output-stationary tiles of a GEMM-like op (FC and CONV): weights of `coutTile` channels stay
// in the scratchpad while `rowTile` rows (FC batch rows, CONV output rows) stream through.
struct MacTiling {
    uint32_t coutTile = 0;
    uint32_t rowTile = 0;
};
inline constexpr uint32_t kMaxTilingCandidates = 8;

// Compiles the whole model into a blob image allocated from `scratch` (usedBeforeImage, if given:
// the scratch arena's use just before the image, i.e. its high-water mark without the blob). `tilings`
// (optional, one per operation): the tiling of each CONV_2D / FULLY_CONNECTED, one of its candidates; an
// entry with coutTile 0, or no array, keeps the planner's greedy choice.
FwStatus compileModel(const CompileTarget& target, const ModelDesc& model, Arena& scratch,
                      const uint8_t** image, uint64_t* size, const MacTiling* tilings = nullptr,
                      size_t* usedBeforeImage = nullptr);

// What compileModel would produce, without writing it: the blob's bytes, the activation area and
// the command count (the executor's queue). Scratch: the planner's tables only, not the blob.
struct CompiledSize {
    uint64_t blobBytes = 0, activationBytes = 0;
    uint32_t commandCount = 0;
};
FwStatus measureModel(const CompileTarget& target, const ModelDesc& model, Arena& scratch,
                      CompiledSize* size);

// The tilings operation `opIndex` can be compiled with (at most kMaxTilingCandidates, the greedy
// choice first; none for operations without a tiling).
FwStatus modelTilingCandidates(const CompileTarget& target, const ModelDesc& model, uint32_t opIndex,
                               MacTiling* out, uint32_t* count);

}  // namespace npu::fw

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
};

// OK iff operation `opIndex` of `model` compiles and runs bit-exact; otherwise the message names
// the operation, the operand and the rule it breaks.
FwStatus checkOperation(const CompileTarget& target, const ModelDesc& model, uint32_t opIndex);

// Compiles the whole model into a blob image allocated from `scratch`.
FwStatus compileModel(const CompileTarget& target, const ModelDesc& model, Arena& scratch,
                      const uint8_t** image, uint64_t* size);

}  // namespace npu::fw

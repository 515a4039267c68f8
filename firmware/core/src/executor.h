#pragma once
// Runs a loaded blob on the NPU: places the command stream and the activation area in firmware
// DRAM, patches input/output addresses, then submits one operation at a time (doorbell, IRQ wait
// with timeout) so that the PMU can be read per operation.

#include <cstdint>

#include "blob_store.h"
#include "dram_allocator.h"
#include "npu/fw/runtime.h"

namespace npu::fw {

struct ExecutionContext {
    Platform& platform;
    DramAllocator& dram;
    uint64_t hostWindowBase = 0;
    uint32_t irqTimeoutUs = 0;
    bool detailedProfile = false;  // also read DMA bytes, DMA stalls and unit busy cycles per operation
};

FwStatus executeBlob(const ExecutionContext& ctx, const LoadedBlob& blob, const IoArg* inputs,
                     uint32_t inputCount, const IoArg* outputs, uint32_t outputCount, ExecResult* result);

// CTRL.SOFT_RESET, then enable with interrupts.
void resetNpu(Platform& platform);

}  // namespace npu::fw

#pragma once
// The NPU's Capabilities performance figures, measured: a small reference workload per data type
// (a FULLY_CONNECTED 16x256 -> 64 followed by an ADD) is compiled and run on the NPU at firmware
// start-up, and its device cycles and DRAM traffic are turned into time and energy relative to a
// reference CPU (NNAPI: 1.0 = the CPU, lower is better). The simulated NPU is deterministic, so
// every start of the same firmware on the same hardware answers the same figures.
// docs/firmware.md, "Capabilities".

#include <cstdint>

#include "blob_store.h"
#include "compiler.h"
#include "dram_allocator.h"
#include "npu/fw/runtime.h"

namespace npu::fw {

// The reference CPU the figures are relative to: one core retiring kCpuOpsPerSecond int8
// multiply-accumulates (or elementwise operations) per second at kCpuWatts, against the NPU at
// kNpuWatts; DRAM costs both kDramJoulesPerByte for the bytes the NPU's DMA measured.
inline constexpr double kCpuOpsPerSecond = 4e9;  // 2 GHz, 2 int8 MACs per cycle (NEON dot products)
inline constexpr double kCpuWatts = 1.5;
inline constexpr double kNpuWatts = 0.5;
inline constexpr double kDramJoulesPerByte = 20e-12;

struct WorkloadFigures {
    uint64_t cycles = 0;     // NPU device cycles of the workload
    uint64_t dramBytes = 0;  // NPU DMA bytes read + written
    uint64_t cpuOps = 0;     // MACs + elementwise operations of the workload
    float execTime = 0;      // NPU time / CPU time
    float powerUsage = 0;    // NPU energy / CPU energy
};

struct ProbeContext {
    CompileTarget target;  // hostWindowBase 0: the workload's constants live in firmware DRAM
    Platform& platform;
    DramAllocator& dram;
    BlobStore& store;
    BlobLimits limits;
    uint64_t clockHz;
    uint32_t irqTimeoutUs;
};

// Runs the workload with data of `type` (TENSOR_QUANT8_ASYMM or TENSOR_QUANT8_ASYMM_SIGNED);
// `scratch` holds the compiler's temporaries (the caller releases them). Leaves nothing behind.
FwStatus probeWorkload(const ProbeContext& ctx, uint32_t type, Arena& scratch, WorkloadFigures* out);

}  // namespace npu::fw

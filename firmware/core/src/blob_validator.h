#pragma once
// Checks every size, offset and command of a blob before the firmware trusts it. A blob may come
// from a cache file an attacker wrote, so nothing is assumed: the header, the section bounds, the
// metadata tables, every command's opcode, every DMA's DRAM extent against its region, and every
// compute command's fields and scratchpad and accumulator boxes (compute_command_check.h).

#include <cstdint>

#include "blob_format.h"
#include "npu/fw/runtime.h"

namespace npu::fw {

struct BlobLimits {
    uint32_t arrayRows = 0, arrayCols = 0, scratchpadKib = 0, accumulatorKib = 0;
    uint64_t maxActivationBytes = 0;
};

// On success `view` points into `bytes`, which must stay unchanged while the view is used.
FwStatus validateBlob(const uint8_t* bytes, uint64_t size, const BlobLimits& limits, BlobView* view);

// The DRAM span [0, span) a DMA command touches relative to its region offset; false on overflow.
bool dmaDramSpan(const isa::Command& c, uint64_t* end);

}  // namespace npu::fw

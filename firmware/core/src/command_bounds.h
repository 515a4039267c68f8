#pragma once
// The scratchpad and accumulator extents of a compute command, for the blob validator: every box
// a command reads or writes must lie inside the NPU's memories (hwsim would fault at run time;
// a validated blob never reaches the hardware with one out of range). Internal to firmware/core.

#include <cstdint>

#include "hwsim/isa/commands.h"

namespace npu::fw {

// nullptr when the command's scratchpad boxes lie in [0, scratchpadBytes) and its accumulator
// boxes in [0, accumulatorEntries); otherwise which box does not (or which size is zero or
// overflows). Non-compute commands (DMA, tokens, FENCE, NOP) always pass.
const char* computeCommandOutOfBounds(const isa::Command& c, uint64_t scratchpadBytes,
                                      uint64_t accumulatorEntries);

}  // namespace npu::fw

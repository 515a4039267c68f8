#pragma once
// Load-time check of every compute command of a blob, one table entry per opcode
// (compute_command_check.cpp): the fields a blob can get wrong without a DMA noticing (modes,
// flags, counts, scales, zero points, VEC_OP's function) and every scratchpad and accumulator box
// the command reads or writes. hwsim checks again at run time; a validated blob never reaches the
// hardware with one out of range. Internal to firmware/core.

#include <cstdint>

#include "hwsim/isa/commands.h"

namespace npu::fw {

enum class CommandClass : uint8_t {
    kOther,    // DMA, tokens, FENCE, NOP: checked by the blob validator itself
    kCompute,  // has a table entry; computeCommandProblem checks it
    kUnknown,  // a compute opcode without a table entry: refused (a new opcode needs its check)
};
CommandClass commandClass(isa::Opcode op);

// nullptr when compute command `c` is well-formed for an NPU with `scratchpadBytes` of scratchpad
// and `accumulatorEntries` int32 accumulators; otherwise what is wrong ("GEMM A matrix", "MEAN
// scales", ...): a field outside its range, a size zero or overflowing, or a box outside its memory.
const char* computeCommandProblem(const isa::Command& c, uint64_t scratchpadBytes,
                                  uint64_t accumulatorEntries);

}  // namespace npu::fw

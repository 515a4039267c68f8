#pragma once
// State shared by the units of one simulated NPU (internal to hwsim).

#include <cstdint>
#include <vector>

#include "hwsim/isa/commands.h"
#include "hwsim/isa/registers.h"
#include "npu/hwsim/config.h"

namespace npu::sim {

struct Pmu {
    uint64_t cycles = 0;
    uint64_t macs = 0;
    uint64_t dmaReadBytes = 0;
    uint64_t dmaWriteBytes = 0;
    uint64_t stallCycles = 0;
    uint64_t commands = 0;
    uint64_t stallDmaCycles = 0;
    uint64_t loadActive = 0, computeActive = 0, storeActive = 0;
    uint64_t dmaTransactions = 0;
    uint32_t ctrl = 0;
    uint32_t latchedHi = 0;  // HI half captured by the last LO read
    bool frozen() const { return (ctrl & isa::kPmuCtrlFreeze) != 0; }
};

struct DeviceState {
    HwConfig config;
    uint8_t* dram = nullptr;
    uint64_t dramSize = 0;
    std::vector<uint8_t> scratchpad;
    std::vector<int32_t> accumulator;
    uint64_t regionBase[isa::kRegionCount] = {};

    uint32_t ctrl = 0;
    uint32_t status = isa::kStatusIdle;
    uint64_t cmdqBase = 0;
    uint32_t cmdqSize = 0;
    uint32_t cmdqHead = 0;
    uint32_t cmdqTail = 0;
    uint32_t irqStatus = 0;
    uint32_t irqMask = 0;
    uint32_t errorCode = 0;
    uint32_t errorOffset = 0;
    Pmu pmu;

    // Fault injection (HwConfig::faults, or Device::injectFaults) and its progress since reset.
    FaultConfig faults;
    uint64_t commandsSinceReset = 0;
    uint64_t dmaSinceReset = 0;
    bool hung = false;        // a hang fault fired: BUSY forever, doorbells ignored
    uint32_t delayedIrq = 0;  // IRQ bits held back by faults.irqDelayPolls
    uint32_t irqPollsLeft = 0;

    bool hasError() const { return (status & isa::kStatusError) != 0; }
};

// Whether [addr, addr + extent) lies inside [0, size), without overflow.
inline bool inRange(uint64_t addr, uint64_t extent, uint64_t size) {
    return addr <= size && extent <= size - addr;
}

// Bytes spanned by a strided box: (planes-1)*planeStride + (rows-1)*rowStride + inner.
// Returns false when the box is empty or the span does not fit 64 bits.
inline bool boxSpan(uint32_t inner, uint32_t rows, uint32_t planes, uint32_t rowStride, uint32_t planeStride,
                    uint64_t* span) {
    if (inner == 0 || rows == 0 || planes == 0) return false;
    const uint64_t a = uint64_t{planes - 1} * planeStride;  // < 2^64 for 32-bit factors
    const uint64_t b = uint64_t{rows - 1} * rowStride;
    uint64_t s = 0;
    if (__builtin_add_overflow(a, b, &s) || __builtin_add_overflow(s, uint64_t{inner}, &s)) {
        return false;
    }
    *span = s;
    return true;
}

// Bytes spanned by rows x cols elements at a row and a column stride (either may be 0, which
// broadcasts): (rows-1)*rowStride + (cols-1)*colStride + 1. rows and cols are at least 1.
inline uint64_t elementSpan(uint32_t rows, uint32_t cols, uint32_t rowStride, uint32_t colStride) {
    return uint64_t{rows - 1} * rowStride + uint64_t{cols - 1} * colStride + 1;
}

}  // namespace npu::sim

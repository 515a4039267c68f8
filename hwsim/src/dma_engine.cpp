#include <cstring>

#include "units.h"

namespace npu::sim {

using isa::ErrorCode;

UnitResult DmaEngine::load(const isa::Command& c) {
    return transfer(c, true);
}
UnitResult DmaEngine::store(const isa::Command& c) {
    return transfer(c, false);
}

UnitResult DmaEngine::transfer(const isa::Command& c, bool toSram) {
    const isa::DmaBox b = isa::dmaBoxOf(c);
    const bool fill = (isa::flagsOf(c) & isa::dma::kFlagFill) != 0;
    if ((isa::flagsOf(c) & ~isa::dma::kFlagFill) != 0 || (fill && !toSram)) {
        return fault(ErrorCode::kBadParameter);
    }
    if ((c.w[isa::dma::kPadValue] & ~0xFFu) != 0) return fault(ErrorCode::kBadParameter);
    const uint64_t rowCount = uint64_t{b.rows} * b.planes;
    if (b.innerBytes == 0 || b.rows == 0 || b.planes == 0 || rowCount > kMaxDmaRowsPerCommand ||
        rowCount * b.innerBytes > kMaxDmaBytesPerCommand) {
        return fault(ErrorCode::kBadSize);
    }
    uint64_t sramSpan = 0;
    if (!boxSpan(b.innerBytes, b.rows, b.planes, b.sramRowStride, b.sramPlaneStride, &sramSpan) ||
        !inRange(b.sramAddr, sramSpan, s_.scratchpad.size())) {
        return fault(ErrorCode::kSramOutOfRange);
    }
    uint64_t dramAddr = 0;
    if (!fill) {
        uint64_t dramSpan = 0;
        if (b.region >= isa::kRegionCount ||
            __builtin_add_overflow(s_.regionBase[b.region], b.dramOffset, &dramAddr) ||
            !boxSpan(b.innerBytes, b.rows, b.planes, b.dramRowStride, b.dramPlaneStride, &dramSpan) ||
            !inRange(dramAddr, dramSpan, s_.dramSize)) {
            return fault(ErrorCode::kDramOutOfRange);
        }
    }

    // Rows that follow each other on both sides move as one run. The scratchpad and DRAM are
    // separate host buffers, so a run never overlaps itself.
    const bool rowsJoin = b.sramRowStride == b.innerBytes && (fill || b.dramRowStride == b.innerBytes);
    const uint32_t rowsPerRun = rowsJoin ? b.rows : 1;
    const uint64_t runBytes = uint64_t{b.innerBytes} * rowsPerRun;
    uint8_t* sram = s_.scratchpad.data();
    for (uint32_t p = 0; p < b.planes; ++p) {
        for (uint32_t r = 0; r < b.rows; r += rowsPerRun) {
            uint8_t* sp = sram + b.sramAddr + uint64_t{p} * b.sramPlaneStride + uint64_t{r} * b.sramRowStride;
            if (fill) {
                std::memset(sp, static_cast<int>(c.w[isa::dma::kPadValue]), runBytes);
                continue;
            }
            uint8_t* dp =
                s_.dram + dramAddr + uint64_t{p} * b.dramPlaneStride + uint64_t{r} * b.dramRowStride;
            if (toSram) {
                std::memcpy(sp, dp, runBytes);
            } else {
                std::memcpy(dp, sp, runBytes);
            }
        }
    }

    // Each row is one burst: the first pays DRAM latency, the rest stream behind it; a burst
    // moves at most dmaBytesPerCycle per cycle, so narrow rows waste bandwidth (as on silicon).
    const uint64_t bpc = s_.config.dmaBytesPerCycle;
    const uint64_t beatsPerRow = (b.innerBytes + bpc - 1) / bpc;
    UnitResult r;
    r.cycles = (fill ? 0 : s_.config.dramLatencyCycles) + rowCount * beatsPerRow;
    const uint64_t bytes = rowCount * b.innerBytes;
    if (!fill) (toSram ? r.bytesRead : r.bytesWritten) = bytes;
    return r;
}

}  // namespace npu::sim

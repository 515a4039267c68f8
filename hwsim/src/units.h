#pragma once
// The NPU's execution units (internal to hwsim). Each unit checks its command completely before
// touching any memory, computes the real result, and reports its cost in cycles; the command
// processor owns timing and the PMU.

#include <cstdint>
#include <vector>

#include "device_state.h"
#include "hwsim/isa/commands.h"
#include "int8_kernels.h"

namespace npu::sim {

struct UnitResult {
    isa::ErrorCode error = isa::ErrorCode::kNone;
    uint64_t cycles = 0;
    uint64_t macs = 0;
    uint64_t bytesRead = 0;     // DRAM -> SRAM
    uint64_t bytesWritten = 0;  // SRAM -> DRAM
    uint64_t dmaTransactions = 0;
};

inline UnitResult fault(isa::ErrorCode e) {
    UnitResult r;
    r.error = e;
    return r;
}

// Limits that keep one command's simulation bounded in host time whatever a blob says; the
// firmware's tiles stay far below them.
inline constexpr uint64_t kMaxDmaBytesPerCommand = uint64_t{1} << 28;
inline constexpr uint64_t kMaxDmaRowsPerCommand = uint64_t{1} << 24;
inline constexpr uint64_t kMaxMacsPerCommand = uint64_t{1} << 31;
inline constexpr int32_t kMaxZeroPointMagnitude = 256;
inline constexpr int32_t kMaxOffsetMagnitude = 1 << 16;
// SOFTMAX: the per-row reciprocal of the sum of exponentials (three Newton-Raphson steps).
inline constexpr uint64_t kSoftmaxReciprocalCycles = 12;

class DmaEngine {
public:
    explicit DmaEngine(DeviceState& s) : s_(s) {}
    UnitResult load(const isa::Command& c);
    UnitResult store(const isa::Command& c);

private:
    UnitResult transfer(const isa::Command& c, bool toSram);
    DeviceState& s_;
};

// A checked CONV / DWCONV (mac_array.cpp decodes it).
struct ConvCommand {
    uint32_t ih = 0, iw = 0, channels = 0, rowStride = 0, kh = 0, kw = 0, sy = 0, sx = 0, dy = 0, dx = 0;
    int64_t padTop = 0, padLeft = 0;
    uint32_t oh = 0, ow = 0, cout = 0;
    int32_t zpIn = 0, zpW = 0;
    bool signedIn = false, signedW = false, accumulate = false;
    const uint8_t* ifm = nullptr;
    const uint8_t* weights = nullptr;
    int32_t* acc = nullptr;
};

class MacArray {
public:
    explicit MacArray(DeviceState& s) : s_(s) {}
    UnitResult gemm(const isa::Command& c);
    UnitResult conv(const isa::Command& c);
    UnitResult dwconv(const isa::Command& c);

private:
    uint64_t foldCycles(uint64_t m, uint64_t k, uint64_t n) const;
    void dwPixel(const ConvCommand& v, uint32_t oy, uint32_t ox, bool wholeTile, bool wholeWeights,
                 uint32_t* sum);
    DeviceState& s_;
    // Host scratch reused across commands (no allocation in the steady state).
    kernels::PackedB packedB_;
    std::vector<int16_t> packedA_;
    std::vector<int16_t> dwWeights_, dwInput_, dwTap_;
    std::vector<uint32_t> row_;                 // one output pixel's accumulators (wrapping int32 arithmetic)
    std::vector<const int16_t*> tapIn_, tapW_;  // one output pixel's valid taps
};

// A two-input element-wise command's boxes (ADD, VEC_OP): rows x cols elements, each input at a
// row and a column stride (0 broadcasts), the output rows contiguous.
struct ElementBox {
    uint32_t addr = 0, rowStride = 0, colStride = 0;
};
struct BinaryCommand {
    uint32_t rows = 0, cols = 0;
    ElementBox a, b;
    uint32_t outAddr = 0, outRowStride = 0;
    bool signedIn = false;
};

// A checked REQUANT's operands.
struct RequantBox {
    const int32_t* acc = nullptr;
    const uint8_t* bias = nullptr;  // null without a bias
    uint8_t* out = nullptr;
    uint32_t rows = 0, cols = 0, accStride = 0, outStride = 0;
};

class VectorUnit {
public:
    explicit VectorUnit(DeviceState& s) : s_(s) {}
    UnitResult setParams(const isa::Command& c);
    UnitResult requant(const isa::Command& c);
    UnitResult add(const isa::Command& c);
    UnitResult vecOp(const isa::Command& c);
    UnitResult pool(const isa::Command& c);
    UnitResult softmax(const isa::Command& c);
    UnitResult resize(const isa::Command& c);   // ISA 1.2, vector_resample.cpp
    UnitResult mean(const isa::Command& c);     // ISA 1.2, vector_resample.cpp
    UnitResult convert(const isa::Command& c);  // ISA 1.3, vector_resample.cpp
    void reset() { params_ = isa::VecParams{}; }

private:
    uint64_t cost(uint64_t elements) const;
    bool clampFits(bool signedOut) const;
    isa::ErrorCode checkBinary(const BinaryCommand& cmd, bool hasB, bool signedOut) const;
    void vecOpRows(isa::VecFunction f, const BinaryCommand& cmd, uint32_t lutAddr, uint8_t* dst) const;
    kernels::RequantParams requantParams() const;
    void requantRows(const RequantBox& box) const;
    void requantGathered(const RequantBox& box);
    DeviceState& s_;
    isa::VecParams params_;
    // Host scratch reused across commands (no allocation in the steady state).
    std::vector<uint8_t> result_;
    std::vector<int32_t> gatheredAcc_;
    std::vector<uint8_t> gatheredOut_;
};

}  // namespace npu::sim

#pragma once
// The MAC array's host arithmetic (internal to hwsim): 8-bit operands with their zero points
// removed are widened to int16 and multiplied into int32 accumulators. Every product and every
// pair sum fits int32 (|value - zero point| <= 511), and the accumulation wraps like the
// silicon's 32-bit adders, so every code path (AVX-512, AVX2, portable) gives the same bits.
//
// Why packing: the simulator's speed is a feature (docs/simulator.md, `npu bench sim`). With the
// reduction in pairs of int16 the inner loop is one multiply-add-pairs instruction per 16 (AVX2)
// or 32 (AVX-512) MACs, the same scheme optimized int8 CPU libraries use.

#include <cstdint>
#include <string_view>
#include <vector>

#include "hwsim/isa/commands.h"
#include "hwsim/isa/fixed_point.h"

namespace npu::sim::kernels {

// B (K x N, N contiguous) packed in blocks of kBlockCols columns: for each block, for each pair
// of reduction rows kp, kBlockCols (col, row pair) int16 pairs. K is padded to even and N to a
// multiple of kBlockCols with zeros.
inline constexpr uint32_t kBlockCols = 16;

struct PackedB {
    std::vector<int16_t> data;
    uint32_t k = 0, n = 0, kPairs = 0, blocks = 0;
};

// Widens a strided 8-bit matrix into packed B. `isSigned` selects int8 (else uint8).
void packB(const uint8_t* b, uint32_t k, uint32_t n, uint64_t rowStride, bool isSigned, int32_t zp,
           PackedB& out);

// A (rows x kPairs*2 int16, row-major, the reduction padded to even with zeros).
void packARows(const uint8_t* a, uint32_t rows, uint32_t k, uint64_t rowStride, bool isSigned, int32_t zp,
               uint32_t kPairs, int16_t* out);

// acc[i][j] (+)= sum_k a[i][k] * b[k][j] for i < rows, j < b.n, in wrapping int32.
void gemmPacked(const int16_t* a, uint32_t rows, const PackedB& b, int32_t* acc, uint64_t accStride,
                bool accumulate);

// dst[i] = src[i] (int8 or uint8) - zp for i < n: the widening every MAC operand goes through.
void widen(const uint8_t* src, uint32_t n, bool isSigned, int32_t zp, int16_t* dst);

// sum[i] += a[i] * b[i] in wrapping 32-bit arithmetic, for i < n (depthwise taps).
void macRow(uint32_t* sum, const int16_t* a, const int16_t* b, uint32_t n);

// Bias element j of a REQUANT: little-endian int32 bytes.
inline int32_t biasAt(const uint8_t* bias, uint64_t j) {
    const uint8_t* b = bias + j * 4;
    return static_cast<int32_t>(b[0] | (uint32_t{b[1]} << 8) | (uint32_t{b[2]} << 16) |
                                (uint32_t{b[3]} << 24));
}

// sum[i] += sum over t < taps of a[t][i] * b[t][i], wrapping, for i < n: one depthwise output
// pixel's taps at once (each sum is loaded and stored once, not once per tap).
void macTaps(uint32_t* sum, const int16_t* const* a, const int16_t* const* b, uint32_t taps, uint32_t n);

struct RequantParams {
    int32_t multiplier = 0, shift = 0, offset = 0, clampMin = 0, clampMax = 0;
};
// out[j] = clamp(MBQM(acc[j] + bias[j], multiplier, shift) + offset) for j < n: REQUANT's row,
// exactly isa::multiplyByQuantizedMultiplier. `bias` is little-endian int32 bytes, or null.
void requantRow(const int32_t* acc, const uint8_t* bias, uint32_t n, const RequantParams& p, uint8_t* out);

// ---- ADD and VEC_OP's MUL (hwsim/isa/commands.h): the element definitions and row kernels ----
// The definitions below are the architecture; the row kernels compute them many lanes at a time
// and must give the same bits (tests/unit/hwsim/host_kernels_test.cpp).

// v clamped to the command's output range (VEC_PARAMS' clampMin / clampMax).
inline int32_t clampOutput(int64_t v, const isa::VecParams& p) {
    return static_cast<int32_t>(v < p.clampMin ? p.clampMin : (v > p.clampMax ? p.clampMax : v));
}

// ADD's first step on one input value: its offset added, shifted left (wrapping), rescaled.
inline int32_t addRescale(int32_t v, int32_t offset, int32_t multiplier, int32_t shift, int32_t leftShift) {
    const int32_t shifted = isa::wrapToInt32(int64_t{v + offset} * (int64_t{1} << leftShift));
    return isa::multiplyByQuantizedMultiplier(shifted, multiplier, shift);
}

// ADD on one pair of 8-bit input values (as int32): TFLite's two-input rescale.
inline int32_t addElement(int32_t a, int32_t b, const isa::VecParams& p) {
    const int32_t scaled1 = addRescale(a, p.in1Offset, p.in1Mult, p.in1Shift, p.leftShift);
    const int32_t scaled2 = addRescale(b, p.in2Offset, p.in2Mult, p.in2Shift, p.leftShift);
    const int32_t sum = isa::wrapToInt32(int64_t{scaled1} + scaled2);
    return clampOutput(int64_t{isa::multiplyByQuantizedMultiplier(sum, p.outMult, p.outShift)} + p.outOffset,
                       p);
}

// VEC_OP MUL on one pair of 8-bit input values (as int32).
inline int32_t mulElement(int32_t a, int32_t b, const isa::VecParams& p) {
    const int32_t product = isa::wrapToInt32(int64_t{a + p.in1Offset} * (b + p.in2Offset));
    return clampOutput(
        int64_t{isa::multiplyByQuantizedMultiplier(product, p.outMult, p.outShift)} + p.outOffset, p);
}

// One row of a two-input element-wise command: n elements of each input, each either contiguous
// (column stride 1) or one value for the whole row (column stride 0).
struct BinaryRow {
    const uint8_t* a = nullptr;
    const uint8_t* b = nullptr;
    bool aBroadcast = false, bBroadcast = false;
    uint32_t n = 0;
    bool signedIn = false;  // int8 inputs, else uint8
};
// out[j] = addElement / mulElement of the row's j-th inputs, j < n. `out` may be one of the
// inputs itself (element j is read before it is written) but must not overlap them otherwise.
void addRow(const BinaryRow& row, const isa::VecParams& p, uint8_t* out);
void mulRow(const BinaryRow& row, const isa::VecParams& p, uint8_t* out);

// Which implementation gemmPacked runs on this host: "avx512vnni", "avx512bw", "avx2" or
// "portable".
const char* gemmKernelName();
// Tests: runs gemmPacked on one of those names from now on; false when
// the host cannot run it. Not thread safe (the simulator is single threaded).
bool selectGemmKernel(std::string_view name);

}  // namespace npu::sim::kernels

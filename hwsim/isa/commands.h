#pragma once
// NPU command-stream encoding. Headers only, constexpr only, freestanding.
//
// A command is 64 bytes: sixteen little-endian 32-bit words. Word 0 is the header:
//   opcode[7:0]  flags[15:8]  reserved[31:16] (must be zero)
// The command processor reads commands from the command queue (a ring in DRAM, see
// registers.h) and dispatches each to one of three in-order queues (decoupled access-execute):
//   LOAD    DMA_LOAD                         DRAM -> scratchpad
//   COMPUTE GEMM, CONV, VEC_PARAMS, REQUANT, ADD
//   STORE   DMA_STORE                        scratchpad -> DRAM
// Queues synchronise only through dependency tokens (PUSH/POP) and FENCE. Functional results
// are computed in stream order, so a PUSH must precede its POP in the stream.
// docs/isa.md is the readable form of this file; keep both in step.

#include <cstdint>

namespace npu::isa {

inline constexpr uint32_t kCommandWords = 16;
inline constexpr uint32_t kCommandBytes = kCommandWords * 4;

struct Command {
    uint32_t w[kCommandWords] = {};
};
static_assert(sizeof(Command) == kCommandBytes);

enum class Opcode : uint8_t {
    kInvalid = 0x00,  // zeroed memory is not a command
    kDmaLoad = 0x01,
    kDmaStore = 0x02,
    kGemm = 0x10,
    kConv = 0x11,
    kDwConv = 0x12,  // appended in ISA 1.1
    kVecParams = 0x20,
    kRequant = 0x21,
    kAdd = 0x22,
    kVecOp = 0x23,    // appended in ISA 1.1
    kPool = 0x24,     // appended in ISA 1.1
    kSoftmax = 0x25,  // appended in ISA 1.2
    kResize = 0x26,   // appended in ISA 1.2
    kMean = 0x27,     // appended in ISA 1.2
    kConvert = 0x28,  // appended in ISA 1.3
    kPush = 0x30,
    kPop = 0x31,
    kFence = 0x32,
    kNop = 0x3D,
    kIrq = 0x3E,
    kStop = 0x3F,
};

enum class Queue : uint32_t { kLoad = 0, kCompute = 1, kStore = 2 };
inline constexpr uint32_t kQueueCount = 3;

enum class ErrorCode : uint32_t {
    kNone = 0,
    kBadOpcode = 1,              // unknown opcode or non-zero reserved header bits
    kDramOutOfRange = 2,         // a DMA touches DRAM outside [0, dramSize) or an invalid region
    kSramOutOfRange = 3,         // scratchpad access outside its size
    kAccumulatorOutOfRange = 4,  // accumulator access outside its size
    kBadSize = 5,                // zero or impossible dimension / count
    kBadParameter = 6,           // a field out of its legal range (shift, stride, clamp, queue...)
    kBadQueueConfig = 7,         // CMDQ_BASE/SIZE/TAIL not aligned or outside DRAM
    kTokenUnderflow = 8,         // POP without a matching earlier PUSH (would deadlock)
    kTokenOverflow = 9,          // more outstanding tokens than the queue depth
    kNotEnabled = 10,            // DOORBELL while CTRL.ENABLE is clear
    kDmaError = 11,              // the DRAM returned an error for a DMA transfer (bus fault)
    kSramEcc = 12,               // the scratchpad's ECC found a corrupted word (data is suspect)
};

constexpr const char* errorCodeName(ErrorCode c) {
    switch (c) {
        case ErrorCode::kNone:
            return "NONE";
        case ErrorCode::kBadOpcode:
            return "BAD_OPCODE";
        case ErrorCode::kDramOutOfRange:
            return "DRAM_OUT_OF_RANGE";
        case ErrorCode::kSramOutOfRange:
            return "SRAM_OUT_OF_RANGE";
        case ErrorCode::kAccumulatorOutOfRange:
            return "ACCUMULATOR_OUT_OF_RANGE";
        case ErrorCode::kBadSize:
            return "BAD_SIZE";
        case ErrorCode::kBadParameter:
            return "BAD_PARAMETER";
        case ErrorCode::kBadQueueConfig:
            return "BAD_QUEUE_CONFIG";
        case ErrorCode::kTokenUnderflow:
            return "TOKEN_UNDERFLOW";
        case ErrorCode::kTokenOverflow:
            return "TOKEN_OVERFLOW";
        case ErrorCode::kNotEnabled:
            return "NOT_ENABLED";
        case ErrorCode::kDmaError:
            return "DMA_ERROR";
        case ErrorCode::kSramEcc:
            return "SRAM_ECC";
    }
    return "UNKNOWN";
}

constexpr Opcode opcodeOf(const Command& c) {
    return static_cast<Opcode>(c.w[0] & 0xFF);
}
constexpr uint32_t flagsOf(const Command& c) {
    return (c.w[0] >> 8) & 0xFF;
}
constexpr uint32_t reservedOf(const Command& c) {
    return c.w[0] >> 16;
}
constexpr uint32_t header(Opcode op, uint32_t flags = 0) {
    return static_cast<uint32_t>(op) | ((flags & 0xFF) << 8);
}
constexpr uint32_t lo16(uint32_t w) {
    return w & 0xFFFF;
}
constexpr uint32_t hi16(uint32_t w) {
    return w >> 16;
}
constexpr uint32_t pack16(uint32_t lo, uint32_t hi) {
    return (lo & 0xFFFF) | (hi << 16);
}

// ---- DMA_LOAD / DMA_STORE: 3-D strided copy between DRAM and scratchpad -----------------------
// for p < planes, r < rows: copy innerBytes from
//   DRAM  REGION_BASE[region] + dramOffset + p*dramPlaneStride + r*dramRowStride
//   SRAM  sramAddr + p*sramPlanesStride + r*sramRowStride
// DMA_LOAD with kDmaFill writes padValue into the SRAM box instead of reading DRAM.
namespace dma {
inline constexpr uint32_t kRegion = 1;  // region[2:0]
inline constexpr uint32_t kDramOffsetLo = 2;
inline constexpr uint32_t kDramOffsetHi = 3;
inline constexpr uint32_t kSramAddr = 4;
inline constexpr uint32_t kInnerBytes = 5;
inline constexpr uint32_t kRows = 6;
inline constexpr uint32_t kPlanes = 7;
inline constexpr uint32_t kDramRowStride = 8;
inline constexpr uint32_t kDramPlaneStride = 9;
inline constexpr uint32_t kSramRowStride = 10;
inline constexpr uint32_t kSramPlaneStride = 11;
inline constexpr uint32_t kPadValue = 12;  // [7:0]
inline constexpr uint32_t kFlagFill = 1u << 0;
}  // namespace dma

struct DmaBox {
    uint32_t region = 0;
    uint64_t dramOffset = 0;
    uint32_t sramAddr = 0;
    uint32_t innerBytes = 0;
    uint32_t rows = 1;
    uint32_t planes = 1;
    uint32_t dramRowStride = 0;
    uint32_t dramPlaneStride = 0;
    uint32_t sramRowStride = 0;
    uint32_t sramPlaneStride = 0;
};

constexpr Command makeDma(Opcode op, const DmaBox& b, uint32_t flags = 0, uint32_t padValue = 0) {
    Command c;
    c.w[0] = header(op, flags);
    c.w[dma::kRegion] = b.region;
    c.w[dma::kDramOffsetLo] = static_cast<uint32_t>(b.dramOffset);
    c.w[dma::kDramOffsetHi] = static_cast<uint32_t>(b.dramOffset >> 32);
    c.w[dma::kSramAddr] = b.sramAddr;
    c.w[dma::kInnerBytes] = b.innerBytes;
    c.w[dma::kRows] = b.rows;
    c.w[dma::kPlanes] = b.planes;
    c.w[dma::kDramRowStride] = b.dramRowStride;
    c.w[dma::kDramPlaneStride] = b.dramPlaneStride;
    c.w[dma::kSramRowStride] = b.sramRowStride;
    c.w[dma::kSramPlaneStride] = b.sramPlaneStride;
    c.w[dma::kPadValue] = padValue & 0xFF;
    return c;
}
constexpr DmaBox dmaBoxOf(const Command& c) {
    DmaBox b;
    b.region = c.w[dma::kRegion];
    b.dramOffset = c.w[dma::kDramOffsetLo] | (static_cast<uint64_t>(c.w[dma::kDramOffsetHi]) << 32);
    b.sramAddr = c.w[dma::kSramAddr];
    b.innerBytes = c.w[dma::kInnerBytes];
    b.rows = c.w[dma::kRows];
    b.planes = c.w[dma::kPlanes];
    b.dramRowStride = c.w[dma::kDramRowStride];
    b.dramPlaneStride = c.w[dma::kDramPlaneStride];
    b.sramRowStride = c.w[dma::kSramRowStride];
    b.sramPlaneStride = c.w[dma::kSramPlaneStride];
    return b;
}

// Flags shared by the MAC commands: element signedness (uint8 is TENSOR_QUANT8_ASYMM).
inline constexpr uint32_t kMacFlagAccumulate = 1u << 0;  // add to the accumulator, else overwrite
inline constexpr uint32_t kMacFlagSignedA = 1u << 1;     // A / input elements are int8
inline constexpr uint32_t kMacFlagSignedB = 1u << 2;     // B / weight elements are int8

// ---- GEMM: acc[m][n] (+)= sum_k (A[m][k] - zpA) * (B[k][n] - zpB) -----------------------------
// A: M x K bytes at aAddr (row stride aRowStride); B: K x N bytes at bAddr (row stride
// bRowStride, i.e. weights re-laid out K-major with output columns contiguous);
// acc: int32 entries at accAddr (entry index) with row stride accRowStride (entries).
namespace gemm {
inline constexpr uint32_t kAAddr = 1, kARowStride = 2, kBAddr = 3, kBRowStride = 4, kM = 5, kK = 6, kN = 7,
                          kAccAddr = 8, kAccRowStride = 9, kZpA = 10, kZpB = 11;
}
struct GemmDesc {
    uint32_t aAddr = 0, aRowStride = 0, bAddr = 0, bRowStride = 0;
    uint32_t m = 0, k = 0, n = 0;
    uint32_t accAddr = 0, accRowStride = 0;
    int32_t zpA = 0, zpB = 0;
};
constexpr Command makeGemm(const GemmDesc& d, uint32_t flags = 0) {
    Command c;
    c.w[0] = header(Opcode::kGemm, flags);
    c.w[gemm::kAAddr] = d.aAddr;
    c.w[gemm::kARowStride] = d.aRowStride;
    c.w[gemm::kBAddr] = d.bAddr;
    c.w[gemm::kBRowStride] = d.bRowStride;
    c.w[gemm::kM] = d.m;
    c.w[gemm::kK] = d.k;
    c.w[gemm::kN] = d.n;
    c.w[gemm::kAccAddr] = d.accAddr;
    c.w[gemm::kAccRowStride] = d.accRowStride;
    c.w[gemm::kZpA] = static_cast<uint32_t>(d.zpA);
    c.w[gemm::kZpB] = static_cast<uint32_t>(d.zpB);
    return c;
}

// ---- CONV: direct convolution of one scratchpad tile (im2col is implicit in the array feeder) --
// ifm: H x W x C bytes (NHWC, pixel stride C, row stride ifmRowStride) at ifmAddr.
// weights: [kh][kw][C][cout] bytes at wAddr (output channels contiguous).
// acc: [ofmH][ofmW][cout] int32 entries at accAddr, contiguous.
// For output (oy, ox): input y = oy*strideY + ky*dilY - padTop, x likewise. Taps outside the
// tile [0,H) x [0,W) read as zpIn, i.e. contribute nothing (zero padding in the real domain).
namespace conv {
inline constexpr uint32_t kIfmAddr = 1, kIfmHW = 2, kIfmC = 3, kIfmRowStride = 4, kWAddr = 5, kKernelHW = 6,
                          kStride = 7, kDilation = 8, kPad = 9, kOfmHW = 10, kCout = 11, kAccAddr = 12,
                          kZpIn = 13, kZpW = 14;
}
struct ConvDesc {
    uint32_t ifmAddr = 0, ifmH = 0, ifmW = 0, ifmC = 0, ifmRowStride = 0;
    uint32_t wAddr = 0, kernelH = 0, kernelW = 0;
    uint32_t strideY = 1, strideX = 1, dilY = 1, dilX = 1, padTop = 0, padLeft = 0;
    uint32_t ofmH = 0, ofmW = 0, cout = 0, accAddr = 0;
    int32_t zpIn = 0, zpW = 0;
};
constexpr Command makeConv(const ConvDesc& d, uint32_t flags = 0) {
    Command c;
    c.w[0] = header(Opcode::kConv, flags);
    c.w[conv::kIfmAddr] = d.ifmAddr;
    c.w[conv::kIfmHW] = pack16(d.ifmH, d.ifmW);
    c.w[conv::kIfmC] = d.ifmC;
    c.w[conv::kIfmRowStride] = d.ifmRowStride;
    c.w[conv::kWAddr] = d.wAddr;
    c.w[conv::kKernelHW] = pack16(d.kernelH, d.kernelW);
    c.w[conv::kStride] = pack16(d.strideY, d.strideX);
    c.w[conv::kDilation] = pack16(d.dilY, d.dilX);
    c.w[conv::kPad] = pack16(d.padTop, d.padLeft);
    c.w[conv::kOfmHW] = pack16(d.ofmH, d.ofmW);
    c.w[conv::kCout] = d.cout;
    c.w[conv::kAccAddr] = d.accAddr;
    c.w[conv::kZpIn] = static_cast<uint32_t>(d.zpIn);
    c.w[conv::kZpW] = static_cast<uint32_t>(d.zpW);
    return c;
}

// ---- VEC_PARAMS: loads the vector unit's quantization registers -------------------------------
// Used by REQUANT (out*) and ADD (all). Multipliers are Q31 fixed point, shifts are TFLite's
// convention (positive = left). Clamp bounds are in the output type's range.
namespace vec {
inline constexpr uint32_t kIn1Mult = 1, kIn1Shift = 2, kIn2Mult = 3, kIn2Shift = 4, kOutMult = 5,
                          kOutShift = 6, kIn1Offset = 7, kIn2Offset = 8, kOutOffset = 9, kLeftShift = 10,
                          kClampMin = 11, kClampMax = 12;
inline constexpr uint32_t kFlagSignedOut = 1u << 1;  // REQUANT/ADD: int8 output (else uint8)
inline constexpr uint32_t kFlagHasBias = 1u << 0;    // REQUANT: add bias[col] before scaling
inline constexpr uint32_t kFlagSignedIn = 1u << 0;   // ADD: int8 inputs (else uint8)
inline constexpr int32_t kMinShift = -31, kMaxShift = 30, kMaxLeftShift = 30;
}  // namespace vec
struct VecParams {
    int32_t in1Mult = 0, in1Shift = 0, in2Mult = 0, in2Shift = 0, outMult = 0, outShift = 0;
    int32_t in1Offset = 0, in2Offset = 0, outOffset = 0, leftShift = 0;
    int32_t clampMin = 0, clampMax = 255;
};
constexpr Command makeVecParams(const VecParams& p) {
    Command c;
    c.w[0] = header(Opcode::kVecParams);
    c.w[vec::kIn1Mult] = static_cast<uint32_t>(p.in1Mult);
    c.w[vec::kIn1Shift] = static_cast<uint32_t>(p.in1Shift);
    c.w[vec::kIn2Mult] = static_cast<uint32_t>(p.in2Mult);
    c.w[vec::kIn2Shift] = static_cast<uint32_t>(p.in2Shift);
    c.w[vec::kOutMult] = static_cast<uint32_t>(p.outMult);
    c.w[vec::kOutShift] = static_cast<uint32_t>(p.outShift);
    c.w[vec::kIn1Offset] = static_cast<uint32_t>(p.in1Offset);
    c.w[vec::kIn2Offset] = static_cast<uint32_t>(p.in2Offset);
    c.w[vec::kOutOffset] = static_cast<uint32_t>(p.outOffset);
    c.w[vec::kLeftShift] = static_cast<uint32_t>(p.leftShift);
    c.w[vec::kClampMin] = static_cast<uint32_t>(p.clampMin);
    c.w[vec::kClampMax] = static_cast<uint32_t>(p.clampMax);
    return c;
}

// ---- REQUANT: out[r][c] = clamp(MBQM(acc[r][c] + bias[c], outMult, outShift) + outOffset) -------
// MBQM is TFLite's MultiplyByQuantizedMultiplier (SaturatingRoundingDoublingHighMul then
// RoundingDivideByPOT). bias: int32 little endian per column at biasAddr (scratchpad).
namespace requant {
inline constexpr uint32_t kAccAddr = 1, kAccRowStride = 2, kRows = 3, kCols = 4, kBiasAddr = 5, kOutAddr = 6,
                          kOutRowStride = 7;
}
struct RequantDesc {
    uint32_t accAddr = 0, accRowStride = 0, rows = 0, cols = 0, biasAddr = 0, outAddr = 0, outRowStride = 0;
};
constexpr Command makeRequant(const RequantDesc& d, uint32_t flags = 0) {
    Command c;
    c.w[0] = header(Opcode::kRequant, flags);
    c.w[requant::kAccAddr] = d.accAddr;
    c.w[requant::kAccRowStride] = d.accRowStride;
    c.w[requant::kRows] = d.rows;
    c.w[requant::kCols] = d.cols;
    c.w[requant::kBiasAddr] = d.biasAddr;
    c.w[requant::kOutAddr] = d.outAddr;
    c.w[requant::kOutRowStride] = d.outRowStride;
    return c;
}

// ---- ADD: TFLite's quantized add with the two-input rescale (left shift) path -----------------
// For r < rows, c < cols: a = A[r*aRowStride + c*aColStride], b likewise (a stride of 0
// broadcasts), out[r*outRowStride + c] = clamp(MBQM(MBQM((a+in1Offset)<<leftShift, in1) +
// MBQM((b+in2Offset)<<leftShift, in2), out) + outOffset).
namespace add {
inline constexpr uint32_t kRows = 1, kCols = 2, kAAddr = 3, kARowStride = 4, kAColStride = 5, kBAddr = 6,
                          kBRowStride = 7, kBColStride = 8, kOutAddr = 9, kOutRowStride = 10;
}
struct AddDesc {
    uint32_t rows = 0, cols = 0;
    uint32_t aAddr = 0, aRowStride = 0, aColStride = 0;
    uint32_t bAddr = 0, bRowStride = 0, bColStride = 0;
    uint32_t outAddr = 0, outRowStride = 0;
};
constexpr Command makeAdd(const AddDesc& d, uint32_t flags = 0) {
    Command c;
    c.w[0] = header(Opcode::kAdd, flags);
    c.w[add::kRows] = d.rows;
    c.w[add::kCols] = d.cols;
    c.w[add::kAAddr] = d.aAddr;
    c.w[add::kARowStride] = d.aRowStride;
    c.w[add::kAColStride] = d.aColStride;
    c.w[add::kBAddr] = d.bAddr;
    c.w[add::kBRowStride] = d.bRowStride;
    c.w[add::kBColStride] = d.bColStride;
    c.w[add::kOutAddr] = d.outAddr;
    c.w[add::kOutRowStride] = d.outRowStride;
    return c;
}

// ---- DWCONV: depthwise convolution tile (depth multiplier 1) ------------------------------------
// Same words as CONV; weights are [kh][kw][C] bytes, acc [ofmH][ofmW][C] int32 entries, and word
// kCout must equal C. acc[oy][ox][c] (+)= sum_{ky,kx} (in[y][x][c] - zpIn) * (w[ky][kx][c] - zpW).
constexpr Command makeDwConv(const ConvDesc& d, uint32_t flags = 0) {
    Command c = makeConv(d, flags);
    c.w[0] = header(Opcode::kDwConv, flags);
    return c;
}

// ---- VEC_OP: element-wise vector operations on 8-bit tiles (uses VEC_PARAMS) -------------------
// For r < rows, c < cols, a = A[r*aRowStride + c*aColStride] (B likewise; stride 0 broadcasts),
// out[r*outRowStride + c] = clamp(f(a, b)) with clampMin/clampMax from VEC_PARAMS:
//   MUL    MBQM((a + in1Offset) * (b + in2Offset), outMult, outShift) + outOffset   (TFLite MUL)
//   MAX    max(a, b)            MIN  min(a, b)       (TFLite MAXIMUM / MINIMUM: same scales)
//   SHIFT  leftShift >= 0 ... (a + in1Offset) << leftShift, then MBQM(., outMult, outShift)
//          + outOffset, i.e. a requantization of one input (TFLite's rescale path)
//   CLAMP  a                    (ReLU, ReLU6, ReLU_N1_TO_1 are clamps in the quantized domain)
//   LUT    lut[a as its 8-bit pattern], a 256-byte table at lutAddr (sigmoid, tanh: the firmware
//          fills the table with TFLite's int8 LOGISTIC / TANH values for the tensor's scales)
//   PRELU  (ISA 1.2) x = a + in1Offset; x >= 0 ? MBQM(x, in1Mult, in1Shift)
//          : MBQM(x * (b + in2Offset), outMult, outShift); then + outOffset (NNAPI PRELU)
namespace vecop {
inline constexpr uint32_t kFunction = 1, kRows = 2, kCols = 3, kAAddr = 4, kARowStride = 5, kAColStride = 6,
                          kBAddr = 7, kBRowStride = 8, kBColStride = 9, kOutAddr = 10, kOutRowStride = 11,
                          kLutAddr = 12;
}
enum class VecFunction : uint32_t {
    kMul = 0,
    kMax = 1,
    kMin = 2,
    kShift = 3,
    kClamp = 4,
    kLut = 5,
    kPrelu = 6
};
struct VecOpDesc {
    VecFunction function = VecFunction::kClamp;
    uint32_t rows = 0, cols = 0;
    uint32_t aAddr = 0, aRowStride = 0, aColStride = 1;
    uint32_t bAddr = 0, bRowStride = 0, bColStride = 1;
    uint32_t outAddr = 0, outRowStride = 0, lutAddr = 0;
};
constexpr Command makeVecOp(const VecOpDesc& d, uint32_t flags = 0) {
    Command c;
    c.w[0] = header(Opcode::kVecOp, flags);
    c.w[vecop::kFunction] = static_cast<uint32_t>(d.function);
    c.w[vecop::kRows] = d.rows;
    c.w[vecop::kCols] = d.cols;
    c.w[vecop::kAAddr] = d.aAddr;
    c.w[vecop::kARowStride] = d.aRowStride;
    c.w[vecop::kAColStride] = d.aColStride;
    c.w[vecop::kBAddr] = d.bAddr;
    c.w[vecop::kBRowStride] = d.bRowStride;
    c.w[vecop::kBColStride] = d.bColStride;
    c.w[vecop::kOutAddr] = d.outAddr;
    c.w[vecop::kOutRowStride] = d.outRowStride;
    c.w[vecop::kLutAddr] = d.lutAddr;
    return c;
}

// ---- POOL: max / average pooling of an NHWC tile (TFLite MAX_POOL_2D / AVERAGE_POOL_2D) -------
// For output (oy, ox, c), the window is input y = oy*strideY + ky - padTop (x likewise), taps
// outside [0,H) x [0,W) excluded. MAX: the largest tap. AVG: sum / count of the valid taps,
// rounded half away from zero (TFLite's integer average). Then clamp (VEC_PARAMS).
// Output [ofmH][ofmW][C] bytes, contiguous, at outAddr. Flag 0: SIGNED (int8, else uint8).
namespace pool {
inline constexpr uint32_t kMode = 1, kIfmAddr = 2, kIfmHW = 3, kIfmC = 4, kIfmRowStride = 5, kKernelHW = 6,
                          kStride = 7, kPad = 8, kOfmHW = 9, kOutAddr = 10;
inline constexpr uint32_t kModeMax = 0, kModeAverage = 1;
inline constexpr uint32_t kFlagSigned = 1u << 0;
}  // namespace pool
struct PoolDesc {
    uint32_t mode = pool::kModeMax;
    uint32_t ifmAddr = 0, ifmH = 0, ifmW = 0, ifmC = 0, ifmRowStride = 0;
    uint32_t kernelH = 0, kernelW = 0, strideY = 1, strideX = 1, padTop = 0, padLeft = 0;
    uint32_t ofmH = 0, ofmW = 0, outAddr = 0;
};
constexpr Command makePool(const PoolDesc& d, uint32_t flags = 0) {
    Command c;
    c.w[0] = header(Opcode::kPool, flags);
    c.w[pool::kMode] = d.mode;
    c.w[pool::kIfmAddr] = d.ifmAddr;
    c.w[pool::kIfmHW] = pack16(d.ifmH, d.ifmW);
    c.w[pool::kIfmC] = d.ifmC;
    c.w[pool::kIfmRowStride] = d.ifmRowStride;
    c.w[pool::kKernelHW] = pack16(d.kernelH, d.kernelW);
    c.w[pool::kStride] = pack16(d.strideY, d.strideX);
    c.w[pool::kPad] = pack16(d.padTop, d.padLeft);
    c.w[pool::kOfmHW] = pack16(d.ofmH, d.ofmW);
    c.w[pool::kOutAddr] = d.outAddr;
    return c;
}

// ---- SOFTMAX (ISA 1.2): TFLite's quantized softmax of each row of an 8-bit tile ----------------
// For r < rows: the row's elements in[r*inRowStride + c*inColStride], c < cols; with d = x - max
// of the row, the terms with d >= diffMin give e = exp(MultiplyByQuantizedMultiplierGreaterThanOne
// (d, multiplier, leftShift) as Q5.26) (gemmlowp's exp_on_negative_values), summed in Q12.19;
// out = clamp(RoundingDivideByPOT(reciprocal(sum) * e, bitsOverUnit + 23) (- 128 if SIGNED)),
// the others the type's minimum. Output scale 1/256, zero point 0 (uint8) or -128 (int8). The
// arithmetic is in fixed_point.h (expOnNegativeValuesQ5, softmaxReciprocal). Flag 0: SIGNED.
namespace softmax {
inline constexpr uint32_t kRows = 1, kCols = 2, kInAddr = 3, kInRowStride = 4, kInColStride = 5, kOutAddr = 6,
                          kOutRowStride = 7, kOutColStride = 8, kMultiplier = 9, kLeftShift = 10,
                          kDiffMin = 11;
inline constexpr uint32_t kFlagSigned = 1u << 0;
inline constexpr int32_t kMaxLeftShift = 31;
// Rows up to this length cannot overflow the Q12.19 sum of exponentials (each term <= 1).
inline constexpr uint32_t kMaxRowLength = 4095;
}  // namespace softmax
struct SoftmaxDesc {
    uint32_t rows = 0, cols = 0;
    uint32_t inAddr = 0, inRowStride = 0, inColStride = 1;
    uint32_t outAddr = 0, outRowStride = 0, outColStride = 1;
    int32_t multiplier = 0, leftShift = 0, diffMin = 0;
};
constexpr Command makeSoftmax(const SoftmaxDesc& d, uint32_t flags = 0) {
    Command c;
    c.w[0] = header(Opcode::kSoftmax, flags);
    c.w[softmax::kRows] = d.rows;
    c.w[softmax::kCols] = d.cols;
    c.w[softmax::kInAddr] = d.inAddr;
    c.w[softmax::kInRowStride] = d.inRowStride;
    c.w[softmax::kInColStride] = d.inColStride;
    c.w[softmax::kOutAddr] = d.outAddr;
    c.w[softmax::kOutRowStride] = d.outRowStride;
    c.w[softmax::kOutColStride] = d.outColStride;
    c.w[softmax::kMultiplier] = static_cast<uint32_t>(d.multiplier);
    c.w[softmax::kLeftShift] = static_cast<uint32_t>(d.leftShift);
    c.w[softmax::kDiffMin] = static_cast<uint32_t>(d.diffMin);
    return c;
}

// ---- RESIZE (ISA 1.2): nearest-neighbour or bilinear resampling of an NHWC tile ---------------
// The tile holds input rows [ifmFirstRow, ifmFirstRow + ifmH) of an image of fullInH x fullInW
// pixels (all of its columns, C channels, pixel stride C, row stride ifmRowStride); the output
// tile is rows [ofmFirstRow, ofmFirstRow + ofmH) of a fullOutH x fullOutW image, [ofmH][fullOutW][C]
// contiguous at outAddr. Source coordinates are TFLite's (resample.h: scale, align_corners,
// half_pixel_centers from the flags); NEAREST copies the source pixel, BILINEAR computes
// round(Σ w * v) in float as TFLite's reference does, then saturates. A source row outside the
// tile is BAD_PARAMETER. Flags: 0 SIGNED, 1 ALIGN_CORNERS, 2 HALF_PIXEL_CENTERS.
namespace resize {
inline constexpr uint32_t kMode = 1, kIfmAddr = 2, kIfmRows = 3, kIfmC = 4, kIfmRowStride = 5, kFullIn = 6,
                          kFirstRows = 7, kOfmRows = 8, kFullOut = 9, kOutAddr = 10;
inline constexpr uint32_t kModeNearest = 0, kModeBilinear = 1;
inline constexpr uint32_t kFlagSigned = 1u << 0, kFlagAlignCorners = 1u << 1, kFlagHalfPixel = 1u << 2;
}  // namespace resize
struct ResizeDesc {
    uint32_t mode = resize::kModeNearest;
    uint32_t ifmAddr = 0, ifmH = 0, ifmC = 0, ifmRowStride = 0, ifmFirstRow = 0;
    uint32_t fullInH = 0, fullInW = 0, fullOutH = 0, fullOutW = 0;
    uint32_t ofmFirstRow = 0, ofmH = 0, outAddr = 0;
};
constexpr Command makeResize(const ResizeDesc& d, uint32_t flags = 0) {
    Command c;
    c.w[0] = header(Opcode::kResize, flags);
    c.w[resize::kMode] = d.mode;
    c.w[resize::kIfmAddr] = d.ifmAddr;
    c.w[resize::kIfmRows] = d.ifmH;
    c.w[resize::kIfmC] = d.ifmC;
    c.w[resize::kIfmRowStride] = d.ifmRowStride;
    c.w[resize::kFullIn] = pack16(d.fullInH, d.fullInW);
    c.w[resize::kFirstRows] = pack16(d.ofmFirstRow, d.ifmFirstRow);
    c.w[resize::kOfmRows] = d.ofmH;
    c.w[resize::kFullOut] = pack16(d.fullOutH, d.fullOutW);
    c.w[resize::kOutAddr] = d.outAddr;
    return c;
}

// ---- MEAN (ISA 1.2): mean of 8-bit values over a strided 2-D window, float path ---------------
// For o1 < outer, o2 < inner: out[o1 * inner + o2] = quantize(mean over r1 < count1, r2 < count2
// of scaleIn * (in[o1*outerStride + o2*innerStride + r1*stride1 + r2*stride2] - zpIn)), i.e. the
// terms are dequantized in float32, summed exactly (a wide fixed-point accumulator: each term is
// a multiple of 2^(exponent(scaleIn) - 23) below 2^32 of it, so at most 2^21 terms are exact),
// divided by the count in float64, rounded to float32, and quantized with scaleOut / zpOut
// (round half away from zero, saturated): the reference's MEAN. Flag 0: SIGNED (int8, else
// uint8). Scales are float32 bit patterns, positive and finite.
namespace mean {
inline constexpr uint32_t kIfmAddr = 1, kOuter = 2, kOuterStride = 3, kInner = 4, kInnerStride = 5,
                          kCount1 = 6, kStride1 = 7, kCount2 = 8, kStride2 = 9, kOutAddr = 10, kScaleIn = 11,
                          kZpIn = 12, kScaleOut = 13, kZpOut = 14;
inline constexpr uint32_t kFlagSigned = 1u << 0;
inline constexpr uint64_t kMaxTerms = uint64_t{1} << 21;  // the exact-sum bound above
}  // namespace mean
struct MeanDesc {
    uint32_t ifmAddr = 0, outer = 1, outerStride = 0, inner = 1, innerStride = 0;
    uint32_t count1 = 1, stride1 = 0, count2 = 1, stride2 = 0, outAddr = 0;
    uint32_t scaleInBits = 0, scaleOutBits = 0;
    int32_t zpIn = 0, zpOut = 0;
};
constexpr Command makeMean(const MeanDesc& d, uint32_t flags = 0) {
    Command c;
    c.w[0] = header(Opcode::kMean, flags);
    c.w[mean::kIfmAddr] = d.ifmAddr;
    c.w[mean::kOuter] = d.outer;
    c.w[mean::kOuterStride] = d.outerStride;
    c.w[mean::kInner] = d.inner;
    c.w[mean::kInnerStride] = d.innerStride;
    c.w[mean::kCount1] = d.count1;
    c.w[mean::kStride1] = d.stride1;
    c.w[mean::kCount2] = d.count2;
    c.w[mean::kStride2] = d.stride2;
    c.w[mean::kOutAddr] = d.outAddr;
    c.w[mean::kScaleIn] = d.scaleInBits;
    c.w[mean::kZpIn] = static_cast<uint32_t>(d.zpIn);
    c.w[mean::kScaleOut] = d.scaleOutBits;
    c.w[mean::kZpOut] = static_cast<uint32_t>(d.zpOut);
    return c;
}

// ---- CONVERT (ISA 1.3): float32 <-> 8-bit quantized, element by element, float path ----------
// `count` elements from inAddr to outAddr (contiguous; the two ranges must not overlap). Flag 1
// TO_FLOAT clear (QUANTIZE): float32 in (4 bytes, little-endian), 8-bit out:
// q = round(x / scale) + zp in float32, round half away from zero, saturated to the type, NaN to
// the type's minimum (the reference's quantizeValue). TO_FLOAT set (DEQUANTIZE): 8-bit in,
// float32 out: scale * float(q - zp) in float32 (the reference's loadReal). Flag 0: SIGNED (int8,
// else uint8). The scale is a float32 bit pattern, positive and finite; zp in the type's range.
namespace convert {
inline constexpr uint32_t kInAddr = 1, kCount = 2, kOutAddr = 3, kScale = 4, kZp = 5;
inline constexpr uint32_t kFlagSigned = 1u << 0, kFlagToFloat = 1u << 1;
}  // namespace convert
struct ConvertDesc {
    uint32_t inAddr = 0, count = 0, outAddr = 0, scaleBits = 0;
    int32_t zp = 0;
};
constexpr Command makeConvert(const ConvertDesc& d, uint32_t flags = 0) {
    Command c;
    c.w[0] = header(Opcode::kConvert, flags);
    c.w[convert::kInAddr] = d.inAddr;
    c.w[convert::kCount] = d.count;
    c.w[convert::kOutAddr] = d.outAddr;
    c.w[convert::kScale] = d.scaleBits;
    c.w[convert::kZp] = static_cast<uint32_t>(d.zp);
    return c;
}

// ---- Synchronisation and control ------------------------------------------------------------
// PUSH: from-queue signals "everything I issued so far is done" to to-queue.
// POP: to-queue's next command waits for the oldest token from from-queue.
namespace token {
inline constexpr uint32_t kFrom = 1, kTo = 2;
}
constexpr Command makeToken(Opcode op, Queue from, Queue to) {
    Command c;
    c.w[0] = header(op);
    c.w[token::kFrom] = static_cast<uint32_t>(from);
    c.w[token::kTo] = static_cast<uint32_t>(to);
    return c;
}
constexpr Command makePush(Queue from, Queue to) {
    return makeToken(Opcode::kPush, from, to);
}
constexpr Command makePop(Queue from, Queue to) {
    return makeToken(Opcode::kPop, from, to);
}
constexpr Command makeSimple(Opcode op) {
    Command c;
    c.w[0] = header(op);
    return c;
}
constexpr Command makeFence() {
    return makeSimple(Opcode::kFence);
}
constexpr Command makeIrq() {
    return makeSimple(Opcode::kIrq);
}
constexpr Command makeStop() {
    return makeSimple(Opcode::kStop);
}
constexpr Command makeNop() {
    return makeSimple(Opcode::kNop);
}

constexpr bool isDma(Opcode op) {
    return op == Opcode::kDmaLoad || op == Opcode::kDmaStore;
}
constexpr bool isKnownOpcode(Opcode op) {
    switch (op) {
        case Opcode::kDmaLoad:
        case Opcode::kDmaStore:
        case Opcode::kGemm:
        case Opcode::kConv:
        case Opcode::kVecParams:
        case Opcode::kRequant:
        case Opcode::kAdd:
        case Opcode::kPush:
        case Opcode::kPop:
        case Opcode::kFence:
        case Opcode::kNop:
        case Opcode::kIrq:
        case Opcode::kStop:
        case Opcode::kDwConv:
        case Opcode::kVecOp:
        case Opcode::kPool:
        case Opcode::kSoftmax:
        case Opcode::kResize:
        case Opcode::kMean:
        case Opcode::kConvert:
            return true;
        case Opcode::kInvalid:
            return false;
    }
    return false;
}

}  // namespace npu::isa

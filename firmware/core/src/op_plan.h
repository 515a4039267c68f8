#pragma once
// Parses one HAL operation into what the code generator needs, checking every NNAPI rule and
// every limit of this NPU on the way (operation_support). Internal to firmware/core.

#include <cstdint>

#include "compiler.h"
#include "hwsim/isa/commands.h"
#include "quant.h"

namespace npu::fw {

namespace hal {
inline constexpr uint32_t kInt32 = 1, kBool = 6, kTensorInt32 = 4, kTensorQuant8Asymm = 5,
                          kTensorQuant8SymmPerChannel = 11, kTensorQuant8AsymmSigned = 14;
// The operand types some compiled operation accepts: Capabilities quotes these as fast and every
// other type as unsupported (FLT_MAX). Keep in step with the type checks of the planners.
inline constexpr uint32_t kClaimedOperandTypes[] = {
    kInt32, kBool, kTensorInt32, kTensorQuant8Asymm, kTensorQuant8SymmPerChannel, kTensorQuant8AsymmSigned};
// uint8 (TENSOR_QUANT8_ASYMM) or int8 (TENSOR_QUANT8_ASYMM_SIGNED) activation data.
constexpr bool isQuant8Data(uint32_t type) {
    return type == kTensorQuant8Asymm || type == kTensorQuant8AsymmSigned;
}
inline constexpr uint32_t kTemporary = 0, kSubgraphInput = 1, kSubgraphOutput = 2, kConstantCopy = 3,
                          kConstantReference = 4, kNoValue = 5;
inline constexpr uint32_t kOpAdd = 0, kOpAveragePool2d = 1, kOpConcatenation = 2, kOpConv2d = 3,
                          kOpDepthwiseConv2d = 4, kOpFullyConnected = 9, kOpLogistic = 14, kOpMaxPool2d = 17,
                          kOpRelu = 19, kOpRelu1 = 20, kOpRelu6 = 21, kOpReshape = 22, kOpTanh = 28,
                          kOpSqueeze = 34, kOpSub = 36, kOpMul = 18, kOpMaximum = 65, kOpMinimum = 66,
                          kOpPad = 32, kOpPadV2 = 69, kOpHardSwish = 99;
// ADD, SUB, MUL, MAXIMUM, MINIMUM: planned into an AddPlan (broadcasting), run by the vector unit.
constexpr bool isBinaryOp(uint32_t type) {
    return type == kOpAdd || type == kOpSub || type == kOpMul || type == kOpMaximum || type == kOpMinimum;
}
// CONV_2D or DEPTHWISE_CONV_2D: both planned into a ConvPlan.
constexpr bool isConvOp(uint32_t type) {
    return type == kOpConv2d || type == kOpDepthwiseConv2d;
}
// Element-wise unary operations the vector unit runs as a 256-entry lookup table.
constexpr bool isLutOp(uint32_t type) {
    return type == kOpRelu || type == kOpRelu1 || type == kOpRelu6 || type == kOpLogistic ||
           type == kOpTanh || type == kOpHardSwish;
}
// Operations that only move bytes (DMA work, no compute).
constexpr bool isCopyOp(uint32_t type) {
    return type == kOpReshape || type == kOpSqueeze || type == kOpConcatenation;
}
}  // namespace hal

const char* operationName(uint32_t type);
// The table function of a table-mapped unary operation (hal::isLutOp); kCopy for any other.
ByteMap byteMapOf(uint32_t operationType);

struct ConvPlan {
    uint32_t input = 0, filter = 0, bias = 0, output = 0;
    uint32_t batch = 0, inH = 0, inW = 0, cin = 0, kh = 0, kw = 0, cout = 0, outH = 0, outW = 0;
    uint32_t strideX = 1, strideY = 1, dilX = 1, dilY = 1;
    uint32_t padLeft = 0, padRight = 0, padTop = 0, padBottom = 0;
    bool nchw = false;
    // DEPTHWISE_CONV_2D: output channel o reads input channel o / multiplier only (cout = cin *
    // multiplier). A channel tile holds whole groups of `multiplier` channels; its input tile
    // holds each input channel repeated `multiplier` times, so one DWCONV (depth multiplier 1
    // in the array) computes it.
    bool depthwise = false;
    uint32_t multiplier = 1;
    MacTiling tiling;
};

// The weight buffers of a CONV_2D / FULLY_CONNECTED tiled `coutTile` of `cout` output channels
// with `k` weights each (plus a 4-byte bias). With more than one channel tile there are two
// buffers (the next tile's weights load while this one computes) when both fit in half the
// scratchpad; otherwise one, and the tiles are separated by fences.
inline bool doubleBufferedWeights(const CompileTarget& t, uint64_t coutTile, uint64_t k, uint64_t cout) {
    return coutTile < cout && 2 * ((coutTile * (k + 4) + 63) / 64 * 64) <= t.scratchpadBytes / 2;
}
inline uint64_t weightBufferBytes(const CompileTarget& t, uint64_t coutTile, uint64_t k, uint64_t cout) {
    const uint64_t one = (coutTile * (k + 4) + 63) / 64 * 64;
    return doubleBufferedWeights(t, coutTile, k, cout) ? 2 * one : one;
}

struct FcPlan {
    uint32_t input = 0, weights = 0, bias = 0, output = 0;
    uint32_t batch = 0, inputSize = 0, units = 0;
    MacTiling tiling;
};

// Broadcast ADD, collapsed to at most 4 dims; strides are in elements, 0 = broadcast.
struct AddPlan {
    uint32_t a = 0, b = 0, output = 0;
    uint32_t dims[4] = {1, 1, 1, 1};
    uint32_t strideA[4] = {}, strideB[4] = {};
    uint32_t rowTile = 0, colTile = 0;
    // MAXIMUM / MINIMUM: an input quantized differently from the output is first mapped into the
    // output's quantization through a table (requantization is monotone, so it commutes with
    // max and min: the reference's float compare-then-requantize gives the same bytes).
    bool requantA = false, requantB = false;
};
// The scratchpad of a binary operation: six tile buffers (two per input, two outputs) of this
// many bytes, then two 256-byte tables.
inline constexpr uint32_t kBinaryTableBytes = 512;
inline uint32_t binaryBufferBytes(const CompileTarget& t) {
    return (t.scratchpadBytes - kBinaryTableBytes) / 6 / 64 * 64;
}

// AVERAGE_POOL_2D / MAX_POOL_2D: output rows tiled like a convolution, channels tiled too.
struct PoolPlan {
    uint32_t input = 0, output = 0;
    uint32_t batch = 0, inH = 0, inW = 0, channels = 0, kh = 0, kw = 0, outH = 0, outW = 0;
    uint32_t strideX = 1, strideY = 1, padLeft = 0, padTop = 0;
    bool nchw = false, average = false;
    uint32_t rowTile = 0, channelTile = 0;
};

// After the pooling tile buffers: the byte clamp(0) that fills tiles with no input row.
inline constexpr uint32_t kPoolConstantBytes = 64;

// RESHAPE / SQUEEZE, CONCATENATION and the table-mapped unary operations (RELU, RELU1, RELU6,
// LOGISTIC, TANH, HARD_SWISH): part i is a [rows, partBytes[i]] box of operand parts[i], copied
// or mapped byte by byte through a 256-entry table (map[i]) into the output rows (outRowBytes
// wide) at column dstColumn[i].
inline constexpr uint32_t kMaxCopyParts = 16;
struct CopyPlan {
    uint32_t output = 0, rows = 0, outRowBytes = 0, partCount = 0;
    uint32_t parts[kMaxCopyParts] = {};
    uint32_t partBytes[kMaxCopyParts] = {};
    uint32_t dstColumn[kMaxCopyParts] = {};
    ByteMap map[kMaxCopyParts] = {};
    bool alias = false;  // set by the memory planner: the output names the input's bytes, no copy
};

// PAD / PAD_V2, as four dimensions (leading 1s): the output filled with `value`, then the input
// copied into the box at `before`.
struct PadPlan {
    uint32_t input = 0, output = 0;
    uint32_t in[4] = {1, 1, 1, 1}, out[4] = {1, 1, 1, 1}, before[4] = {};
    uint8_t value = 0;
};

struct OpPlan {
    uint32_t type = 0;
    ConvPlan conv;
    FcPlan fc;
    AddPlan add;
    PoolPlan pool;
    CopyPlan copy;
    PadPlan pad;
    isa::VecParams vec;  // requantization / add parameters and the fused activation clamp
    int32_t zpIn = 0, zpWeights = 0;
    // Element signedness, as the MAC/vector command flags want it (HAL 1.3: every operation
    // taken for TENSOR_QUANT8_ASYMM is also taken for TENSOR_QUANT8_ASYMM_SIGNED).
    bool signedIn = false, signedWeights = false, signedOut = false;
    // CONV_2D with a TENSOR_QUANT8_SYMM_PER_CHANNEL filter: one requantization multiplier per
    // output channel, computed from these scales when the command stream is emitted.
    const float* channelScales = nullptr;
    float inputScale = 0.0f, outputScale = 0.0f;
};

// The tilings a CONV_2D or FULLY_CONNECTED plan can run with, at most kMaxTilingCandidates, the
// planner's greedy choice first; 0 for other operations. All give bit-identical results; they
// differ only in cycles (the runtime's autotuner measures them, docs/firmware.md).
uint32_t tilingCandidates(const CompileTarget& target, const OpPlan& plan, MacTiling* out);
void applyTiling(OpPlan* plan, const MacTiling& tiling);

// The requantization multiplier of output channel `channel` of a per-channel CONV_2D.
bool channelMultiplier(const OpPlan& plan, uint32_t channel, QuantizedMultiplier* out);

FwStatus planOperation(const CompileTarget& target, const ModelDesc& model, uint32_t opIndex, OpPlan* plan);

uint64_t tensorElements(const OperandDesc& d);
// Pointer to a constant operand's value in DRAM, or nullptr if it does not lie in the host window.
const uint8_t* constantData(const CompileTarget& target, const OperandDesc& d);

}  // namespace npu::fw

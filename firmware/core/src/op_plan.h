#pragma once
// Parses one HAL operation into what the code generator needs, checking every NNAPI rule and
// every limit of this NPU on the way (operation_support). Internal to firmware/core.

#include <cstdint>

#include "compiler.h"
#include "data_ops.h"
#include "hwsim/isa/commands.h"
#include "quant.h"

namespace npu::fw {

namespace hal {
inline constexpr uint32_t kInt32 = 1, kBool = 6, kTensorInt32 = 4, kTensorQuant8Asymm = 5,
                          kTensorQuant8SymmPerChannel = 11, kTensorQuant8AsymmSigned = 14;
inline constexpr uint32_t kFloat32 = 0;  // FLOAT32 scalars: RESIZE_* scales
// QUANTIZE's input / DEQUANTIZE's output (FLOAT16: refused, with its reason).
inline constexpr uint32_t kTensorFloat32 = 3, kTensorFloat16 = 8;
inline constexpr uint32_t kTensorQuant8Symm = 13;  // DEQUANTIZE's input only (int8, zero point 0)
// The operand types some compiled operation accepts: Capabilities quotes these as fast and every
// other type as unsupported (FLT_MAX). Keep in step with the type checks of the planners.
// QUANTIZE's float32 input and DEQUANTIZE's float32 / TENSOR_QUANT8_SYMM input are left out:
// the NPU only converts them at a partition's edge, it computes nothing in those types.
inline constexpr uint32_t kClaimedOperandTypes[] = {
    kInt32,  kBool, kTensorInt32, kTensorQuant8Asymm, kTensorQuant8SymmPerChannel, kTensorQuant8AsymmSigned,
    kFloat32};
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
// Numbers of HAL OperationType (tests/unit/firmware/softmax_test.cpp checks them against the enum).
inline constexpr uint32_t kOpSoftmax = 25, kOpGroupedConv2d = 55, kOpTransposeConv2d = 91;
// The data-movement, resampling and reduction operations (data_ops.h); values of the HAL's
// OperationType, checked against it by tests/unit/firmware/data_ops_test.cpp.
inline constexpr uint32_t kOpDequantize = 6, kOpQuantize = 72;  // convert.cpp (checked by convert_test.cpp)
inline constexpr uint32_t kOpDepthToSpace = 5, kOpResizeBilinear = 23, kOpSpaceToDepth = 26, kOpMean = 31,
                          kOpStridedSlice = 35, kOpTranspose = 37, kOpPrelu = 71, kOpResizeNearest = 94;
// ADD, SUB, MUL, MAXIMUM, MINIMUM, PRELU: planned into an AddPlan (broadcasting), run by the vector unit.
constexpr bool isBinaryOp(uint32_t type) {
    return type == kOpAdd || type == kOpSub || type == kOpMul || type == kOpMaximum || type == kOpMinimum ||
           type == kOpPrelu;
}
// CONV_2D, DEPTHWISE_CONV_2D, GROUPED_CONV_2D or TRANSPOSE_CONV_2D: all planned into a ConvPlan.
constexpr bool isConvOp(uint32_t type) {
    return type == kOpConv2d || type == kOpDepthwiseConv2d || type == kOpGroupedConv2d ||
           type == kOpTransposeConv2d;
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
    // GROUPED_CONV_2D: `groups` independent convolutions, group g reading input channels
    // [g * cinGroup, +cinGroup) and writing output channels [g * coutGroup, +coutGroup); the
    // filter [cout][kh][kw][cinGroup] is CONV_2D's layout per group. 1 for CONV_2D.
    uint32_t groups = 1;
    // TRANSPOSE_CONV_2D, run as the equivalent CONV_2D: the input upsampled by the strides
    // (zero points between the real pixels: inH x inW here is the upsampled size, `realInH` x
    // `realInW` the tensor's), stride 1, the kernel flipped in both spatial dimensions, padding
    // kernel - 1 - the transpose's padding.
    bool transposed = false;
    uint32_t upStrideX = 1, upStrideY = 1, realInH = 0, realInW = 0;
    uint32_t cinGroup() const { return depthwise ? cin : cin / groups; }
    uint32_t coutGroup() const { return depthwise ? cout : cout / groups; }
    // Filter taps per output channel (the MAC's K).
    uint64_t taps() const { return uint64_t{kh} * kw * (depthwise ? 1 : cinGroup()); }
    MacTiling tiling;
};

// The weight buffers of a CONV_2D / FULLY_CONNECTED (or one GROUPED_CONV_2D group) tiled
// `coutTile` of `cout` output channels with `k` weights each: one buffer holds a tile's weights
// and int32 biases, 64-byte aligned. With more than one channel tile there are two buffers (the
// next tile's weights load while this one computes, compiler.cpp emitMacOp) when both fit in
// half the scratchpad; otherwise one, and the channel tiles are separated by fences.
inline uint64_t weightTileBytes(uint64_t coutTile, uint64_t k) {
    return (coutTile * (k + 4) + 63) / 64 * 64;
}
inline bool doubleBufferedWeights(const CompileTarget& t, uint64_t coutTile, uint64_t k, uint64_t cout) {
    return coutTile < cout && 2 * weightTileBytes(coutTile, k) <= t.scratchpadBytes / 2;
}
inline uint64_t weightBufferBytes(const CompileTarget& t, uint64_t coutTile, uint64_t k, uint64_t cout) {
    return (doubleBufferedWeights(t, coutTile, k, cout) ? 2 : 1) * weightTileBytes(coutTile, k);
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

// SOFTMAX over axis a of a tensor viewed as [outer, len, inner] (len: the axis): `slabTile` slabs
// of len x inner bytes per double-buffered tile; a SOFTMAX command per slab (`inner` rows whose
// elements lie `inner` bytes apart) or, when inner == 1, one per tile (a row per slab).
struct SoftmaxPlan {
    uint32_t input = 0, output = 0;
    uint32_t outer = 0, len = 0, inner = 0, slabTile = 0;
    int32_t multiplier = 0, leftShift = 0, diffMin = 0;
};
// The SOFTMAX scratchpad: two input and two output tile buffers of this many bytes.
inline uint32_t softmaxBufferBytes(const CompileTarget& t) {
    return t.scratchpadBytes / 4 / 64 * 64;
}

struct OpPlan {
    uint32_t type = 0;
    ConvPlan conv;
    FcPlan fc;
    AddPlan add;
    PoolPlan pool;
    CopyPlan copy;
    PadPlan pad;
    SoftmaxPlan softmax;
    GatherPlan gather;
    ResizePlan resize;
    MeanPlan mean;
    ConvertPlan convert;
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
// Bytes of a data tensor: 4 per element for TENSOR_FLOAT32 (QUANTIZE / DEQUANTIZE's float side),
// else 1 (8-bit data).
uint64_t tensorBytes(const OperandDesc& d);
// Pointer to a constant operand's value: the one that came inside the message (OperandDesc::value),
// else the one in DRAM, or nullptr if that does not lie in the host window (or a mapped pool).
const uint8_t* constantData(const CompileTarget& target, const OperandDesc& d);

}  // namespace npu::fw

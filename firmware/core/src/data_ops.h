#pragma once
// Plans and emitters of the data-movement and resampling operations (docs/firmware.md):
// TRANSPOSE, SPACE_TO_DEPTH, DEPTH_TO_SPACE and STRIDED_SLICE as strided DMA (a GatherPlan),
// RESIZE_NEAREST_NEIGHBOR / RESIZE_BILINEAR (RESIZE tiles) and MEAN (MEAN tiles). Internal to
// firmware/core; the planners are in data_movement.cpp, resize.cpp and mean.cpp.

#include <cstdint>

#include "npu/fw/runtime.h"

namespace npu::fw {

// A copy whose output, read in order, walks the input with per-dimension strides: output
// element (i0, ..., i{rank-1}) is input element base + Σ ik * stride[k] (a stride is negative
// where STRIDED_SLICE walks backwards). Collapsed: no dimension of size 1, no two neighbours the
// input walks as one.
inline constexpr uint32_t kMaxGatherDims = 6;
struct GatherPlan {
    uint32_t input = 0, output = 0, rank = 0;
    uint32_t dims[kMaxGatherDims] = {};
    int64_t stride[kMaxGatherDims] = {};
    uint64_t base = 0;
};
// At most this many DMA tiles per gather (each a load and a store): a gather walking its
// innermost dimension backwards moves one element per tile.
inline constexpr uint64_t kMaxGatherTiles = uint64_t{1} << 16;

// RESIZE_NEAREST_NEIGHBOR / RESIZE_BILINEAR: output rows tiled, channels tiled.
struct ResizePlan {
    uint32_t input = 0, output = 0;
    uint32_t batch = 0, inH = 0, inW = 0, channels = 0, outH = 0, outW = 0;
    bool nchw = false, bilinear = false, alignCorners = false, halfPixel = false;
    uint32_t rowTile = 0, channelTile = 0;
};

// MEAN: the input as up to two kept and two reduced strided dimensions; output element
// (o1, o2) is the mean over (r1, r2). `tiled`: the input is one kept-reduced-kept box
// ([outer][count1][inner], count2 = 1) tiled over outer and inner; else it is loaded whole.
struct MeanPlan {
    uint32_t input = 0, output = 0;
    uint32_t outer = 1, inner = 1, count1 = 1, count2 = 1;
    uint32_t outerStride = 0, innerStride = 0, stride1 = 0, stride2 = 0;
    uint64_t inputBytes = 0;
    bool tiled = false;
    uint32_t outerTile = 1, innerTile = 1;
    float scaleIn = 0, scaleOut = 0;
    int32_t zpIn = 0, zpOut = 0;
};

// QUANTIZE (float32 -> 8-bit) or DEQUANTIZE (8-bit -> float32) at a partition edge: `count`
// elements in contiguous tiles of `tile`, CONVERT commands (ISA 1.3). The float side is a model
// input (QUANTIZE) or output (DEQUANTIZE), 4 bytes per element.
struct ConvertPlan {
    uint32_t input = 0, output = 0;
    uint32_t count = 0, tile = 0;
    bool toFloat = false;
    float scale = 0;
    int32_t zp = 0;
};

struct Checker;
struct OpPlan;
struct CompileTarget;
struct TensorRef;
class BlobWriter;

FwStatus planTranspose(const Checker& c, OpPlan* plan);
FwStatus planSpaceDepth(const Checker& c, OpPlan* plan);  // SPACE_TO_DEPTH, DEPTH_TO_SPACE
FwStatus planStridedSlice(const Checker& c, OpPlan* plan);
FwStatus planResize(const Checker& c, OpPlan* plan);
FwStatus planMean(const Checker& c, OpPlan* plan);
FwStatus planConvert(const Checker& c, OpPlan* plan);  // QUANTIZE, DEQUANTIZE

void emitGather(BlobWriter& w, const CompileTarget& target, const GatherPlan& p, const TensorRef& in,
                const TensorRef& out);
void emitResize(BlobWriter& w, const CompileTarget& target, const OpPlan& plan, const TensorRef& in,
                const TensorRef& out);
void emitMean(BlobWriter& w, const CompileTarget& target, const OpPlan& plan, const TensorRef& in,
              const TensorRef& out);
void emitConvert(BlobWriter& w, const CompileTarget& target, const OpPlan& plan, const TensorRef& in,
                 const TensorRef& out);

}  // namespace npu::fw
